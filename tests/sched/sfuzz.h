/*
 * Stateful fuzz harness of the policy and its dispatch: a byte string
 * drives clients of a few uids through the frame decoder into the same
 * sched_* calls the daemon makes, with random deaths, clock jumps, admin
 * changes and reloads, and checks after every step that the policy's
 * books add up and its promises hold:
 *   - counts and footprint sums of every GPU match its lists;
 *   - in mode on, one holder at most without a drop pending, and (with
 *     skip_unresponsive) none past its grace period once time is handled;
 *   - in mode auto, the holders without a drop pending fit together in
 *     the smallest view of the capacity among them;
 *   - per-uid counts match, and stay within the limits (uid 0 exempt);
 *   - nothing in the outbox is addressed to a client that has gone;
 *   - a lock word is free only while nobody holds or waits, and nobody
 *     is granted while a client that took a word is not yet adopted;
 *   - classes and caps (sfuzz_check_class.h): a client whose class is
 *     not allowed is never interactive, a capped user is never granted at
 *     its cap, budgets and caps in status stay in range, and every drop
 *     of a class, a budget or a cap has its reason.
 * The admin's policy per user and group, the node's keys of classes and
 * caps, and long jumps of the clock come from sfuzz_class.h.
 * Used by fuzz_sched.c (libFuzzer) and test_sfuzz.c (random, under ctest).
 */
#ifndef VSHARE_SFUZZ_H
#define VSHARE_SFUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "sched_int.h"

#define SF_SLOTS 12
#define SF_GPUS  5
#define SF_UIDS  4
#define SF_GROUPS 2

/* An entry of the admin's policy (policy_users, policy_groups): its
 * "class" (0 unset, 1 batch, 2 interactive, as CONF_CLASS_*), its
 * interactive_budget_pct and its max_share_pct (0: unset). */
struct sf_ent {
	uint32_t klass, budget, cap;
};

/* The policy the harness plays the daemon's configuration with: an entry
 * per user of sf_uids and per group (its members a mask over sf_uids),
 * and the node's "interactive" key. */
struct sf_pol {
	struct sf_ent user[SF_UIDS], grp[SF_GROUPS];
	uint8_t members[SF_GROUPS];
	int node_interactive;
};

static const uint32_t sf_uids[SF_UIDS] = { 0, 1000, 1001, 1002 };

struct sf {
	const uint8_t *p;
	size_t n;
	uint64_t now;
	int ticked;             /* the last step handled time */
	int reloaded;           /* limits may have been lowered */
	uint64_t last_open;     /* an opening's number seen last */
	uint64_t next_token;
	struct sched *s;
	struct sched_client *c[SF_SLOTS];
	struct vs_frx rx[SF_SLOTS];
	struct sf_pol pol;
	size_t out0;            /* the outbox's entries of this step start here */
	int repol;              /* this step set the policy of clients */
	uint32_t coheld_max;    /* most holders of one uid on one GPU seen */
	int mixed;              /* this step took several frames of a
				 * client, a frame and its close, or
				 * several releases */
};

#define SF_CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "sfuzz: invariant broken at %s:%d: %s\n", \
		__FILE__, __LINE__, #cond); abort(); } } while (0)

static uint64_t sf_clock(void *arg)
{
	return ((const struct sf *)arg)->now;
}

static uint8_t sf_byte(struct sf *f)
{
	if (f->n == 0)
		return 0;
	f->n--;
	return *f->p++;
}

static void sf_uuid(struct sf *f, uint8_t u[VS_UUID_LEN])
{
	memset(u, 0, VS_UUID_LEN);
	u[0] = (uint8_t)(1 + sf_byte(f) % SF_GPUS);
}

/* A GiB count, or a small byte count, or a huge claim. */
static uint64_t sf_size(struct sf *f)
{
	uint8_t b = sf_byte(f);

	if (b < 200)
		return (uint64_t)(b % 20) << 30;
	return b < 240 ? b : (uint64_t)b << 50;
}

/* The driver knows GPU 2 only (NVML on a node with one GPU). */
static uint64_t sf_driver(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	(void)arg;
	return uuid[0] == 2 && uuid[1] == 0 ? 8ull << 30 : 0;
}

