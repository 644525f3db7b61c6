/*
 * Latency classes, interactive budgets and caps: bookkeeping below
 * sched.c, like sched_fair.c. It reads and charges, and it asks for drops
 * (sched_hard_drop); it never grants, so admission stays the one place
 * that grants, and sched.c the one that drops.
 *
 * It decides which holders must go (sched_class_drop); sched.c sends the
 * drops. It also says which grants are paced (sched_class_grant_flags)
 * and which GPUs keep their lock word shut for it (sched_class_paced).
 *
 * A member is interactive when its client asked for the class, its user
 * may have it, and its user is within its budget on the GPU: the time its
 * programs held the GPU as interactive while others waited, over the last
 * half-life (a sliding window, as the cap's), as a share of that
 * half-life. A window and not a decayed sum: a decayed share starts from
 * nothing, so a newcomer that claims interactive and computes non-stop
 * would hold a third of its first minute before the budget stopped it;
 * the window bounds every half-life, the first too. Past the budget its
 * programs count as batch until the share falls below nine tenths of the
 * budget, so that a program at the edge does not flip at every
 * decision.
 *
 * The class as a whole is bounded too: the interactive time of every user
 * on a GPU while others waited, over the same window, may reach the
 * GPU's total_pct (interactive_total_pct); past it every program there
 * counts as batch, by fair share, until the class's share falls below
 * nine tenths of it. Budgets are per user, so without it N users (or one
 * user with N uids) each within its budget would take N budgets, all of
 * the GPU, from a batch job.
 *
 * A capped user's programs hold the GPU at most cap_pct of its wall time
 * over the last cap_window_ms, counted once however many of them hold at
 * once, and whether others wait or not.
 */
#include <string.h>

#include "sched_int.h"

/* A budget left is taken back at 9/10 of it. */
#define BUDGET_RESUME 0.9
/* A capped waiter is granted again once this much of its cap is free
 * (a twentieth, at least a slot): no grants of a few ms at the edge. */
#define CAP_SLACK_DIV 20u
/* The shortest time to a recheck of a budget or a cap, ms. */
#define RECHECK_MIN_MS 5u

void sched_client_set_class(struct sched_client *c, uint32_t klass)
{
	c->klass = klass <= VS_CLASS_MAX ? klass : VS_CLASS_BATCH;
}

void sched_client_set_proto(struct sched_client *c, uint32_t version)
{
	c->proto = version;
}

/* ---- the windows ---- */

/* A slot of a window window_ms wide, at least 1 ms. */
static uint64_t slot_ms(uint64_t window_ms)
{
	uint64_t w = window_ms / SCHED_WIN_N;

	return w ? w : 1;
}

/* The cap's slot. */
static uint64_t win_width(const struct sched *s)
{
	return slot_ms(s->cfg.cap_window_ms);
}

/* The budget's window is the half-life. */
static uint64_t budget_window_ms(const struct sched *s)
{
	return s->cfg.halflife_ms ? s->cfg.halflife_ms : 1;
}

static uint64_t iwin_width(const struct sched *s)
{
	return slot_ms(budget_window_ms(s));
}

static uint64_t budget_ms(const struct sched *s, const struct sched_client *c)
{
	uint32_t pct = c->cp.budget_pct ? c->cp.budget_pct : 100;

	return budget_window_ms(s) * pct / 100u;
}

/* The class's bound on g over the budget's window. */
static uint64_t total_ms(const struct sched *s, const struct sched_gpu *g)
{
	uint32_t pct = g->total_pct ? g->total_pct : 100;

	return budget_window_ms(s) * pct / 100u;
}

uint32_t sched_class_total_cfg(const struct sched_cfg *cfg,
			       const uint8_t uuid[VS_UUID_LEN])
{
	uint32_t pct = cfg->total_pct;

	for (size_t i = 0; i < cfg->n_gpus; i++)
		if ((cfg->gpus[i].set & SCHED_GCFG_TOTAL) &&
		    memcmp(cfg->gpus[i].uuid, uuid, VS_UUID_LEN) == 0)
			pct = cfg->gpus[i].total_pct;
	return pct ? pct : 100;
}

/* The window as of slot k: slots past its head are empty. A window of
 * another width (the configuration changed) starts again. */
