/*
 * Granting, dropping and admission. grant() is the one place that
 * grants: it moves a waiter to the holders, starts its accounts and puts
 * the GRANT in the outbox. Two callers reach it, both here: admit(),
 * which grants the longest prefix of waiters in the policy's order, and
 * adopt(), which records a take through the lock page (the client runs
 * already, so the grant is only logged: SCHED_OUT_TOOK). adopt() runs
 * only from settle(), the first step of every decision about a GPU
 * (admit, enforce_fit, a client's deletion), so a take is always
 * recorded before anyone else is granted or dropped. admit() is also the
 * one place that tells holders someone is waiting, and with the tick the
 * one place that preempts for fair share (sched_fair.c keeps the accounts
 * and the order). The clock, the outbox and the lookups live in
 * sched_view.c, below this file: nothing there calls back up.
 */
#include <string.h>

#include "sched_int.h"

/* ---- waiting, granting and dropping ---- */

void sched_wait_enter(struct sched_member *m)
{
	dl_append(&m->g->queue, &m->q_link);
	m->g->n_waiting++;
	m->c->u->n_waiting++;
	m->state = SCHED_ST_WAITING;
}

void sched_wait_leave(struct sched_member *m)
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
	/* A batch holder beside an interactive program keeps its queued
	 * work short: its drain is the interactive one's wait. */
	flags |= sched_class_grant_flags(s, m);
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
	/* Ours go on the wire as a quantum drop (release now); the log
	 * tells them apart. */
	o->u.drop.reason = why >= SCHED_DROP_FAIR ? VS_DROP_QUANTUM : why;
	o->why = why;
	return o;
}

static void grant(struct sched *s, struct sched_member *m, uint64_t now)
{
	struct sched_gpu *g = m->g;

	sched_wait_leave(m);
	dl_append(&g->holders, &m->h_link);
	g->n_holders++;
	g->held_fp += m->fp;
	sched_cap_hold(g, m);
	m->state = SCHED_ST_HOLDING;
	sched_class_granted(s, m, now);
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
	sched_class_unheld(s, m, sched_now(s));
	sched_stat_unheld(g, m, sched_now(s));
	/* A TOOK after the grant ended (revoked, say) claims nothing. */
	m->took_untold = 0;
	if (m->preempted) {
		m->out = 1;
		m->out_at = sched_now(s);
		m->out_hard = g->hard_seq;
		m->out_igrants = g->st.class_grants[VS_CLASS_INTERACTIVE];
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
	m->hard = why >= SCHED_DROP_FAIR ? VS_DROP_QUANTUM : why;
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
		sched_wait_enter(m);
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
void sched_settle(struct sched *s, struct sched_gpu *g)
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
	uint32_t n, pct;

	/* Whether batch gates hold back for interactive work, first: it
	 * changes with every attach, detach and budget (proto.h). */
	pct = sched_class_prio(s, g, &n);
	sched_lock_prio(s, g, pct, n);
	/* A capped user takes through REQUEST only: its cap is checked at
	 * each grant. So does everyone beside an interactive program: a
	 * batch member hears in its GRANT that it must keep its queued
	 * work short (VS_GRANTF_PACE), which a take through the word would
	 * not tell it; an interactive program alone on its GPU still
	 * takes through the word. */
	if (s->lock == NULL || g->n_holders > 0 || g->n_waiting > 0 ||
	    g->n_members == 0 || g->n_capped > 0 || sched_class_paced(s, g))
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

/* May waiter m start now, beside the current holders? In mode on only
 * as a pair of a batch program and interactive ones whose memory fits
 * (sched_class_cohold). */
static int fits(const struct sched *s, const struct sched_gpu *g,
		const struct sched_member *m)
{
	if (g->n_holders == 0)
		return 1;
	switch (g->mode) {
	case VS_MODE_OFF:
		return 1;
	case VS_MODE_ON:
		return sched_class_cohold(s, g, m);
	default:
		return g->held_fp + m->fp <= sched_cap_group(g, m);
	}
}

/* Someone waits: holders learn it now (release when idle), and their
 * quantum windows, which renew freely while nobody waits, are brought up
 * to the window that contains `now`. */
static void update_contention(struct sched *s, struct sched_gpu *g,
			      size_t waiting, uint64_t now)
{
	if (waiting == 0 || g->mode == VS_MODE_OFF) {
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
 * quantum drop: release at once) when the first in line, w, has much
 * less recent GPU time than they do. A batch waiter never preempts an
 * interactive holder: that one releases when idle. */
static void preempt(struct sched *s, struct sched_gpu *g,
		    const struct sched_member *w, uint64_t now)
{
	uint64_t slice;
	uint32_t wk;

	if (g->policy != SCHED_POLICY_FAIR || g->mode == VS_MODE_OFF ||
	    w == NULL)
		return;
	slice = g->slice_ms;
	wk = sched_class_of(s, w);
	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);

		if (h->hard || now < h->since + slice || h->klass > wk ||
		    !sched_fair_much_less(s, g, w, h, now))
			continue;
		sched_hard_drop(s, h, SCHED_DROP_FAIR, now);
		h->preempted = 1;
	}
}

/* What classes and caps ask of the holders: a batch holder goes at once
 * for an interactive waiter w that was not granted, an interactive one
 * past its budget goes when others wait, and a capped user's at its cap,
 * whoever waits. */
static void class_drops(struct sched *s, struct sched_gpu *g,
			const struct sched_member *w, uint64_t now)
{
	int waiters = w != NULL && g->mode != VS_MODE_OFF;
	int preempt_all = waiters &&
			  sched_class_of(s, w) == VS_CLASS_INTERACTIVE;

	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);
		uint32_t why = sched_class_drop(s, h, waiters, preempt_all, now);

		if (why != 0)
			sched_hard_drop(s, h, why, now);
	}
}