static void sf_cfg(struct sf *f, struct sched_cfg *cfg,
		   struct sched_gpu_cfg *gc)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->tq_ms = 1000u * (1 + sf_byte(f) % 5);
	cfg->mode = sf_byte(f) % 3;
	cfg->capacity = sf_byte(f) % 2 ? sf_size(f) : 0;
	cfg->grace_ms = 100u * (1 + sf_byte(f) % 10);
	cfg->skip_unresponsive = sf_byte(f) % 4 != 0;
	cfg->uid_gpus = sf_byte(f) % 4;
	cfg->uid_requests = sf_byte(f) % 5;
	cfg->total_fn = sf_byte(f) % 2 ? sf_driver : NULL;
	/* The fair share from bytes already read, so that the inputs kept
	 * in sfuzz_inputs keep their meaning. */
	cfg->policy = (cfg->grace_ms / 100u) % 2 ? SCHED_POLICY_FAIR :
		      SCHED_POLICY_FCFS;
	cfg->min_slice_ms = 100u * (1 + cfg->uid_requests);
	cfg->halflife_ms = cfg->tq_ms * 2;
	cfg->preempt_pct = 50;
	cfg->preempt_budget_pct = 10;
	/* Classes and caps, from bytes already read too; sfuzz_class.h
	 * varies them further. */
	cfg->budget_pct = cfg->tq_ms / 1000u % 2 ? 20 : 100;
	cfg->cap_window_ms = 1000u * (1 + 3 * cfg->uid_gpus);
	cfg->total_pct = cfg->uid_requests % 2 ? 30 : 0;
	memset(gc, 0, sizeof(*gc));
	gc->uuid[0] = 1;
	gc->set = sf_byte(f) % 8;
	gc->tq_ms = 2000;
	gc->mode = sf_byte(f) % 3;
	gc->capacity = sf_size(f);
	/* The class's bound of its own where the entry sets a mode. */
	gc->total_pct = 15;
	if (gc->set & SCHED_GCFG_MODE)
		gc->set |= SCHED_GCFG_TOTAL;
	cfg->gpus = gc;
	cfg->n_gpus = 1;
}

/* The daemon's on_client_msg, without the socket. */
static void sf_dispatch(struct sf *f, int i, const struct vs_hdr *h,
			const void *pl)
{
	struct sched *s = f->s;
	const struct vs_footprint *fp = pl;
	const struct vs_attach *at = pl;

	if (h->type == VS_MSG_HELLO || f->c[i] == NULL)
		return;
	switch (h->type) {
	case VS_MSG_ATTACH:
		sched_attach(s, f->c[i], at->uuid, at->total_mem);
		break;
	case VS_MSG_FOOTPRINT:
		sched_footprint(s, f->c[i], fp->uuid, fp->managed, fp->pinned);
		break;
	case VS_MSG_REQUEST:
		sched_request(s, f->c[i], ((const struct vs_gpu_ref *)pl)->uuid);
		break;
	case VS_MSG_RELEASED:
		sched_released(s, f->c[i], ((const struct vs_gpu_ref *)pl)->uuid);
		break;
	case VS_MSG_TOOK:
		sched_took(s, f->c[i], ((const struct vs_gpu_ref *)pl)->uuid);
		break;
	default:
		break;
	}
}

/* A well-formed frame of a client type, or random bytes, through the
 * decoder of slot i. */
static void sf_frame(struct sf *f, int i)
{
	unsigned char buf[sizeof(struct vs_hdr) + 64];
	struct vs_hdr h;
	const unsigned char *p = buf;
	size_t n, len;
	uint8_t kind = sf_byte(f);
	static const uint16_t types[5] = { VS_MSG_ATTACH, VS_MSG_FOOTPRINT,
					   VS_MSG_REQUEST, VS_MSG_RELEASED,
					   VS_MSG_TOOK };

	memset(buf, 0, sizeof(buf));
	if (kind < 224) {
		/* TOOK from kinds the older inputs never used. */
		uint16_t t = types[kind >= 200 ? 4 : kind % 4];
		const struct vs_msg_info *mi = vs_msg_lookup(t);
		uint64_t a = sf_size(f), b = sf_size(f);

		len = mi->size;
		vs_hdr_init(&h, t, (uint32_t)len);
		memcpy(buf, &h, sizeof(h));
		sf_uuid(f, buf + sizeof(h));
		memcpy(buf + sizeof(h) + VS_UUID_LEN, &a, sizeof(a));
		if (t == VS_MSG_FOOTPRINT)
			memcpy(buf + sizeof(h) + VS_UUID_LEN + 8, &b, sizeof(b));
		n = sizeof(h) + len;
	} else {
		n = 1 + sf_byte(f) % sizeof(buf);
		for (size_t k = 0; k < n; k++)
			buf[k] = sf_byte(f);
	}
	for (int frames = 0;; frames++) {
		enum vs_frx_result r = vs_frx_push(&f->rx[i], &p, &n);

		if (frames > 0 && r != VS_FRX_MORE)
			f->mixed = 1;
		if (r == VS_FRX_FRAME) {
			sf_dispatch(f, i, &f->rx[i].in.hdr, vs_frx_payload(&f->rx[i]));
			continue;
		}
		if (r != VS_FRX_MORE) { /* the daemon closes this peer */
			if (f->c[i] != NULL)
				sched_client_del(f->s, f->c[i]);
			f->c[i] = NULL;
			vs_frx_init(&f->rx[i], 0, VS_FRX_MAX_REQ);
		}
		break;
	}
}

