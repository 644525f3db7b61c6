/*
 * The invariants of the stateful fuzz harness (sfuzz.h), read from the
 * policy's private structures.
 */
#ifndef VSHARE_SFUZZ_CHECK_H
#define VSHARE_SFUZZ_CHECK_H

#define SF_EACH(head, it) \
	for (const struct dlink *it = (head)->next; it != (head); it = it->next)

/* The lock page: an open slot promises the next asker the GPU at once
 * with nothing to swap in, so nobody holds or waits while it is open,
 * the memory used fits every member's view, its number is the policy's
 * and never 0; a closed slot's word may hold anything (the harness
 * writes any value there), and takes nothing. */
static void sf_check_lock(const struct sf *f, const struct sched_gpu *g)
{
	uint64_t open;

	if (f->s->lock == NULL || g->lslot == 0) {
		SF_CHECK(g->opening == 0);
		return;
	}
	open = __atomic_load_n(&f->s->lock->slot[g->lslot - 1].open,
			       __ATOMIC_SEQ_CST);
	SF_CHECK(open == g->opening);
	if (open != 0) {
		SF_CHECK((open & VS_LOCK_OPEN_BIT) && g->n_holders == 0 &&
			 g->n_waiting == 0);
		SF_EACH(&g->members, it) {
			const struct sched_member *m =
				dl_entry(it, const struct sched_member, m_link);

			SF_CHECK(m->cap == 0 || g->total_fp <= m->cap);
		}
	}
	SF_CHECK(memcmp(f->s->lock->slot[g->lslot - 1].uuid, g->uuid,
			VS_UUID_LEN) == 0 || open == 0);
}

static void sf_check_gpu(const struct sf *f, const struct sched_gpu *g)
{
	size_t nm = 0, nq = 0, nh = 0, free_holders = 0, nhard = 0;
	size_t free_batch = 0, old_gates = 0, blind = 0;
	uint64_t tot = 0, held = 0, sum = 0, cap = 0;

	SF_EACH(&g->members, it) {
		const struct sched_member *m =
			dl_entry(it, const struct sched_member, m_link);
		nm++;
		tot += m->fp;
		SF_CHECK(m->g == g);
	}
	SF_EACH(&g->queue, it) {
		const struct sched_member *w =
			dl_entry(it, const struct sched_member, q_link);

		nq++;
		SF_CHECK(w->state == SCHED_ST_WAITING);
		/* Places are numbered in queue order after every call. */
		SF_CHECK(w->pos == nq);
	}
	SF_EACH(&g->holders, it) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		nh++;
		held += h->fp;
		SF_CHECK(h->state == SCHED_ST_HOLDING);
		if (h->hard) {
			nhard++;
			/* Time was handled up to now: a holder that ignores
			 * its drop is revoked once its grace is over. */
			if (f->ticked && f->s->cfg.skip_unresponsive)
				SF_CHECK(f->now < h->hard_at + f->s->cfg.grace_ms);
			continue;
		}
		/* Time was handled up to now: a fair preemption is never
		 * late by more than the recheck, and no holder keeps the GPU
		 * past its quantum while someone waits. */
		if (f->ticked && g->contended && g->mode != VS_MODE_OFF)
			SF_CHECK(f->now < h->q_start + g->tq_ms);
		/* Recent time never exceeds what holding since ever gives. */
		SF_CHECK(h->rec.v >= 0 && h->rec.v <= (double)f->now);
		free_holders++;
		free_batch += h->klass != VS_CLASS_INTERACTIVE;
		old_gates += h->c->proto < SCHED_PRIO_PROTO;
		blind += h->cap == 0;
		sum += h->fp;
		cap = sched_cap_min(cap, h->cap);
	}
	SF_CHECK(nm == g->n_members && nq == g->n_waiting && nh == g->n_holders);
	SF_CHECK(tot == g->total_fp && held == g->held_fp && nhard == g->n_hard);
	/* Never two exclusive holders, never a group that does not fit. In
	 * mode on only a batch program and interactive ones share, where
	 * their memory fits and every gate honours priority. */
	if (g->mode == VS_MODE_ON && free_holders > 1) {
		SF_CHECK(free_batch <= 1);
		SF_CHECK(old_gates == 0);
		SF_CHECK(f->s->lock != NULL);
		/* Each with a view of the capacity, not only the group. */
		SF_CHECK(blind == 0);
		SF_CHECK(cap != 0 && sum <= cap);
	}
	/* A capacity of 0 is unknown (no configured value, no driver report,
	 * no claim): nothing bounds such a group. */
	if (g->mode == VS_MODE_AUTO && free_holders > 1 && cap != 0)
		SF_CHECK(sum <= cap);
	/* Someone waits while nobody holds: only if it could not start,
	 * which only its user's cap does (it waits for its window). */
	if (nh == 0)
		SF_EACH(&g->queue, it)
			SF_CHECK(sched_class_capped(f->s, dl_entry(it,
				const struct sched_member, q_link), f->now));
	sf_check_lock(f, g);
}

static void sf_check_uids(const struct sf *f)
{
	const struct sched *s = f->s;

	for (size_t k = 0; k < s->n_uids; k++) {
		const struct sched_uid *u = s->uids[k];
		uint32_t clients = 0, waiting = 0, gpus = 0;

		for (int i = 0; i < SF_SLOTS; i++) {
			const struct sched_client *c = f->c[i];

			if (c == NULL || c->cred.uid != u->uid)
				continue;
			clients++;
			for (size_t j = 0; j < c->n_m; j++)
				waiting += c->m[j]->state == SCHED_ST_WAITING;
		}
		for (size_t j = 0; j < s->n_gpus; j++)
			for (size_t e = 0; e < s->gpus[j]->n_uids; e++)
				gpus += s->gpus[j]->uids[e].uid == u->uid;
		SF_CHECK(clients == u->n_clients && waiting == u->n_waiting &&
			 gpus == u->n_gpus);
		/* A reload may lower a limit below what is in use. */
		if (u->uid != 0 && s->cfg.uid_requests && !f->reloaded)
			SF_CHECK(waiting <= s->cfg.uid_requests);
		if (u->uid != 0 && s->cfg.uid_gpus && !f->reloaded)
			SF_CHECK(gpus <= s->cfg.uid_gpus);
	}
}

#include "sfuzz_check_class.h"

static void sf_check(struct sf *f)
{
	for (size_t j = 0; j < f->s->n_gpus; j++)
		sf_check_gpu(f, f->s->gpus[j]);
	sf_check_uids(f);
	sf_check_classes(f);
	for (size_t k = 0; k < sched_out_count(f->s); k++) {
		const struct sched_out *o = sched_out_at(f->s, k);
		int live = 0;

		for (int i = 0; i < SF_SLOTS; i++)
			live |= f->c[i] != NULL && f->c[i]->id == o->client_id;
		/* A take adopted as its client went is logged, not sent. */
		SF_CHECK(live || (o->kind == SCHED_OUT_TOOK && o->user == NULL));
	}
}

#endif
