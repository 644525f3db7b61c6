/*
 * Policy transitions. Every entry point changes state, then calls admit()
 * on the GPUs it touched: admission is the one place that grants, the
 * one place that tells holders someone is waiting, and with the tick the
 * one place that preempts for fair share (sched_fair.c keeps the
 * accounts and the order). The clock, the outbox
 * and the lookups live in sched_view.c, below this file: transitions use
 * them, and nothing there calls back up.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_int.h"

struct sched *sched_new(const struct sched_cfg *cfg, sched_clock_fn clock,
			void *clock_arg)
{
	struct sched *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->cfg = *cfg;
	if (cfg->n_gpus > 0) {
		s->gcfg = calloc(cfg->n_gpus, sizeof(*s->gcfg));
		if (s->gcfg == NULL) {
			free(s);
			return NULL;
		}
		memcpy(s->gcfg, cfg->gpus, cfg->n_gpus * sizeof(*s->gcfg));
	}
	s->cfg.gpus = s->gcfg;
	s->clock = clock;
	s->clock_arg = clock_arg;
	s->next_id = 1;
	dl_init(&s->clients);
	return s;
}

/* ---- granting and dropping ---- */

static void wait_enter(struct sched_member *m)
{
	dl_append(&m->g->queue, &m->q_link);
	m->g->n_waiting++;
	m->c->u->n_waiting++;
	m->state = SCHED_ST_WAITING;
}

static void wait_leave(struct sched_member *m)
{
	dl_remove(&m->q_link);
	m->g->n_waiting--;
	m->c->u->n_waiting--;
	m->state = SCHED_ST_IDLE;
	m->pos = 0;
}

static void emit_grant(struct sched *s, struct sched_member *m)
{
	struct sched_gpu *g = m->g;
	/* In auto, a client larger than its view of the capacity runs
	 * alone: nobody, not even a client of no footprint, is admitted
	 * beside it. */
	uint32_t kind = g->mode == VS_MODE_ON ||
			(g->mode == VS_MODE_AUTO && m->fp > m->cap) ?
			VS_GRANT_EXCLUSIVE : VS_GRANT_SHARED;
	/* Oversubscribed: the working sets of everyone attached do not fit,
	 * so pages of the new holder may have been evicted: prefetch them,
	 * and report that one swap-in (sched_swapped). */
	uint32_t flags = g->total_fp > m->cap ? VS_GRANTF_OVERSUB : 0;
	struct sched_out *o;

	g->st.grants[kind]++;
	m->swap_due = flags != 0;
	/* A client that took the GPU through the lock page runs already:
	 * the grant is only logged. */
	if (m->took)
		g->st.took++;
	o = sched_out_push(s, m->took ? SCHED_OUT_TOOK : SCHED_OUT_MSG, m);
	if (o == NULL)
		return;
	o->type = VS_MSG_GRANT;
	memcpy(o->u.grant.uuid, g->uuid, VS_UUID_LEN);
	o->u.grant.kind = kind;
	o->u.grant.flags = flags;
	o->u.grant.tq_ms = g->tq_ms;
}

/* `why` indexes the drop counters: a VS_DROP_* reason, or SCHED_DROP_FAIR
 * (on the wire a quantum drop). Counted once it is queued to be sent. */
static struct sched_out *emit_drop(struct sched *s, struct sched_member *m,
				   uint32_t why)
{
	struct sched_out *o = sched_out_push(s, SCHED_OUT_MSG, m);

	if (o == NULL)
		return NULL;
	m->g->st.drops[why]++;
	o->type = VS_MSG_DROP;
	memcpy(o->u.drop.uuid, m->g->uuid, VS_UUID_LEN);
	o->u.drop.reason = why == SCHED_DROP_FAIR ? VS_DROP_QUANTUM : why;
	o->fair = why == SCHED_DROP_FAIR; /* the log tells it apart */
	return o;
}

static void grant(struct sched *s, struct sched_member *m, uint64_t now)
{
	struct sched_gpu *g = m->g;

	wait_leave(m);
	dl_append(&g->holders, &m->h_link);
	g->n_holders++;
	g->held_fp += m->fp;
	sched_cap_hold(g, m);
	m->state = SCHED_ST_HOLDING;
	sched_fair_granted(s, g, m, now);
	sched_stat_granted(g, m, now);
	m->since = now;
	m->q_start = now;
	m->charged_at = now;
	m->preempted = 0;
	m->pos = 0;
	m->idle_sent = 0;
	m->hard = 0;
	m->hung_reported = 0;
	m->revoked = 0;
	emit_grant(s, m);
}

