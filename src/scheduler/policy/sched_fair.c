/*
 * Fair share: the recent GPU time of members and users, and the queue
 * order it gives. Pure bookkeeping below the transitions (sched.c,
 * sched_grant.c), like sched_cap.c: it reads and orders, it never grants
 * or drops.
 *
 * Recent time is held time decayed exponentially with the configured
 * half-life, so a user who held the GPU a minute ago counts for half of
 * one who holds it now. Holding while someone waits is charged as wall
 * time, whether the GPU computes or not: a holder keeps others off the
 * card either way.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_int.h"

/* Only time held while someone waited is charged: a holder alone keeps
 * the GPU for free (it deprives nobody), so a notebook that sat on an
 * idle GPU for an hour is as light as one that just arrived. The GPU's
 * `contended` flag changes only in admission, after a charge, so it is
 * the state of the whole interval since the last one. */
void sched_fair_charge_one(const struct sched *s, struct sched_member *m,
			   uint64_t now)
{
	struct sched_usage *u;
	uint64_t dt;

	if (m->state != SCHED_ST_HOLDING || now <= m->charged_at)
		return;
	dt = now - m->charged_at;
	m->charged_at = now;
	m->g->st.held_ms[m->c->slot] += dt; /* every held ms, for the metrics */
	m->held_total += dt;
	m->g->st.class_held_ms[m->klass] += dt;
	if (!m->g->contended)
		return;
	sched_rec_add(s, &m->rec, dt, now);
	u = sched_usage_get(s, m->g, m->c->cred.uid, now);
	if (u != NULL) {
		sched_rec_add(s, &u->rec, dt, now);
		sched_class_charge(s, m, u, dt, now);
	}
}

void sched_fair_charge(const struct sched *s, struct sched_gpu *g, uint64_t now)
{
	for (struct dlink *it = g->holders.next; it != &g->holders;
	     it = it->next)
		sched_fair_charge_one(s, dl_entry(it, struct sched_member, h_link),
				      now);
}

/* Time not yet charged to a holder, decayed to now. */
static double pending(const struct sched *s, const struct sched_member *m,
		      uint64_t now)
{
	if (m->state != SCHED_ST_HOLDING || now <= m->charged_at ||
	    !m->g->contended)
		return 0.0;
	return sched_rec_accrued(s, now - m->charged_at);
}

double sched_fair_recent(const struct sched *s, const struct sched_member *m,
			 uint64_t now)
{
	return sched_rec_now(s, &m->rec, now) + pending(s, m, now);
}

double sched_fair_user_recent(const struct sched *s,
			      const struct sched_member *m, uint64_t now)
{
	const struct sched_gpu *g = m->g;
	const struct sched_usage *u = sched_usage_find(g, m->c->cred.uid);
	double v = u != NULL ? sched_rec_now(s, &u->rec, now) : 0.0;

	for (const struct dlink *it = g->holders.next; it != &g->holders;
	     it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		if (h->c->cred.uid == m->c->cred.uid)
			v += pending(s, h, now);
	}
	return v;
}

static uint32_t weight_of(const struct sched_member *m)
{
	return m->c->weight ? m->c->weight : SCHED_WEIGHT_DEFAULT;
}

/* ---- queue order ---- */

struct key {
	struct sched_member *m;
	uint32_t klass;           /* interactive first */
	double user;              /* the user's recent time / weight */
	double own;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->klass != y->klass)
		return x->klass > y->klass ? -1 : 1;
	if (x->user != y->user)
		return x->user < y->user ? -1 : 1;
	if (x->own != y->own)
		return x->own < y->own ? -1 : 1;
	return x->m->seq < y->m->seq ? -1 : x->m->seq > y->m->seq;
}

void sched_fair_number(struct sched_gpu *g)
{
	uint32_t pos = 0;

	for (struct dlink *it = g->queue.next; it != &g->queue; it = it->next)
		dl_entry(it, struct sched_member, q_link)->pos = ++pos;
}

void sched_fair_order(const struct sched *s, struct sched_gpu *g,
		      uint64_t now)
{
	struct key *k;
	size_t n = 0;

	if (g->n_waiting > 1) {
		/* Out of memory keeps the order the queue has: arrival
		 * order at worst, never a lost waiter. */
		k = malloc(g->n_waiting * sizeof(*k));
		if (k == NULL) {
			sched_fair_number(g);
			return;
		}
		for (struct dlink *it = g->queue.next; it != &g->queue;
		     it = it->next) {
			struct sched_member *m =
				dl_entry(it, struct sched_member, q_link);

			k[n].m = m;
			k[n].klass = sched_class_of(s, m);
			if (g->policy == SCHED_POLICY_FCFS) {
				k[n].user = k[n].own = 0;
			} else {
				k[n].user = sched_fair_user_recent(s, m, now) /
					    weight_of(m);
				k[n].own = sched_fair_recent(s, m, now);
			}
			n++;
		}
		qsort(k, n, sizeof(*k), key_cmp);
		dl_init(&g->queue);
		for (size_t i = 0; i < n; i++)
			dl_append(&g->queue, &k[i].m->q_link);
		free(k);
	}
	sched_fair_number(g);
}