static void win_advance(struct sched_win *w, uint64_t width, uint64_t k)
{
	if (w->width != width) {
		memset(w, 0, sizeof(*w));
		w->width = width;
		w->head = k;
		return;
	}
	if (k <= w->head)
		return;
	if (k - w->head >= SCHED_WIN_N)
		memset(w->ms, 0, sizeof(w->ms));
	else
		for (uint64_t i = w->head + 1; i <= k; i++)
			w->ms[i % SCHED_WIN_N] = 0;
	w->head = k;
}

/* Add the time held over [from, to) to the slots it covers. */
static void win_add(struct sched_win *w, uint64_t width, uint64_t from,
		    uint64_t to)
{
	if (to <= from)
		return;
	win_advance(w, width, (to - 1) / width);
	for (uint64_t k = from / width; k * width < to; k++) {
		uint64_t a = k * width > from ? k * width : from;
		uint64_t b = (k + 1) * width < to ? (k + 1) * width : to;

		if (k + SCHED_WIN_N > w->head)
			w->ms[k % SCHED_WIN_N] += (uint32_t)(b - a);
	}
}

/* The time held in the slots still in the window at `now`. A window of
 * another width than the one in force (cap_window_s or the half-life
 * changed) starts again, as win_advance empties it at the next charge:
 * its slots measured another window, and read as this one they could
 * add up to more than the window holds. */
static uint64_t win_sum(const struct sched_win *w, uint64_t width,
			uint64_t now)
{
	uint64_t kn, sum = 0;

	if (w->width == 0 || w->width != width)
		return 0;
	kn = now / w->width;
	for (uint64_t i = 0; i < SCHED_WIN_N && i <= w->head; i++) {
		uint64_t k = w->head - i;

		if (k + SCHED_WIN_N > kn)
			sum += w->ms[k % SCHED_WIN_N];
	}
	return sum;
}

/* The interactive time charged to u over the last half-life. */
static uint64_t budget_used_ms(const struct sched *s,
			       const struct sched_usage *u, uint64_t now)
{
	return win_sum(&u->iwin, iwin_width(s), now);
}

/* h's interactive time since its last charge, when it holds as
 * interactive while others wait (what its next charge adds), up to the
 * window: a holder nothing charged for long (hung, its drop unanswered)
 * has the whole window spent, not more. */
static uint64_t open_ms(const struct sched *s, const struct sched_member *h,
			uint64_t now)
{
	uint64_t open;

	if (h->state != SCHED_ST_HOLDING || h->klass != VS_CLASS_INTERACTIVE ||
	    !h->g->contended || now <= h->charged_at)
		return 0;
	open = now - h->charged_at;
	return open < budget_window_ms(s) ? open : budget_window_ms(s);
}

/* The open time of g's holders, of uid only or all (uid NULL), and in
 * *n (where not NULL) how many of them are interactive holders charged
 * as time passes, just charged or not: each charges its user's budget
 * and the class's total at the full rate, so n of them spend either n
 * times as fast. */
static uint64_t holders_open_ms(const struct sched *s,
				const struct sched_gpu *g, const uint32_t *uid,
				uint64_t now, uint64_t *n)
{
	uint64_t v = 0, k = 0;

	for (const struct dlink *it = g->holders.next; it != &g->holders;
	     it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		if (uid != NULL && h->c->cred.uid != *uid)
			continue;
		v += open_ms(s, h, now);
		k += g->contended && h->klass == VS_CLASS_INTERACTIVE;
	}
	if (n != NULL)
		*n = k;
	return v;
}

/* What is left of a budget, t ms, spent by n holders at once: the time
 * to its end, rounded up (never 0, which would be due at once). */
static uint64_t per_holder(uint64_t t, uint64_t n)
{
	return n > 1 ? (t + n - 1) / n : t;
}

/* The same as of now for the user of m (u, NULL: nothing charged yet),
 * with the open time of each of the user's holders of m's GPU: else a
 * deadline computed at another GPU's event, later than their charge,
 * would come that much too late. *n as holders_open_ms's. */
static uint64_t budget_now_ms(const struct sched *s,
			      const struct sched_usage *u,
			      const struct sched_member *m, uint64_t now,
			      uint64_t *n)
{
	return (u != NULL ? budget_used_ms(s, u, now) : 0) +
	       holders_open_ms(s, m->g, &m->c->cred.uid, now, n);
}

/* The same for the whole class on g: its window, with the open part of
 * each of its holders' interactive time. */