void sched_unhold(struct sched *s, struct sched_member *m)
{
	struct sched_gpu *g = m->g;

	sched_fair_charge_one(s, m, sched_now(s));
	sched_stat_unheld(g, m, sched_now(s));
	/* A TOOK after the grant ended (revoked, say) claims nothing. */
	m->took_untold = 0;
	if (m->preempted) {
		m->out = 1;
		m->out_at = sched_now(s);
		m->out_hard = g->hard_seq;
	}
	dl_remove(&m->h_link);
	g->n_holders--;
	g->held_fp -= m->fp;
	sched_cap_unhold(g, m);
	if (m->hard)
		g->n_hard--;
	m->hard = 0;
	m->state = SCHED_ST_IDLE;
}

/* A drop that must be obeyed within the grace period. */
struct sched_out *sched_hard_drop(struct sched *s, struct sched_member *m,
				  uint32_t why, uint64_t now)
{
	if (m->hard)
		return NULL;
	m->hard = why == SCHED_DROP_FAIR ? VS_DROP_QUANTUM : why;
	m->hard_at = now;
	m->g->hard_seq++;
	m->hung_reported = 0;
	m->g->n_hard++;
	m->preempted = 0;
	return emit_drop(s, m, why);
}

/* ---- the lock page ---- */

/* m took its GPU through the lock page: it holds it now, as if granted,
 * with no GRANT sent. A take of an opening finds nobody holding (every
 * decision settles the word first, and a GPU is opened only while
 * nobody holds or waits); should anyone hold all the same, m runs
 * anyway, so it counts as a holder too, and is told to give the GPU back
 * at once. Nobody waits while nobody holds (admit grants the first
 * waiter then), so nobody is passed over either. */
static void adopt(struct sched *s, struct sched_member *m, uint64_t now)
{
	int alone = m->g->n_holders == 0;

	if (m->state == SCHED_ST_HOLDING)
		return;
	if (m->state == SCHED_ST_IDLE) {
		m->revoked = 0;
		m->since = now;
		m->seq = s->next_seq++;
		m->blk = m->g->blocked;
		wait_enter(m);
	}
	m->took = 1;
	grant(s, m, now);
	m->took = 0;
	if (!alone)
		sched_hard_drop(s, m, VS_DROP_QUANTUM, now);
}

/* The member whose mark for this opening v is (proto.h, vs_lock_mark):
 * a mark copied from an earlier opening's word matches nobody. */
static struct sched_member *member_by_mark(struct sched_gpu *g, uint64_t v,
					   uint64_t opening)
{
	if (!(v & VS_LOCK_TOKEN_BIT))
		return NULL;
	for (struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		struct sched_member *m = dl_entry(it, struct sched_member, m_link);

		if (m->c->token != 0 && vs_lock_mark(m->c->token, opening) == v)
			return m;
	}
	return NULL;
}

/* Before any decision about g: close its slot and word, and adopt the
 * client that took the opening, if one did. Only a token found here
 * adopts (a TOOK alone never does), and only while the slot was open: a
 * value in a closed word was written behind the scheduler's back and
 * took nothing, since the slot said closed. */
static void settle(struct sched *s, struct sched_gpu *g)
{
	uint64_t opening, v = sched_lock_close(s, g, &opening);
	struct sched_member *m;

	if (opening == 0) {
		if (v != VS_LOCK_CLOSED)
			g->st.lock_tampered++;
		return;
	}
	if (v == opening)
		return;
	m = member_by_mark(g, v, opening);
	/* Only an idle member takes: the shim takes only while it has no
	 * REQUEST out, so a waiter's mark was written by someone else. */
	if (m == NULL || m->state != SCHED_ST_IDLE) {
		g->st.lock_resets++;
		return;
	}
	adopt(s, m, sched_now(s));
	m->took_untold = 1;
}

/* After a decision about g: open its word when whoever asks next would
 * be granted at once with nothing to swap in (nobody holds or waits, and
 * everyone's memory fits every member's view of the capacity). */
