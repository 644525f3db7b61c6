/*
 * The invariants of classes and caps in the stateful fuzz harness
 * (sfuzz.h), checked after every step beside those of sfuzz_check.h:
 *   - a member is interactive (in force, as status shows it) only when
 *     its client asked for the class, the policy the harness gave its
 *     user allows it (the user's or groups' entries, else the node's
 *     key) and its user is within its budget on the GPU;
 *   - a capped user is granted only below its cap of the window, and
 *     once time is handled none of its holders is at its cap without a
 *     drop pending (beyond the shortest recheck of a cap), nor an
 *     interactive holder past its budget (over the half-life) while
 *     others wait;
 *   - the class as a whole: no member is interactive in force on a GPU
 *     whose interactive class is past its interactive_total_pct, and
 *     once time is handled no interactive holder holds past that total
 *     while others wait without a drop pending;
 *   - budgets and caps used, as status shows them, are numbers within
 *     their bounds;
 *   - while an interactive waiter that its cap does not hold back
 *     waits, every batch holder has been asked to release;
 *   - every drop of this step has a reason that the state bears out: a
 *     class drop takes a batch holder for an interactive member, a fair
 *     preemption never takes an interactive holder for batch waiters, a
 *     budget drop takes a user past its budget, a cap drop a user at its
 *     cap;
 *   - pacing: every GRANT of this step to a batch member (mode not off)
 *     while another member of its GPU is interactive in force carries
 *     VS_GRANTF_PACE, and no other GRANT does; the lock word of such a
 *     GPU with more than one member stays shut.
 */
#ifndef VSHARE_SFUZZ_CHECK_CLASS_H
#define VSHARE_SFUZZ_CHECK_CLASS_H

#include <math.h>

/* The shortest time to a recheck of a budget or a cap in the policy
 * (sched_class.c): a holder may pass its cap by this much before its
 * drop is due. */
#define SF_RECHECK_MS 5u

static int sf_allowed(const struct sf *f, const struct sched_client *c)
{
	struct sched_class_pol p;

	sf_pol_of(f, c->cred.uid, &p);
	return c->klass == VS_CLASS_INTERACTIVE && p.interactive;
}

static struct sched_usage *sf_usage(const struct sched_member *m)
{
	return sched_usage_find(m->g, m->c->cred.uid);
}

/* The member's view, as status shows it. */
static void sf_view(const struct sf *f, const struct sched_member *m,
		    struct sched_member_info *mi)
{
	for (size_t j = 0; j < m->c->n_m; j++)
		if (m->c->m[j] == m) {
			SF_CHECK(sched_client_gpu(f->s, m->c, j, mi) == 0);
			return;
		}
	SF_CHECK(!"a member its client does not list");
}

/* The cap and what the member's user used of the window, in ms. */
static uint64_t sf_cap_ms(const struct sf *f, const struct sched_member *m)
{
	return (uint64_t)f->s->cfg.cap_window_ms * m->c->cp.cap_pct / 100u;
}

static double sf_cap_used_ms(const struct sf *f, const struct sched_member *m)
{
	struct sched_member_info mi;

	sf_view(f, m, &mi);
	return mi.cap_used_pct * f->s->cfg.cap_window_ms / 100.0;
}

/* An interactive member of g other than `not`: one that waits (in the
 * class it would be granted in) or holds. */
static int sf_interactive_on(const struct sf *f, const struct sched_gpu *g,
			     const struct sched_member *not)
{
	SF_EACH(&g->members, it) {
		const struct sched_member *m =
			dl_entry(it, const struct sched_member, m_link);

		if (m == not)
			continue;
		if (m->state == SCHED_ST_WAITING &&
		    sched_class_of(f->s, m) == VS_CLASS_INTERACTIVE)
			return 1;
		if (m->state == SCHED_ST_HOLDING &&
		    m->klass == VS_CLASS_INTERACTIVE)
			return 1;
	}
	return 0;
}