static uint64_t total_now_ms(const struct sched *s, const struct sched_gpu *g,
			     uint64_t now, uint64_t *n)
{
	return win_sum(&g->ciwin, iwin_width(s), now) +
	       holders_open_ms(s, g, NULL, now, n);
}

/* What the user of u held over the window, the open grant included. */
static uint64_t cap_used_ms(const struct sched *s, const struct sched_usage *u,
			    uint64_t now)
{
	uint64_t open = 0;

	if (u->n_held > 0 && now > u->held_since)
		open = now - u->held_since;
	if (open > s->cfg.cap_window_ms)
		open = s->cfg.cap_window_ms;
	return win_sum(&u->win, win_width(s), now) + open;
}

static uint64_t cap_ms(const struct sched *s, const struct sched_client *c)
{
	return (uint64_t)s->cfg.cap_window_ms * c->cp.cap_pct / 100u;
}

/* The cap of c's user as the newest policy has it: the same as cap_ms
 * but while a reload hands that policy to the user's clients. */
static uint64_t user_cap_ms(const struct sched *s, const struct sched_client *c)
{
	return (uint64_t)s->cfg.cap_window_ms * c->u->cp.cap_pct / 100u;
}

/* The part of a cap that must be free again before a capped waiter is
 * granted: a twentieth, at least a slot. */
static uint64_t cap_slack(const struct sched *s, const struct sched_client *c)
{
	uint64_t slack = cap_ms(s, c) / CAP_SLACK_DIV;

	return slack > win_width(s) ? slack : win_width(s);
}

/* Move the open grant of u's user into the window, up to now. */
static void cap_flush(const struct sched *s, struct sched_usage *u,
		      uint64_t now)
{
	if (u->n_held == 0 || now <= u->held_since)
		return;
	win_add(&u->win, win_width(s), u->held_since, now);
	u->held_since = now;
}

/* ---- members ---- */

static struct sched_usage *usage_of(const struct sched_member *m)
{
	return sched_usage_find(m->g, m->c->cred.uid);
}

uint32_t sched_class_of(const struct sched *s, const struct sched_member *m)
{
	const struct sched_usage *u;

	(void)s;
	if (m->c->klass != VS_CLASS_INTERACTIVE || !m->c->cp.interactive ||
	    m->g->total_over)
		return VS_CLASS_BATCH;
	u = usage_of(m);
	return u != NULL && u->over ? VS_CLASS_BATCH : VS_CLASS_INTERACTIVE;
}

uint32_t sched_class_in_force(const struct sched *s,
			      const struct sched_member *m)
{
	uint32_t k = sched_class_of(s, m);

	/* A holder keeps its grant's class, or batch once its budget ran
	 * out or its user lost the class: the next sched_class_drop makes
	 * its klass say so. */
	if (m->state == SCHED_ST_HOLDING && m->klass < k)
		return m->klass;
	return k;
}

/* A member of g other than `not` whose class in force is interactive. */
static int interactive_beside(const struct sched *s, const struct sched_gpu *g,
			      const struct sched_member *not)
{
	for (const struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		const struct sched_member *o =
			dl_entry(it, const struct sched_member, m_link);

		if (o != not &&
		    sched_class_in_force(s, o) == VS_CLASS_INTERACTIVE)
			return 1;
	}
	return 0;
}

uint32_t sched_class_grant_flags(const struct sched *s,
				 const struct sched_member *m)
{
	if (m->g->mode == VS_MODE_OFF || m->klass != VS_CLASS_BATCH)
		return 0;
	return interactive_beside(s, m->g, m) ? VS_GRANTF_PACE : 0;
}

int sched_class_cohold_ok(const struct sched *s, const struct sched_member *m,
			  unsigned batch, uint64_t sum, uint64_t cap)
{
	return s->lock != NULL && m->c->proto >= SCHED_PRIO_PROTO &&
	       batch <= 1 && cap != 0 && sum <= cap;
}