static void publish(struct sched *s, struct sched_gpu *g)
{
	if (s->lock == NULL || g->n_holders > 0 || g->n_waiting > 0 ||
	    g->n_members == 0)
		return;
	for (struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		const struct sched_member *m =
			dl_entry(it, struct sched_member, m_link);

		if (m->cap != 0 && g->total_fp > m->cap)
			return;
	}
	sched_lock_open(s, g);
}

/* May waiter m start now, beside the current holders? */
static int fits(const struct sched_gpu *g, const struct sched_member *m)
{
	if (g->n_holders == 0)
		return 1;
	switch (g->mode) {
	case VS_MODE_OFF:
		return 1;
	case VS_MODE_ON:
		return 0;
	default:
		return g->held_fp + m->fp <= sched_cap_group(g, m);
	}
}

/* Someone waits: holders learn it now (release when idle), and their
 * quantum windows, which renew freely while nobody waits, are brought up
 * to the window that contains `now`. */
static void update_contention(struct sched *s, struct sched_gpu *g,
			      uint64_t now)
{
	if (g->n_waiting == 0 || g->mode == VS_MODE_OFF) {
		g->contended = 0;
		return;
	}
	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);

		if (!g->contended && h->q_start + g->tq_ms <= now)
			h->q_start += (now - h->q_start) / g->tq_ms * g->tq_ms;
		if (!h->idle_sent && !h->hard) {
			h->idle_sent = 1;
			emit_drop(s, h, VS_DROP_IDLE);
		}
	}
	g->contended = 1;
}

/* Holders past their slice are asked to release now (on the wire a
 * quantum drop: release at once) when the first in line has much less
 * recent GPU time than they do. */
static void preempt(struct sched *s, struct sched_gpu *g, uint64_t now)
{
	const struct sched_member *w;
	uint64_t slice;

	if (g->policy != SCHED_POLICY_FAIR || g->mode == VS_MODE_OFF ||
	    dl_empty(&g->queue))
		return;
	w = dl_entry(g->queue.next, struct sched_member, q_link);
	slice = g->slice_ms;
	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);

		if (h->hard || now < h->since + slice ||
		    !sched_fair_much_less(s, g, w, h, now))
			continue;
		sched_hard_drop(s, h, SCHED_DROP_FAIR, now);
		h->preempted = 1;
	}
}

/* Grant the longest prefix of waiters, in the policy's order, that may
 * run now. */
static void admit(struct sched *s, struct sched_gpu *g)
{
	uint64_t now = sched_now(s);

	settle(s, g);
	sched_fair_charge(s, g, now);
	g->slice_ms = sched_fair_slice(s, g);
	sched_fair_order(s, g, now);
	while (!dl_empty(&g->queue)) {
		struct sched_member *m =
			dl_entry(g->queue.next, struct sched_member, q_link);

		if (!fits(g, m))
			break;
		grant(s, m, now);
	}
	if (!dl_empty(&g->queue))
		g->blocked++; /* the waiters left wait for holders */
	if (g->n_holders > 0 && g->n_waiting > 0)
		sched_fair_number(g); /* the granted ones left the queue */
	update_contention(s, g, now);
	preempt(s, g, now);
	publish(s, g);
}

/* Holders past the first that no longer fit (mode change, or a footprint
 * that grew) are told to drop, last granted first in line. */
static void enforce_fit(struct sched *s, struct sched_gpu *g, uint32_t reason)
{
	uint64_t now = sched_now(s), sum = 0, cap = 0;
	size_t i = 0;

	settle(s, g);
	if (g->mode == VS_MODE_OFF)
		return;
	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);

		sum += h->fp;
		cap = sched_cap_min(cap, h->cap);
		if (i++ > 0 && (g->mode == VS_MODE_ON || sum > cap))
			sched_hard_drop(s, h, reason, now);
	}
}

/* ---- clients ---- */