/* "Much less" is a ratio, not a difference: two equal jobs that take
 * turns at a quantum of up to half the half-life stay within 70% of each
 * other, so with preempt_pct below that they alternate at the quantum
 * and do not preempt each other at every slice; a program that bursts
 * now and then stays far below a training job and preempts it. Between one user's own
 * processes the processes' own times compare. */
int sched_fair_much_less(const struct sched *s, const struct sched_gpu *g,
			 const struct sched_member *w,
			 const struct sched_member *h, uint64_t now)
{
	double wv, hv;

	(void)g;
	if (g->policy != SCHED_POLICY_FAIR)
		return 0;
	if (w->c->cred.uid != h->c->cred.uid) {
		wv = sched_fair_user_recent(s, w, now) / weight_of(w);
		hv = sched_fair_user_recent(s, h, now) / weight_of(h);
	} else {
		wv = sched_fair_recent(s, w, now);
		hv = sched_fair_recent(s, h, now);
	}
	return wv * 100.0 < hv * (double)s->cfg.preempt_pct;
}

/* A preempted holder that asks again within this long of its release
 * still had work: the time until its next grant is what the preemption
 * cost it. One that comes back later had gone idle anyway. */
#define COST_REQUEST_MS 1000u

void sched_fair_granted(const struct sched *s, struct sched_gpu *g,
			struct sched_member *m, uint64_t now)
{
	double cost;

	if (!m->out)
		return;
	m->out = 0;
	if (m->since > m->out_at + COST_REQUEST_MS || now < m->out_at)
		return;
	/* Only turns that ended by themselves: short jobs that went idle.
	 * A turn that had to be ended (its quantum, a preemption back) was
	 * a long job's, and what long jobs take from each other is the fair
	 * share's to settle, not a cost to bound. */
	if (g->hard_seq != m->out_hard)
		return;
	cost = (double)(now - m->out_at);
	/* Each preemption counts for a third: the average follows who is
	 * preempting now, not who did an hour ago. It starts from the cost
	 * that min_slice_ms alone keeps within the budget, so that one slow
	 * first turn (a notebook's first cell loads its libraries) does not
	 * set the slice for the next dozen. */
	if (g->costs == 0)
		g->cost_ms = (double)g->min_slice_ms *
			     (double)s->cfg.preempt_budget_pct /
			     (double)(100 - s->cfg.preempt_budget_pct);
	/* Interactive turns in that time (an interactive program went
	 * first while the holder was off the GPU) are the class's, which
	 * its budgets and interactive_total_pct bound: counted apart, they
	 * never lengthen the slice. Counted in, a program that claims the
	 * class and holds for seconds would stretch the slice of every
	 * batch holder, and a batch job of its user would then keep the
	 * GPU that long against any waiter. */
	if (g->st.class_grants[VS_CLASS_INTERACTIVE] != m->out_igrants) {
		g->icost_ms = g->icosts == 0 ? cost :
			      g->icost_ms + (cost - g->icost_ms) / 3;
		g->icosts++;
		return;
	}
	g->cost_ms += (cost - g->cost_ms) / 3;
	g->costs++;
}

/* A preemption by short jobs costs its holder their turns (the waiters
 * that go before it: their work, their idle time before they release,
 * the hand-offs) and, under oversubscription, a swap-in when it gets the
 * GPU back. A slice of at least cost * (100 - budget) / budget keeps what
 * preemption takes within the budget's share of the holder's time: a
 * training job keeps 90% of the GPU beside notebooks, whatever their
 * bursts, and the slice is as short as that allows. */
uint64_t sched_fair_slice(const struct sched *s, const struct sched_gpu *g)
{
	uint64_t slice = g->min_slice_ms, pct = s->cfg.preempt_budget_pct;
	double cost = g->costs > 0 ? g->cost_ms : 0.0;

	/* Swaps only while the GPU is oversubscribed: otherwise nothing
	 * swaps. */
	if (g->swaps > 0 && g->capacity != 0 && g->total_fp > g->capacity)
		cost += g->swap_us / 1000.0;
	if (pct > 0 && pct < 100 && cost > 0) {
		uint64_t need = (uint64_t)(cost * (double)(100 - pct) /
					   (double)pct);

		if (need > slice)
			slice = need;
	}
	return slice < sched_fair_slice_max(g) ? slice : sched_fair_slice_max(g);
}

/* A short job waits a slice at most before it preempts: past a few times
 * min_slice_ms, what preemptions cost (turns, swap-ins: time the holder
 * was kept off the GPU, which the preempting programs decide) may take
 * more than preempt_budget_pct of the holder's time, which is the price
 * of a bounded wait. */
uint64_t sched_fair_slice_max(const struct sched_gpu *g)
{
	return (uint64_t)g->min_slice_ms * SCHED_SLICE_CAP_MULT;
}

void sched_fair_swapped(struct sched_gpu *g, uint64_t us)
{
	/* An average that follows the card's current load: each grant
	 * counts for a quarter. */
	g->swap_us = g->swaps == 0 ? (double)us :
		     g->swap_us + ((double)us - g->swap_us) / 4.0;
	g->swaps++;
}