int sched_class_cohold(const struct sched *s, const struct sched_gpu *g,
		       const struct sched_member *m)
{
	unsigned batch = sched_class_of(s, m) != VS_CLASS_INTERACTIVE;

	/* Every member of the group knows the GPU's capacity (its view is
	 * not 0): a fit decided on one holder's view alone would be lost
	 * with it when it leaves. */
	if (m->cap == 0)
		return 0;
	for (const struct dlink *it = g->holders.next; it != &g->holders;
	     it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		/* A holder on its way out (a drop pending), one whose gate
		 * does not know priority, or one with no view of the
		 * capacity: wait for the hand-off. */
		if (h->hard || h->c->proto < SCHED_PRIO_PROTO || h->cap == 0)
			return 0;
		batch += h->klass != VS_CLASS_INTERACTIVE;
	}
	return sched_class_cohold_ok(s, m, batch, g->held_fp + m->fp,
				     sched_cap_group(g, m));
}

uint32_t sched_class_prio(const struct sched *s, const struct sched_gpu *g,
			  uint32_t *n)
{
	uint32_t pct = 0;

	*n = 0;
	if (g->mode == VS_MODE_OFF)
		return 0;
	for (const struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		const struct sched_member *o =
			dl_entry(it, const struct sched_member, m_link);
		uint32_t b = o->c->cp.budget_pct ? o->c->cp.budget_pct : 100;

		if (sched_class_in_force(s, o) != VS_CLASS_INTERACTIVE)
			continue;
		(*n)++;
		if (b > pct)
			pct = b > 100 ? 100 : b;
	}
	return pct;
}

int sched_class_paced(const struct sched *s, const struct sched_gpu *g)
{
	return g->mode != VS_MODE_OFF && g->n_members > 1 &&
	       interactive_beside(s, g, NULL);
}

int sched_class_capped(const struct sched *s, const struct sched_member *m,
		       uint64_t now)
{
	const struct sched_usage *u;
	uint64_t cap;

	if (m->c->cp.cap_pct == 0)
		return 0;
	u = usage_of(m);
	if (u == NULL)
		return 0;
	cap = cap_ms(s, m->c);
	/* Another of its programs holds: it may join within the cap. */
	if (u->n_held > 0)
		return cap_used_ms(s, u, now) >= cap;
	return cap_used_ms(s, u, now) + cap_slack(s, m->c) > cap;
}

void sched_class_granted(struct sched *s, struct sched_member *m, uint64_t now)
{
	struct sched_usage *u;

	m->klass = sched_class_of(s, m);
	m->g->st.class_grants[m->klass]++;
	if (m->c->cp.cap_pct == 0)
		return;
	u = sched_usage_get(s, m->g, m->c->cred.uid, now);
	if (u == NULL)
		return; /* out of memory: this grant goes uncounted */
	if (u->n_held++ == 0)
		u->held_since = now;
	m->cap_held = 1;
}

void sched_class_unheld(struct sched *s, struct sched_member *m, uint64_t now)
{
	struct sched_usage *u;

	if (!m->cap_held)
		return;
	m->cap_held = 0;
	u = usage_of(m);
	if (u == NULL || u->n_held == 0)
		return;
	cap_flush(s, u, now);
	u->n_held--;
}

void sched_class_charge(const struct sched *s, struct sched_member *m,
			struct sched_usage *u, uint64_t dt, uint64_t now)
{
	if (m->klass != VS_CLASS_INTERACTIVE)
		return;
	win_add(&u->iwin, iwin_width(s), now > dt ? now - dt : 0, now);
	win_add(&m->g->ciwin, iwin_width(s), now > dt ? now - dt : 0, now);
}

void sched_class_member(struct sched_gpu *g, const struct sched_client *c,
			int delta)
{
	if (c->cp.cap_pct == 0)
		return;
	if (delta > 0)
		g->n_capped++;
	else if (g->n_capped > 0)
		g->n_capped--;
}

/* ---- decisions ---- */

/* Budgets of the GPU's interactive members and the class's total, as
 * of now (charged). */
void sched_class_budgets(const struct sched *s, struct sched_gpu *g,
			 uint64_t now)
{
	uint64_t tused = win_sum(&g->ciwin, iwin_width(s), now);
	uint64_t t = total_ms(s, g);

	if (tused >= t)
		g->total_over = 1;
	else if ((double)tused < (double)t * BUDGET_RESUME)
		g->total_over = 0;
	for (struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		const struct sched_member *m =
			dl_entry(it, struct sched_member, m_link);
		struct sched_usage *u;
		uint64_t used, b;

		if (m->c->klass != VS_CLASS_INTERACTIVE || !m->c->cp.interactive)
			continue;
		u = usage_of(m);
		if (u == NULL)
			continue;
		used = budget_used_ms(s, u, now);
		b = budget_ms(s, m->c);
		if (used >= b)
			u->over = 1;
		else if ((double)used < (double)b * BUDGET_RESUME)
			u->over = 0;
	}
}