static void sf_check_member(const struct sf *f, const struct sched_member *m)
{
	const struct sched_usage *u = sf_usage(m);
	struct sched_member_info mi;

	sf_view(f, m, &mi);
	/* The class in force: never for a client not allowed it, never
	 * past the budget (an admission demotes such a holder at once). */
	if (mi.klass == VS_CLASS_INTERACTIVE) {
		SF_CHECK(sf_allowed(f, m->c));
		SF_CHECK(u == NULL || !u->over);
		SF_CHECK(!m->g->total_over);
	}
	SF_CHECK(mi.total_pct == m->g->total_pct && mi.total_pct >= 1 &&
		 mi.total_pct <= 100);
	SF_CHECK(isfinite(mi.total_used_pct) && mi.total_used_pct >= 0.0);
	/* Past the class's total while others wait: asked to release, or
	 * batch, once time was handled (each interactive holder's share
	 * may pass it by a recheck). */
	if (f->ticked && m->state == SCHED_ST_HOLDING &&
	    m->klass == VS_CLASS_INTERACTIVE && m->g->contended && !m->hard)
		SF_CHECK(mi.total_used_pct * f->s->cfg.halflife_ms / 100.0 <
			 (double)((uint64_t)f->s->cfg.halflife_ms *
				  mi.total_pct / 100u +
				  SF_RECHECK_MS * m->g->n_holders));
	if (m->state == SCHED_ST_HOLDING && m->klass == VS_CLASS_INTERACTIVE)
		SF_CHECK(sf_allowed(f, m->c));
	/* Shares of a GPU's time: the budget is charged once per holder, so
	 * several holders of one user in auto charge it that many times. */
	SF_CHECK(isfinite(mi.budget_used_pct) && mi.budget_used_pct >= 0.0);
	SF_CHECK(mi.budget_used_pct <=
		 100.0 * (f->coheld_max ? f->coheld_max : 1) + 1e-6);
	SF_CHECK(isfinite(mi.cap_used_pct) && mi.cap_used_pct >= 0.0 &&
		 mi.cap_used_pct <= 100.0 + 1e-6);
	SF_CHECK(mi.cap_pct == m->c->cp.cap_pct && mi.cap_pct <= 100);
	/* An interactive holder past its budget while others wait has been
	 * asked to release (or counts as batch), once time was handled. */
	if (f->ticked && m->state == SCHED_ST_HOLDING &&
	    m->klass == VS_CLASS_INTERACTIVE && m->g->contended && !m->hard)
		SF_CHECK(mi.budget_used_pct * f->s->cfg.halflife_ms / 100.0 <
			 (double)((uint64_t)f->s->cfg.halflife_ms *
				  mi.budget_pct / 100u + SF_RECHECK_MS));
	/* A capped holder at its cap has been asked to release, once time
	 * was handled up to now. */
	if (f->ticked && m->state == SCHED_ST_HOLDING && m->cap_held &&
	    m->c->cp.cap_pct != 0 && !m->hard)
		SF_CHECK(sf_cap_used_ms(f, m) <
			 (double)(sf_cap_ms(f, m) + SF_RECHECK_MS));
}

/* An interactive waiter that its cap does not hold back preempts every
 * batch holder at once. */
static void sf_check_preempt(const struct sf *f, const struct sched_gpu *g)
{
	int iw = 0;

	if (g->mode == VS_MODE_OFF)
		return;
	SF_EACH(&g->queue, it) {
		const struct sched_member *w =
			dl_entry(it, const struct sched_member, q_link);

		iw |= sched_class_of(f->s, w) == VS_CLASS_INTERACTIVE &&
		      !sched_class_capped(f->s, w, f->now);
	}
	if (!iw)
		return;
	SF_EACH(&g->holders, it) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		SF_CHECK(h->klass == VS_CLASS_INTERACTIVE || h->hard != 0);
	}
}

/* The member an outbox entry of this step speaks of, while the hold it
 * spoke of lasts (a drop) or began now (a grant); NULL otherwise. */
static const struct sched_member *sf_target(const struct sf *f,
					    const struct sched_out *o)
{
	for (int i = 0; i < SF_SLOTS; i++) {
		const struct sched_member *m;

		if (f->c[i] == NULL || f->c[i]->id != o->client_id)
			continue;
		m = sched_member_find(f->c[i], o->uuid);
		if (m == NULL || m->state != SCHED_ST_HOLDING)
			return NULL;
		if (o->type == VS_MSG_DROP)
			return m->hard && m->hard_at == f->now ? m : NULL;
		return m->since == f->now ? m : NULL;
	}
	return NULL;
}

/* A capped user's grant of this step: below its cap. A grant that a
 * change of the policy overtook within the step (another client of the
 * user, granted under the cap it had then) must be asked to release; so
 * must a take through the lock page past the cap (the client ran
 * already: the take is only recorded). */
static void sf_check_grant(const struct sf *f, const struct sched_out *o,
			   const struct sched_member *m)
{
	if (!m->cap_held || m->c->cp.cap_pct == 0)
		return;
	if ((f->repol || o->kind == SCHED_OUT_TOOK) && m->hard &&
	    m->hard_at == f->now)
		return;
	SF_CHECK(sf_cap_used_ms(f, m) < (double)sf_cap_ms(f, m));
}

