/*
 * Classes and caps in the stateful fuzz harness (sfuzz.h): the admin's
 * policy per user and per group and the node's keys, played as the
 * daemon plays its configuration (the entries resolved per uid as
 * conf_policy_of resolves them, and handed to every client of the uid
 * through sched_client_set_policy, at registration and whenever they
 * change); clients that ask for the interactive class; and clock jumps
 * across cap windows, half-lives and onto the next deadline.
 */
#ifndef VSHARE_SFUZZ_CLASS_H
#define VSHARE_SFUZZ_CLASS_H

#define SF_CLASS_BATCH       1u /* an entry's "class": "batch" */
#define SF_CLASS_INTERACTIVE 2u /* "class": "interactive" */

static int sf_uid_index(uint32_t uid)
{
	for (int k = 0; k < SF_UIDS; k++)
		if (sf_uids[k] == uid)
			return k;
	return 0;
}

/* The lowest of two values where 0 is unset. */
static uint32_t sf_lower(uint32_t a, uint32_t b)
{
	if (a == 0)
		return b;
	return b != 0 && b < a ? b : a;
}

/* What a uid may have: the user's entry where it sets a value; else,
 * among its groups, batch if any forbids the class, interactive if any
 * allows it, the lowest budget and cap; else the node's keys. */
static void sf_pol_of(const struct sf *f, uint32_t uid,
		      struct sched_class_pol *out)
{
	const struct sf_ent *user = &f->pol.user[sf_uid_index(uid)];
	struct sf_ent grp = { 0, 0, 0 };
	uint32_t k;

	for (int g = 0; g < SF_GROUPS; g++) {
		const struct sf_ent *e = &f->pol.grp[g];

		if (!(f->pol.members[g] >> sf_uid_index(uid) & 1))
			continue;
		if (e->klass == SF_CLASS_BATCH || grp.klass == 0)
			grp.klass = grp.klass == SF_CLASS_BATCH ?
				    SF_CLASS_BATCH : e->klass;
		grp.budget = sf_lower(grp.budget, e->budget);
		grp.cap = sf_lower(grp.cap, e->cap);
	}
	k = user->klass ? user->klass : grp.klass;
	out->interactive = k ? k == SF_CLASS_INTERACTIVE :
			   f->pol.node_interactive;
	out->budget_pct = user->budget ? user->budget :
			  grp.budget ? grp.budget : f->s->cfg.budget_pct;
	out->cap_pct = user->cap ? user->cap : grp.cap;
}

/* The daemon's reload: every client takes its user's policy again. */
static void sf_policy_all(struct sf *f)
{
	for (int i = 0; i < SF_SLOTS; i++) {
		struct sched_class_pol p;

		if (f->c[i] == NULL)
			continue;
		sf_pol_of(f, f->c[i]->cred.uid, &p);
		sched_client_set_policy(f->s, f->c[i], &p);
	}
	f->repol = 1;
}

/* The daemon's HELLO: a client of one of the uids, asking for the
 * interactive class or not, gets a lock page token and its policy. */
static void sf_hello(struct sf *f, int i, uint8_t b)
{
	struct sched_cred cr = { 100 + i, sf_uids[b % SF_UIDS], 0 };
	struct sched_class_pol p;

	f->c[i] = sched_client_new(f->s, &cr, "f", NULL);
	if (f->c[i] == NULL)
		return;
	sched_client_set_token(f->c[i], VS_LOCK_TOKEN_BIT | ++f->next_token);
	sched_client_set_class(f->c[i], b & 0x10 ? VS_CLASS_INTERACTIVE :
				VS_CLASS_BATCH);
	/* Most gates honour priority; some are older (no co-hold). */
	sched_client_set_proto(f->c[i], b & 0x20 ? 7 : VS_PROTO_VERSION);
	sf_pol_of(f, cr.uid, &p);
	sched_client_set_policy(f->s, f->c[i], &p);
}

/* An entry from one byte: its class, budget and cap. */
static void sf_entry(struct sf_ent *e, uint8_t p)
{
	static const uint32_t budget[4] = { 0, 5, 20, 100 };
	static const uint32_t cap[4] = { 0, 2, 20, 60 };

	e->klass = p % 3;
	e->budget = budget[(p >> 2) % 4];
	e->cap = cap[(p >> 4) % 4];
}

/* A reload that changes the node's interactive_budget_pct, cap_window_s,
 * halflife_s and interactive_total_pct only. */
static void sf_node(struct sf *f, uint8_t p)
{
	static const uint32_t budget[4] = { 1, 10, 20, 100 };
	static const uint32_t win_s[4] = { 1, 3, 10, 60 };
	static const uint32_t half_ms[4] = { 0, 500, 5000, 60000 };
	static const uint32_t total[4] = { 0, 10, 30, 100 };
	struct sched_cfg old = f->s->cfg, cfg;
	struct sched_gpu_cfg ogc[1];

	if (old.n_gpus == 1) {
		ogc[0] = old.gpus[0];
		old.gpus = ogc;
	}
	cfg = old;
	cfg.budget_pct = budget[p % 4];
	cfg.cap_window_ms = 1000u * win_s[(p >> 2) % 4];
	cfg.halflife_ms = half_ms[(p >> 4) % 4] ? half_ms[(p >> 4) % 4] :
			  2 * cfg.tq_ms;
	cfg.total_pct = total[(p >> 6) % 4];
	SF_CHECK(sched_reconfigure(f->s, &old, &cfg) == 0);
	sf_policy_all(f);
}

/* The daemon's timer, after the clock moved to `to`. */
static void sf_tick_to(struct sf *f, uint64_t to)
{
	sf_ticks(f, to);
	f->ticked = 1;
}

/* Time: whole cap windows or half-lives, or onto the next deadline (the
 * edge of a cap or a budget), or a few ms. */
static void sf_clock_jump(struct sf *f, uint8_t v, uint8_t p)
{
	uint64_t d = sched_next_deadline(f->s);

	switch (v % 3) {
	case 0:
		sf_tick_to(f, f->now + (uint64_t)(1 + p % 4) *
			   (p & 0x80 ? f->s->cfg.halflife_ms :
			    f->s->cfg.cap_window_ms));
		break;
	case 1:
		if (d != SCHED_NO_DEADLINE && d > f->now &&
		    d - f->now <= 3600000u)
			sf_tick_to(f, d - (p & 1));
		break;
	default:
		sf_tick_to(f, f->now + p % 16);
		break;
	}
}

/* The admin's policy, the node's keys and the clock. */
static void sf_klass(struct sf *f, uint8_t b)
{
	uint8_t v = sf_byte(f), p = sf_byte(f);

	(void)b;
	switch (v % 6) {
	case 0:
		sf_entry(&f->pol.user[(v >> 3) % SF_UIDS], p);
		sf_policy_all(f);
		break;
	case 1:
		sf_entry(&f->pol.grp[(v >> 3) % SF_GROUPS], p);
		sf_policy_all(f);
		break;
	case 2:
		f->pol.members[(v >> 3) % SF_GROUPS] = p % (1u << SF_UIDS);
		sf_policy_all(f);
		break;
	case 3:
		f->pol.node_interactive = p & 1;
		sf_policy_all(f);
		break;
	case 4:
		sf_node(f, p);
		break;
	default:
		sf_clock_jump(f, v >> 3, p);
		break;
	}
}

#endif