uint32_t sched_class_drop(const struct sched *s, struct sched_member *h,
			  int waiters, int preempt, uint64_t now)
{
	struct sched_usage *u = usage_of(h);
	/* In mode on beside other holders only as interactive (a pair with
	 * one batch program, sched_class_cohold): lapsed to batch there, it
	 * goes whoever waits. */
	int beside = h->g->mode == VS_MODE_ON &&
		     h->g->n_holders - h->g->n_hard > 1;

	/* Its user lost the class (a reload, a changed policy): batch from
	 * now on, for the rest of its grant too, with no drop of its own
	 * unless it holds beside others in mode on. */
	if (h->klass == VS_CLASS_INTERACTIVE && !h->c->cp.interactive) {
		h->klass = VS_CLASS_BATCH;
		if (beside)
			return SCHED_DROP_CLASS;
	}
	if (h->klass == VS_CLASS_INTERACTIVE && u != NULL && u->over) {
		h->klass = VS_CLASS_BATCH;
		if (waiters || beside)
			return SCHED_DROP_BUDGET;
	}
	/* The class as a whole used the GPU's share: the same, for every
	 * user's interactive holder. */
	if (h->klass == VS_CLASS_INTERACTIVE && h->g->total_over) {
		h->klass = VS_CLASS_BATCH;
		if (waiters || beside)
			return SCHED_DROP_TOTAL;
	}
	/* Counted in a cap at its grant, but a cap lifted since (cap_ms 0)
	 * is no reason to drop it; nor is a cap that a reload lifts or
	 * raises for its user while it hands the new policy to the user's
	 * clients one at a time (the user's record has it first). */
	if (u != NULL && h->cap_held && h->c->cp.cap_pct != 0 &&
	    h->c->u->cp.cap_pct != 0) {
		uint64_t used;

		cap_flush(s, u, now);
		used = cap_used_ms(s, u, now);
		if (used >= cap_ms(s, h->c) && used >= user_cap_ms(s, h->c))
			return SCHED_DROP_CAP;
	}
	return preempt && h->klass == VS_CLASS_BATCH ? SCHED_DROP_CLASS : 0;
}

/* Due in t ms: now when nothing is left, else no sooner than the
 * shortest recheck (t may be a bound from below). */
static uint64_t at_least(uint64_t now, uint64_t t)
{
	if (t == 0)
		return now;
	return now + (t > RECHECK_MIN_MS ? t : RECHECK_MIN_MS);
}

/* When a capped waiter's user has its slack back: its oldest slots leave
 * the window in turn. */
static uint64_t cap_free_at(const struct sched *s, const struct sched_member *m,
			    uint64_t now)
{
	const struct sched_usage *u = usage_of(m);
	uint64_t cap = cap_ms(s, m->c), slack = cap_slack(s, m->c);
	uint64_t used, k;

	if (u == NULL || u->win.width == 0 || u->n_held > 0)
		return at_least(now, win_width(s));
	used = cap_used_ms(s, u, now);
	k = u->win.head >= SCHED_WIN_N - 1 ? u->win.head - (SCHED_WIN_N - 1) : 0;
	for (; k <= u->win.head && used + slack > cap; k++) {
		if (k + SCHED_WIN_N <= now / u->win.width)
			continue; /* already out */
		used -= u->win.ms[k % SCHED_WIN_N] < used ?
			u->win.ms[k % SCHED_WIN_N] : used;
		if (used + slack <= cap)
			return (k + SCHED_WIN_N) * u->win.width;
	}
	return at_least(now, u->win.width);
}

/* When a window's share is back under `resume` ms: its oldest slots
 * leave it in turn. Nothing is charged to it while its programs wait as
 * batch, so this is when, not a bound. */
static uint64_t back_at(const struct sched *s, const struct sched_win *w,
			double resume, uint64_t now)
{
	uint64_t width = iwin_width(s), used, k, out;

	used = win_sum(w, width, now);
	if ((double)used < resume || w->width != width)
		return now; /* back already: the admission says so */
	k = w->head >= SCHED_WIN_N - 1 ? w->head - (SCHED_WIN_N - 1) : 0;
	for (; k <= w->head; k++) {
		out = w->ms[k % SCHED_WIN_N];
		if (k + SCHED_WIN_N <= now / width)
			continue; /* already out */
		used -= out < used ? out : used;
		if ((double)used < resume)
			return (k + SCHED_WIN_N) * width;
	}
	return at_least(now, width);
}