struct sched_client *sched_client_new(struct sched *s,
				      const struct sched_cred *cred,
				      const char *label, void *user)
{
	struct sched_client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->id = sched_id_next(s);
	c->u = c->id != 0 ? sched_uid_ref(s, cred->uid) : NULL;
	if (c->u == NULL) {
		free(c);
		return NULL;
	}
	c->cred = *cred;
	c->weight = c->u->weight ? c->u->weight : SCHED_WEIGHT_DEFAULT;
	c->slot = sched_stat_slot(s, cred->uid);
	if (label != NULL)
		strncpy(c->label, label, VS_LABEL_MAX);
	c->user = user;
	dl_append(&s->clients, &c->link);
	s->n_clients++;
	return c;
}

uint32_t sched_client_id(const struct sched_client *c)
{
	return c->id;
}

void sched_client_del(struct sched *s, struct sched_client *c)
{
	/* A take it had not told yet is adopted first, so that its time on
	 * the GPU counts like any grant's. */
	for (size_t i = 0; i < c->n_m; i++)
		settle(s, c->m[i]->g);
	sched_out_purge(s, c->id);
	for (size_t i = 0; i < c->n_m; i++) {
		struct sched_member *m = c->m[i];
		struct sched_gpu *g = m->g;

		if (m->state == SCHED_ST_HOLDING)
			sched_unhold(s, m);
		else if (m->state == SCHED_ST_WAITING)
			wait_leave(m);
		dl_remove(&m->m_link);
		g->n_members--;
		g->total_fp -= m->fp;
		sched_uid_gpu_del(g, c);
		if (m->claim != 0 && m->claim == g->total_mem)
			sched_cap_refresh(g); /* the reported total came from m */
		free(m);
		admit(s, g);
	}
	free(c->m);
	sched_uid_unref(s, c->u);
	dl_remove(&c->link);
	s->n_clients--;
	free(c);
}

static uint64_t capacity_of(uint64_t total_mem, uint64_t cap)
{
	if (cap == 0)
		return total_mem;
	if (total_mem == 0)
		return cap;
	return cap < total_mem ? cap : total_mem;
}

/* The record of a GPU that is not vouched for and that nobody is
 * attached to, to be reused; NULL when SCHED_MAX_GPUS such records are
 * not all made yet, or none is free (*full tells which). */
static struct sched_gpu *idle_unvouched(struct sched *s, int *full)
{
	struct sched_gpu *idle = NULL;
	size_t n = 0;

	for (size_t i = 0; i < s->n_gpus; i++) {
		if (s->gpus[i]->vouched)
			continue;
		n++;
		if (idle == NULL && s->gpus[i]->n_members == 0)
			idle = s->gpus[i];
	}
	*full = n >= SCHED_MAX_GPUS;
	return *full ? idle : NULL;
}

/* A zeroed GPU with its index. GPUs are kept after their last client
 * leaves (their index and settings stay). A GPU the configuration names
 * or NVML knows (vouched) always gets a record of its own; the others
 * share SCHED_MAX_GPUS records, and once those are made a new one takes
 * the record of one nobody is attached to, or is refused: peers
 * attaching made-up UUIDs can neither grow the table without bound nor
 * lock a real GPU out. */
static struct sched_gpu *gpu_slot(struct sched *s, int vouched)
{
	struct sched_gpu *g;
	int full = 0;

	g = vouched ? NULL : idle_unvouched(s, &full);
	if (g != NULL) {
		struct sched_gpu_uid *keep = g->uids;
		struct sched_usage *keep_u = g->usage;
		size_t cap = g->cap_uids, cap_u = g->cap_usage;
		uint32_t index = g->index, lslot = g->lslot;

		/* Another GPU now: its users' history goes. */
		memset(g, 0, sizeof(*g));
		g->index = index;
		g->lslot = lslot; /* reset for the new UUID (sched_lock_gpu_new) */
		g->uids = keep;
		g->cap_uids = cap;
		g->usage = keep_u;
		g->cap_usage = cap_u;
		return g;
	}
	if (full)
		return NULL;
	if (VS_GROW(s->gpus, s->n_gpus, s->cap_gpus, 8) != 0)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->index = (uint32_t)s->n_gpus;
	s->gpus[s->n_gpus++] = g;
	return g;
}

static uint64_t driver_total(const struct sched *s,
			     const uint8_t uuid[VS_UUID_LEN])
{
	return s->cfg.total_fn != NULL ?
	       s->cfg.total_fn(s->cfg.total_arg, uuid) : 0;
}