/* What clients do to the lock page: the client of slot i takes an open
 * GPU it is attached to, as the shim does (and, most of the time, says
 * so with TOOK, or sends a TOOK with no take), or writes anything into
 * any word, as a hostile one could: junk, an opening's number (the
 * current one, or the last one seen) or a client's token. */
static void sf_lock(struct sf *f, int i, uint8_t b)
{
	struct vs_lock_page *pg = f->s->lock;
	uint8_t u[VS_UUID_LEN];
	const struct sched_gpu *g;
	uint64_t n, v, *w;

	sf_uuid(f, u);
	g = sched_gpu_find(f->s, u);
	if (pg == NULL || g == NULL || g->lslot == 0)
		return;
	w = &f->s->words->w[g->lslot - 1].word;
	n = __atomic_load_n(&pg->slot[g->lslot - 1].open, __ATOMIC_SEQ_CST);
	if (n != 0)
		f->last_open = n;
	if (b & 0x40) {
		switch (b & 0x30) {
		case 0x00: v = sf_byte(f) % 3; break;
		case 0x10: v = f->last_open; break;
		case 0x20: v = VS_LOCK_TOKEN_BIT | sf_byte(f); break;
		default: {
			struct sched_client *o = f->c[sf_byte(f) % SF_SLOTS];

			/* Its mark for the last opening seen. */
			v = o != NULL ? vs_lock_mark(sched_client_token(o),
						     f->last_open) : 0;
		}
		}
		__atomic_store_n(w, v, __ATOMIC_SEQ_CST);
		return;
	}
	if (f->c[i] == NULL || sched_member_find(f->c[i], u) == NULL)
		return;
	if ((b & 0x30) == 0x30) {
		sched_took(f->s, f->c[i], u);
		return;
	}
	v = n;
	if (!(n & VS_LOCK_OPEN_BIT) ||
	    !__atomic_compare_exchange_n(w, &v,
					 vs_lock_mark(sched_client_token(f->c[i]), n), 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	if (b & 0x20)
		sched_took(f->s, f->c[i], u);
}

/* Time passes to `to` as the daemon's timer sees it: armed after each
 * call at the next deadline, it fires at that time and ticks, whatever
 * that deadline is (a fair recheck moves ahead with the clock, so it is
 * due only when the timer armed for it fires). A deadline due again at
 * the time it was handled is a timer that spins (a few rounds are fine:
 * one tick's drops and grants may bring the next). Past SF_TICKS_MAX
 * ticks in one jump the rest is handled at `to` at once. */
#define SF_TICKS_MAX 4096
static void sf_check(struct sf *f);

/* One tick, checked as a step of its own once nothing more is due at
 * its time (its outbox entries kept for obeying clients). */
static void sf_tick_checked(struct sf *f)
{
	size_t out0 = f->out0, first = sched_out_count(f->s);
	int ticked = f->ticked;

	sched_tick(f->s);
	if (sched_next_deadline(f->s) <= f->now)
		return;
	f->out0 = first;
	f->ticked = 1;
	sf_check(f);
	f->out0 = out0;
	f->ticked = ticked;
}

static void sf_ticks(struct sf *f, uint64_t to)
{
	uint64_t d, last = f->now;
	int same = 0;

	for (int n = 0; (d = sched_next_deadline(f->s)) <= to; n++) {
		if (n >= SF_TICKS_MAX)
			d = to;
		if (d > f->now)
			f->now = d;
		same = f->now == last ? same + 1 : 0;
		SF_CHECK(same < 64);
		last = f->now;
		sf_tick_checked(f);
	}
	f->now = to;
}

/* Time passes. */
static void sf_time(struct sf *f)
{
	uint64_t dt = sf_byte(f) < 128 ? sf_byte(f) : 100u * sf_byte(f);

	sf_ticks(f, f->now + dt);
}

/* Clients that obey: every holder told to drop releases. */
static void sf_obey(struct sf *f, uint8_t mask)
{
	size_t n = sched_out_count(f->s);
	int released = 0;

	/* Releasing adds to the outbox: only what was there before. */
	for (size_t k = 0; k < n; k++) {
		struct sched_out o = *sched_out_at(f->s, k);

		for (int i = 0; i < SF_SLOTS; i++)
			if (f->c[i] && f->c[i]->id == o.client_id &&
			    (mask >> (i % 8) & 1) && o.kind == SCHED_OUT_MSG &&
			    o.type == VS_MSG_DROP) {
				sched_released(f->s, f->c[i], o.uuid);
				released++;
			}
	}
	/* Several releases, one after the other as the daemon reads them:
	 * a later one may change the classes after a grant that an earlier
	 * one caused (a holder demoted for its budget is interactive in
	 * force again once idle). */
	if (released > 1)
		f->mixed = 1;
}

/* The fair share's admin requests, and a holder's swap report. */
static void sf_fair(struct sf *f, uint8_t b, const uint8_t u[VS_UUID_LEN])
{
	uint8_t v = sf_byte(f);
	int i = v % SF_SLOTS;

	switch ((b >> 4) % 4) {
	case 0:
		sched_set_slice(f->s, b & 4 ? VS_TARGET_ALL : 0, 0, u,
				v % 2 ? 5u * v : 100u * v);
		break;
	case 1:
		sched_set_policy(f->s, v % 3);
		break;
	case 2:
		if (f->c[i] != NULL)
			sched_client_set_weight(f->s, f->c[i], v % 5);
		break;
	default:
		if (f->c[i] != NULL)
			sched_swapped(f->s, f->c[i], u, 1000ull * v * v,
				      1ull << (v % 40));
		break;
	}
}

static void sf_klass(struct sf *f, uint8_t b);

static void sf_admin(struct sf *f)
{
	uint8_t b = sf_byte(f), u[VS_UUID_LEN];

	sf_uuid(f, u);
	if ((b & 0x48) == 0x48) {
		sf_klass(f, b);
		return;
	}
	if (b & 8) {
		sf_fair(f, b, u);
		return;
	}
	if ((b & 0x30) == 0x30) {
		sf_lock(f, sf_byte(f) % SF_SLOTS, b);
		return;
	}
	if (b % 2)
		sched_set_mode(f->s, b & 4 ? VS_TARGET_ALL : 0, 0, u,
			       sf_byte(f) % 4);
	else
		sched_set_tq(f->s, b & 4 ? VS_TARGET_ALL : 0, 0, u,
			     sf_byte(f) % 8);
}

static void sf_policy_all(struct sf *f);
static void sf_hello(struct sf *f, int i, uint8_t b);

static void sf_reload(struct sf *f)
{
	struct sched_cfg old = f->s->cfg, cfg;
	struct sched_gpu_cfg ogc[1], gc[1];

	if (old.n_gpus == 1) {
		ogc[0] = old.gpus[0];
		old.gpus = ogc;
	}
	sf_cfg(f, &cfg, gc);
	SF_CHECK(sched_reconfigure(f->s, &old, &cfg) == 0);
	f->reloaded = 1;
	sf_policy_all(f);
}

#include "sfuzz_class.h"
#include "sfuzz_check.h"

/* One run over a whole input. */
static void sf_run(const uint8_t *data, size_t size)
{
	static struct vs_lock_page page;
	static struct vs_lock_words words;
	struct sched_gpu_cfg gc[1];
	struct sched_cfg cfg;
	struct sf f;

	memset(&f, 0, sizeof(f));
	f.p = data;
	f.n = size;
	f.now = 1;
	sf_cfg(&f, &cfg, gc);
	f.s = sched_new(&cfg, sf_clock, &f);
	SF_CHECK(f.s != NULL);
	memset(&page, 0, sizeof(page));
	memset(&words, 0, sizeof(words));
	sched_lock_set(f.s, &page, &words);
	for (int i = 0; i < SF_SLOTS; i++)
		vs_frx_init(&f.rx[i], 0, VS_FRX_MAX_REQ);
	while (f.n > 0) {
		uint8_t op = sf_byte(&f);
		int i = (op >> 4) % SF_SLOTS;

		/* The daemon sends the outbox after each call; obeying
		 * clients (op 6) act on the last one. */
		if (op % 8 != 6)
			sched_out_clear(f.s);
		f.out0 = sched_out_count(f.s);
		f.ticked = op % 8 == 5;
		f.repol = 0;
		f.mixed = 0;
		switch (op % 8) {
		case 0:
			if (f.c[i] == NULL)
				sf_hello(&f, i, sf_byte(&f));
			break;
		case 1:
			if (f.c[i] != NULL)
				sched_client_del(f.s, f.c[i]);
			f.c[i] = NULL;
			vs_frx_init(&f.rx[i], 0, VS_FRX_MAX_REQ);
			break;
		case 2: case 3: case 4:
			sf_frame(&f, i);
			break;
		case 5:
			sf_time(&f);
			break;
		case 6:
			sf_obey(&f, sf_byte(&f));
			break;
		default:
			if (op & 0x80)
				sf_reload(&f);
			else
				sf_admin(&f);
			break;
		}
		sf_check(&f);
	}
	sched_free(f.s);
}

#endif