static void sf_check_drop(const struct sf *f, const struct sched_out *o,
			  const struct sched_member *m)
{
	const struct sched_usage *u = sf_usage(m);

	switch (o->why) {
	case SCHED_DROP_CLASS:
		/* A batch holder, for an interactive member. The daemon (and
		 * the harness) hands a new policy to one client at a time: a
		 * waiter that was interactive when it preempted may have lost
		 * the class later in the same step. */
		SF_CHECK(m->klass == VS_CLASS_BATCH);
		SF_CHECK(m->g->mode != VS_MODE_OFF);
		SF_CHECK(f->repol || sf_interactive_on(f, m->g, m));
		break;
	case SCHED_DROP_FAIR:
		/* A batch waiter never preempts an interactive holder. As
		 * for a class drop, a waiter that was interactive when it
		 * preempted may have lost the class later in a step that
		 * hands a new policy to one client at a time
		 * (fair-drop-repolicy). */
		if (m->klass == VS_CLASS_INTERACTIVE)
			SF_CHECK(f->repol || sf_interactive_on(f, m->g, m));
		break;
	case SCHED_DROP_BUDGET:
		/* Spent when it was dropped. A step that hands a new policy
		 * to its user's clients one at a time may give a larger
		 * budget after the drop (budget-drop-repolicy). */
		SF_CHECK(u != NULL && m->klass == VS_CLASS_BATCH);
		SF_CHECK(u->over || f->repol);
		break;
	case SCHED_DROP_TOTAL:
		/* Past the class's total when it was dropped; a reload in
		 * the step may have raised it since. */
		SF_CHECK(m->klass == VS_CLASS_BATCH);
		SF_CHECK(m->g->total_over || f->repol);
		break;
	case SCHED_DROP_CAP:
		SF_CHECK(m->c->cp.cap_pct != 0);
		SF_CHECK(sf_cap_used_ms(f, m) + 0.5 >= (double)sf_cap_ms(f, m));
		break;
	default:
		SF_CHECK(o->why < SCHED_DROP_N);
		break;
	}
}

/* An interactive member in force of g other than `not`, as status shows
 * it. */
static int sf_interactive_beside(const struct sf *f, const struct sched_gpu *g,
				 const struct sched_member *not)
{
	SF_EACH(&g->members, it) {
		const struct sched_member *m =
			dl_entry(it, const struct sched_member, m_link);
		struct sched_member_info mi;

		if (m == not)
			continue;
		sf_view(f, m, &mi);
		if (mi.klass == VS_CLASS_INTERACTIVE)
			return 1;
	}
	return 0;
}

/* A grant of this step is paced exactly when it goes to a batch member
 * beside an interactive one. A step that handed a new policy to clients
 * one at a time, or that took several frames of a client (or a frame and
 * its close), may have changed the classes or the members after the
 * grant. */
static void sf_check_pace(const struct sf *f, const struct sched_out *o,
			  const struct sched_member *m)
{
	int want = m->g->mode != VS_MODE_OFF && m->klass == VS_CLASS_BATCH &&
		   sf_interactive_beside(f, m->g, m);

	if (o->kind != SCHED_OUT_MSG || f->repol || f->mixed)
		return;
	SF_CHECK(!(o->u.grant.flags & VS_GRANTF_PACE) == !want);
}

static void sf_check_outbox(const struct sf *f)
{
	for (size_t k = f->out0; k < sched_out_count(f->s); k++) {
		const struct sched_out *o = sched_out_at(f->s, k);
		const struct sched_member *m;

		if (o->kind == SCHED_OUT_UNRESPONSIVE ||
		    (o->type != VS_MSG_GRANT && o->type != VS_MSG_DROP))
			continue;
		m = sf_target(f, o);
		if (m == NULL)
			continue;
		if (o->type == VS_MSG_GRANT) {
			sf_check_grant(f, o, m);
			sf_check_pace(f, o, m);
		} else
			sf_check_drop(f, o, m);
	}
}

static void sf_check_classes(struct sf *f)
{
	const struct sched *s = f->s;

	for (size_t j = 0; j < s->n_gpus; j++) {
		const struct sched_gpu *g = s->gpus[j];
		size_t ncap = 0;

		SF_EACH(&g->holders, it) {
			const struct sched_member *h =
				dl_entry(it, const struct sched_member, h_link);
			uint32_t n = 0;

			SF_EACH(&g->holders, jt)
				n += dl_entry(jt, const struct sched_member,
					      h_link)->c->cred.uid == h->c->cred.uid;
			if (n > f->coheld_max)
				f->coheld_max = n;
		}
		SF_EACH(&g->members, it) {
			const struct sched_member *m =
				dl_entry(it, const struct sched_member, m_link);

			ncap += m->c->cp.cap_pct != 0;
			sf_check_member(f, m);
		}
		/* The capped members counted, which keep the lock word shut. */
		SF_CHECK(ncap == g->n_capped);
		SF_CHECK(ncap == 0 || g->opening == 0);
		/* Beside an interactive member every take is a GRANT. */
		if (g->mode != VS_MODE_OFF && g->n_members > 1 &&
		    sf_interactive_beside(f, g, NULL))
			SF_CHECK(g->opening == 0);
		sf_check_preempt(f, g);
	}
	sf_check_outbox(f);
}

#endif