/* The index a GPU is shown by: the driver's (nvidia-smi's, matched by
 * UUID) where NVML knows the GPU, which stays the same across restarts
 * of the daemon; else its slot in the table, the order of first attach. */
static void shown_index(const struct sched *s, struct sched_gpu *g)
{
	int64_t i = s->cfg.index_fn != NULL ?
		    s->cfg.index_fn(s->cfg.total_arg, g->uuid) : -1;

	g->shown_nvml = i >= 0 && i <= UINT32_MAX;
	g->shown = g->shown_nvml ? (uint32_t)i : g->index;
}

static struct sched_gpu *gpu_new(struct sched *s,
				 const uint8_t uuid[VS_UUID_LEN])
{
	int named = sched_gpu_named(s, uuid);
	uint64_t drv = named ? 0 : driver_total(s, uuid);
	struct sched_gpu *g = gpu_slot(s, named || drv != 0);
	uint64_t cap = s->cfg.capacity;
	int trusted = 0;

	if (g == NULL)
		return NULL;
	g->vouched = named || drv != 0;
	memcpy(g->uuid, uuid, VS_UUID_LEN);
	shown_index(s, g);
	g->mode = s->cfg.mode;
	g->tq_ms = s->cfg.tq_ms;
	g->min_slice_ms = s->cfg.min_slice_ms;
	g->slice_ms = g->min_slice_ms;
	g->policy = s->cfg.policy;
	for (size_t i = 0; i < s->cfg.n_gpus; i++) {
		const struct sched_gpu_cfg *gc = &s->gcfg[i];

		if (memcmp(gc->uuid, uuid, VS_UUID_LEN) != 0)
			continue;
		if (gc->set & SCHED_GCFG_TQ)
			g->tq_ms = gc->tq_ms;
		if (gc->set & SCHED_GCFG_MODE)
			g->mode = gc->mode;
		if (gc->set & SCHED_GCFG_SLICE)
			g->min_slice_ms = gc->min_slice_ms;
		if (gc->set & SCHED_GCFG_CAP) {
			cap = gc->capacity;
			trusted = cap != 0;
		}
	}
	g->cap_cfg = cap;
	g->trusted = trusted;
	if (!trusted)
		g->drv_total = named ? driver_total(s, uuid) : drv;
	dl_init(&g->members);
	dl_init(&g->queue);
	dl_init(&g->holders);
	sched_cap_refresh(g);
	sched_lock_gpu_new(s, g);
	return g;
}

int sched_attach(struct sched *s, struct sched_client *c,
		 const uint8_t uuid[VS_UUID_LEN], uint64_t total_mem)
{
	const struct sched_gpu *cg = sched_gpu_find(s, uuid);
	struct sched_gpu *g = (struct sched_gpu *)cg;
	struct sched_member *m;

	int rc;

	if (sched_member_find(c, uuid) != NULL)
		return 0; /* attaching twice is harmless */
	if (c->n_m >= SCHED_MAX_CLIENT_GPUS)
		return VS_E_LIMIT;
	if (VS_GROW(c->m, c->n_m, c->cap_m, 2) != 0)
		return VS_E_FULL;
	/* The uid's limit is checked before a record is made: a refused
	 * made-up UUID must not take a slot. */
	if (g == NULL && c->u->uid != 0 && s->cfg.uid_gpus != 0 &&
	    c->u->n_gpus >= s->cfg.uid_gpus)
		return VS_E_LIMIT;
	if (g == NULL && (g = gpu_new(s, uuid)) == NULL)
		return VS_E_FULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return VS_E_FULL;
	rc = sched_uid_gpu_add(s, g, c);
	if (rc != 0) {
		free(m);
		return rc;
	}
	m->c = c;
	m->g = g;
	m->claim = total_mem;
	dl_init(&m->q_link);
	dl_init(&m->h_link);
	dl_append(&g->members, &m->m_link);
	g->n_members++;
	c->m[c->n_m++] = m;
	if (g->total_mem == 0 && total_mem != 0)
		sched_cap_refresh(g);
	else
		m->cap = g->trusted ? g->cap_cfg :
			 capacity_of(g->drv_total ? g->drv_total : total_mem,
				     g->cap_cfg);
	return 0;
}

