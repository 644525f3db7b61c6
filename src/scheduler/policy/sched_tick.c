/*
 * Time: the deadlines of holders (quantum, fair slice, grace after a hard
 * drop) and what happens when one is due. Above the transitions: it
 * drops, revokes and admits through sched_grant.c, and nothing there
 * calls back.
 */
#include "sched_int.h"

/* Past its slice, a holder whose first waiter is not (yet) much less is
 * looked at again this often: the holder's recent time grows and the
 * waiter's decays, so the answer changes with time alone. */
#define FAIR_RECHECK_MS 100u

/* Deadline of one holder, or SCHED_NO_DEADLINE. */
static uint64_t holder_deadline(const struct sched *s,
				const struct sched_gpu *g,
				const struct sched_member *h)
{
	uint64_t d, slice_end, now;

	/* A hung holder reported while skip_unresponsive was off is
	 * revoked once a reload turns it on. */
	if (h->hard)
		return h->hung_reported && !s->cfg.skip_unresponsive ?
		       SCHED_NO_DEADLINE : h->hard_at + s->cfg.grace_ms;
	if (!g->contended)
		return SCHED_NO_DEADLINE;
	d = h->q_start + g->tq_ms;
	if (g->policy != SCHED_POLICY_FAIR || s->cfg.preempt_pct == 0 ||
	    dl_empty(&g->queue))
		return d;
	slice_end = h->since + g->slice_ms;
	now = sched_now(s);
	if (slice_end <= now || !sched_fair_much_less(s, g,
			dl_entry(g->queue.next, struct sched_member, q_link),
			h, now))
		slice_end = (slice_end > now ? slice_end : now) +
			    FAIR_RECHECK_MS;
	return slice_end < d ? slice_end : d;
}

static void hung(struct sched *s, struct sched_member *h)
{
	struct sched_out *o = sched_out_push(s, SCHED_OUT_UNRESPONSIVE, h);

	h->hung_reported = 1;
	h->g->st.unresponsive++;
	if (o != NULL)
		o->revoked = s->cfg.skip_unresponsive;
	if (s->cfg.skip_unresponsive) {
		h->g->st.revocations++;
		sched_unhold(s, h);
		h->revoked = 1;
	}
}

void sched_tick(struct sched *s)
{
	uint64_t now = sched_now(s);

	for (size_t i = 0; i < s->n_gpus; i++) {
		struct sched_gpu *g = s->gpus[i];
		size_t before = g->n_holders;

		if (!g->contended && g->n_hard == 0 && g->n_capped == 0)
			continue;
		ITER_HOLDERS(g, it, nx) {
			struct sched_member *h =
				dl_entry(it, struct sched_member, h_link);

			if (holder_deadline(s, g, h) > now)
				continue;
			if (h->hard)
				hung(s, h);
			else if (h->q_start + g->tq_ms <= now)
				sched_hard_drop(s, h, VS_DROP_QUANTUM, now);
		}
		/* Slices: the order first, since it moved with time. Budgets
		 * and caps: admission drops and grants for them. */
		if (g->n_holders != before || g->contended ||
		    sched_class_deadline(s, g, now) <= now)
			sched_admit(s, g);
	}
}

uint64_t sched_next_deadline(const struct sched *s)
{
	uint64_t best = SCHED_NO_DEADLINE, now = sched_now(s);

	for (size_t i = 0; i < s->n_gpus; i++) {
		const struct sched_gpu *g = s->gpus[i];
		const struct dlink *it;
		uint64_t d;

		if (!g->contended && g->n_hard == 0 && g->n_capped == 0)
			continue;
		d = sched_class_deadline(s, g, now);
		if (d < best)
			best = d;
		for (it = g->holders.next; it != &g->holders; it = it->next) {
			d = holder_deadline(s, g,
				dl_entry(it, const struct sched_member, h_link));
			if (d < best)
				best = d;
		}
	}
	return best;
}