/* Grant the longest prefix of waiters, in the policy's order, that may
 * run now, passing over those whose user used its cap (they wait for
 * their window, not for the holders). */
void sched_admit(struct sched *s, struct sched_gpu *g)
{
	uint64_t now = sched_now(s);
	const struct sched_member *w = NULL;
	size_t waiting = 0;

	sched_settle(s, g);
	sched_fair_charge(s, g, now);
	/* Budgets as of now, before the order and the drops read the
	 * classes: a waiter whose budget a change of the policy (or time)
	 * gave back goes first and preempts in this admission, not the
	 * next. */
	sched_class_budgets(s, g, now);
	g->slice_ms = sched_fair_slice(s, g);
	sched_fair_order(s, g, now);
	for (struct dlink *it = g->queue.next, *nx = it->next;
	     it != &g->queue; it = nx, nx = it->next) {
		struct sched_member *m = dl_entry(it, struct sched_member, q_link);

		m->cap_wait = sched_class_capped(s, m, now);
		if (m->cap_wait)
			continue;
		if (w == NULL && !fits(s, g, m))
			w = m;
		if (w != NULL) {
			waiting++;
			continue;
		}
		grant(s, m, now);
	}
	if (!dl_empty(&g->queue))
		g->blocked++; /* the waiters left wait for holders */
	if (g->n_holders > 0 && g->n_waiting > 0)
		sched_fair_number(g); /* the granted ones left the queue */
	update_contention(s, g, waiting, now);
	preempt(s, g, w, now);
	class_drops(s, g, w, now);
	publish(s, g);
}

/* Holders past the first that no longer fit (mode change, or a footprint
 * that grew) are told to drop, last granted first in line. */
void sched_enforce_fit(struct sched *s, struct sched_gpu *g, uint32_t reason)
{
	uint64_t now = sched_now(s), sum = 0, cap = 0;
	unsigned batch = 0, old = 0, blind = 0;
	size_t i = 0;

	sched_settle(s, g);
	if (g->mode == VS_MODE_OFF)
		return;
	ITER_HOLDERS(g, it, nx) {
		struct sched_member *h = dl_entry(it, struct sched_member, h_link);

		sum += h->fp;
		cap = sched_cap_min(cap, h->cap);
		batch += h->klass != VS_CLASS_INTERACTIVE;
		/* The first holder's gate must honour priority too, and
		 * know the capacity (sched_class_cohold). */
		old += h->c->proto < SCHED_PRIO_PROTO;
		blind += h->cap == 0;
		if (i++ > 0 && (g->mode == VS_MODE_ON ?
				old > 0 || blind > 0 ||
				!sched_class_cohold_ok(s, h, batch, sum, cap) :
				sum > cap))
			sched_hard_drop(s, h, reason, now);
	}
}

/* ---- clients ---- */