int sched_footprint(struct sched *s, struct sched_client *c,
		    const uint8_t uuid[VS_UUID_LEN], uint64_t managed,
		    uint64_t pinned)
{
	struct sched_member *m = sched_member_find(c, uuid);
	uint64_t fp;

	if (m == NULL)
		return VS_E_NOGPU;
	managed = managed > SCHED_FP_MAX ? SCHED_FP_MAX : managed;
	pinned = pinned > SCHED_FP_MAX ? SCHED_FP_MAX : pinned;
	fp = managed + pinned;
	fp = fp > SCHED_FP_MAX ? SCHED_FP_MAX : fp;
	m->g->total_fp = m->g->total_fp - m->fp + fp;
	if (m->state == SCHED_ST_HOLDING)
		m->g->held_fp = m->g->held_fp - m->fp + fp;
	m->managed = managed;
	m->pinned = pinned;
	if (fp > m->fp && m->state == SCHED_ST_HOLDING) {
		m->fp = fp;
		enforce_fit(s, m->g, VS_DROP_CAPACITY);
	}
	m->fp = fp;
	admit(s, m->g);
	return 0;
}

int sched_request(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	if (m->state != SCHED_ST_IDLE)
		return VS_E_STATE;
	if (!sched_uid_may_wait(s, c))
		return VS_E_LIMIT;
	m->revoked = 0;
	m->since = sched_now(s);
	m->seq = s->next_seq++;
	m->blk = m->g->blocked;
	wait_enter(m);
	admit(s, m->g);
	return 0;
}

int sched_released(struct sched *s, struct sched_client *c,
		   const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	switch (m->state) {
	case SCHED_ST_HOLDING:
		sched_unhold(s, m);
		break;
	case SCHED_ST_WAITING: /* gave up waiting */
		wait_leave(m);
		break;
	default:
		/* The release of a grant we took back after a hang is late,
		 * not wrong. */
		if (!m->revoked)
			return VS_E_STATE;
		m->revoked = 0;
		return 0;
	}
	admit(s, m->g);
	return 0;
}

int sched_swapped(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN], uint64_t us, uint64_t bytes)
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	if (m->state != SCHED_ST_HOLDING)
		return VS_E_STATE;
	/* One report per oversubscribed grant: others are no swap-in of
	 * ours, and are ignored (a holder must not inflate the counters or
	 * the slice). A report longer than a quantum is clamped to it. */
	if (!m->swap_due)
		return 0;
	m->swap_due = 0;
	if (us > (uint64_t)m->g->tq_ms * 1000u)
		us = (uint64_t)m->g->tq_ms * 1000u;
	sched_fair_swapped(m->g, us);
	sched_stat_swapped(m->g, us, bytes);
	m->g->slice_ms = sched_fair_slice(s, m->g);
	return 0;
}

int sched_took(struct sched *s, struct sched_client *c,
	       const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);
	struct sched_gpu *g;

	if (m == NULL)
		return VS_E_NOGPU;
	g = m->g;
	/* Adopted here when the word holds its mark, or at an earlier
	 * decision that found it there. Otherwise nobody saw a take: junk
	 * or another's mark was written over it, or it took none. Its
	 * word says nothing about who runs, so it is refused (the client
	 * gives the GPU back and asks) rather than adopted: adopting a bare
	 * TOOK let a client jump the queue at will. */
	settle(s, g);
	if (!m->took_untold || m->state != SCHED_ST_HOLDING) {
		m->took_untold = 0;
		g->st.took_refused++;
		admit(s, g);
		return VS_E_STATE;
	}
	m->took_untold = 0;
	admit(s, g);
	return 0;
}

/* For sched_conf.c and sched_admin.c. */
void sched_admit(struct sched *s, struct sched_gpu *g)
{
	admit(s, g);
}

void sched_enforce_fit(struct sched *s, struct sched_gpu *g, uint32_t reason)
{
	enforce_fit(s, g, reason);
}

void sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	while (!dl_empty(&s->clients))
		sched_client_del(s, dl_entry(s->clients.next,
					     struct sched_client, link));
	for (size_t i = 0; i < s->n_gpus; i++) {
		free(s->gpus[i]->uids);
		free(s->gpus[i]->usage);
		free(s->gpus[i]);
	}
	free(s->gpus);
	free(s->uids);
	free(s->gcfg);
	free(s->out);
	free(s);
}