/* When the user of a waiter past its budget has it back (its share
 * under BUDGET_RESUME of it). */
static uint64_t budget_back_at(const struct sched *s,
			       const struct sched_member *m, uint64_t now)
{
	const struct sched_usage *u = usage_of(m);

	if (u == NULL)
		return now;
	return back_at(s, &u->iwin, (double)budget_ms(s, m->c) * BUDGET_RESUME,
		       now);
}

uint64_t sched_class_deadline(const struct sched *s, const struct sched_gpu *g,
			      uint64_t now)
{
	uint64_t best = SCHED_NO_DEADLINE, d;
	const struct dlink *it;

	for (it = g->holders.next; it != &g->holders; it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);
		const struct sched_usage *u = usage_of(h);

		if (h->hard)
			continue;
		/* Only a grant counted in the cap is dropped at it
		 * (sched_class_drop): one granted before its user was capped
		 * has no cap deadline, which would be due at once and for
		 * ever. */
		if (u != NULL && h->cap_held && h->c->cp.cap_pct != 0) {
			uint64_t used = cap_used_ms(s, u, now), cap = cap_ms(s, h->c);

			d = at_least(now, used < cap ? cap - used : 0);
			best = d < best ? d : best;
		}
		/* Charged only while others wait: the time to the budget's
		 * end at the full rate of each of the user's holders here,
		 * and to the class's total at that of all of the class's, a
		 * bound from below. */
		if (h->klass == VS_CLASS_INTERACTIVE && g->contended) {
			uint64_t n, used = budget_now_ms(s, u, h, now, &n);
			uint64_t b = budget_ms(s, h->c);

			d = at_least(now, used < b ? per_holder(b - used, n) : 0);
			best = d < best ? d : best;
			used = total_now_ms(s, g, now, &n);
			b = total_ms(s, g);
			d = at_least(now, used < b ? per_holder(b - used, n) : 0);
			best = d < best ? d : best;
		}
	}
	for (it = g->queue.next; it != &g->queue; it = it->next) {
		const struct sched_member *m =
			dl_entry(it, const struct sched_member, q_link);

		const struct sched_usage *u = usage_of(m);

		/* Passed over for its cap: due when the cap has room, or
		 * now if it has already (an admission grants it). */
		if (m->cap_wait) {
			d = sched_class_capped(s, m, now) ?
			    cap_free_at(s, m, now) : now;
			best = d < best ? d : best;
		}
		/* Waiting as batch past its budget: due when the budget is
		 * back, to go first and preempt then, not at the holders'
		 * next event (a quantum away). */
		if (m->c->klass == VS_CLASS_INTERACTIVE && m->c->cp.interactive &&
		    u != NULL && u->over) {
			d = budget_back_at(s, m, now);
			best = d < best ? d : best;
		}
		/* The same past the class's total: due when it is back. */
		if (m->c->klass == VS_CLASS_INTERACTIVE && m->c->cp.interactive &&
		    g->total_over) {
			d = back_at(s, &g->ciwin,
				    (double)total_ms(s, g) * BUDGET_RESUME, now);
			best = d < best ? d : best;
		}
	}
	return best;
}

/* ---- views ---- */

double sched_class_budget_used(const struct sched *s,
			       const struct sched_member *m, uint64_t now)
{
	return (double)budget_now_ms(s, usage_of(m), m, now, NULL) * 100.0 /
	       (double)budget_window_ms(s);
}

double sched_class_cap_used(const struct sched *s,
			    const struct sched_member *m, uint64_t now)
{
	const struct sched_usage *u = usage_of(m);

	if (u == NULL || s->cfg.cap_window_ms == 0)
		return 0.0;
	return (double)cap_used_ms(s, u, now) * 100.0 /
	       (double)s->cfg.cap_window_ms;
}

double sched_class_total_used(const struct sched *s, const struct sched_gpu *g,
			      uint64_t now)
{
	return (double)total_now_ms(s, g, now, NULL) * 100.0 /
	       (double)budget_window_ms(s);
}
