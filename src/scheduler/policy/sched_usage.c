/*
 * Recent GPU time: records decayed exponentially with the configured
 * half-life, and each user's records on a GPU. Below the fair share
 * (sched_fair.c) and the classes (sched_class.c), which both keep their
 * accounts in them; it calls nothing of the policy.
 *
 * A user who held the GPU a minute ago counts for half of one who holds
 * it now. A record is kept after its user's last client leaves, until it
 * has decayed away, nobody of its user holds and its cap window is
 * empty: reconnecting resets nothing.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_int.h"

/* Records that decayed below this are forgotten (ms). */
#define USAGE_FORGET_MS 1.0

static double lambda(const struct sched *s)
{
	/* The half-life is range-checked by the configuration; a zero from
	 * a caller that built its own sched_cfg means "no memory". */
	uint32_t h = s->cfg.halflife_ms ? s->cfg.halflife_ms : 1;

	return M_LN2 / (double)h;
}

static double decayed(const struct sched *s, const struct sched_rec *r,
		      uint64_t now)
{
	if (now <= r->stamp)
		return r->v;
	return r->v * exp(-lambda(s) * (double)(now - r->stamp));
}

/* Time held over the last dt ms, decayed to now: the integral of the
 * decay over the interval, so charging often or rarely gives one sum. */
static double accrued(const struct sched *s, uint64_t dt)
{
	double l = lambda(s);

	return dt == 0 ? 0.0 : -expm1(-l * (double)dt) / l;
}

static void rec_add(const struct sched *s, struct sched_rec *r,
		    uint64_t dt, uint64_t now)
{
	r->v = decayed(s, r, now) + accrued(s, dt);
	r->stamp = now;
}

static struct sched_usage *usage_find(const struct sched_gpu *g, uint32_t uid)
{
	for (size_t i = 0; i < g->n_usage; i++)
		if (g->usage[i].uid == uid)
			return &g->usage[i];
	return NULL;
}

struct sched_usage *sched_usage_find(const struct sched_gpu *g, uint32_t uid)
{
	return usage_find(g, uid);
}

double sched_rec_now(const struct sched *s, const struct sched_rec *r,
		     uint64_t now)
{
	return decayed(s, r, now);
}

void sched_rec_add(const struct sched *s, struct sched_rec *r, uint64_t dt,
		   uint64_t now)
{
	rec_add(s, r, dt, now);
}

double sched_rec_accrued(const struct sched *s, uint64_t dt)
{
	return accrued(s, dt);
}

/* A window with nothing left in it at now. */
static int win_empty(const struct sched_win *w, uint64_t now)
{
	return w->width == 0 || now / w->width >= w->head + SCHED_WIN_N;
}

/* A record that can go: its times decayed away, nobody of its user holds,
 * and its windows are empty (a user cannot reset its cap or its
 * interactive budget by leaving). */
static int forgotten(const struct sched *s, const struct sched_usage *u,
		     uint64_t now)
{
	return decayed(s, &u->rec, now) < USAGE_FORGET_MS &&
	       u->n_held == 0 && win_empty(&u->win, now) &&
	       win_empty(&u->iwin, now);
}

struct sched_usage *sched_usage_get(const struct sched *s, struct sched_gpu *g,
				    uint32_t uid, uint64_t now)
{
	struct sched_usage *u = usage_find(g, uid);

	if (u != NULL)
		return u;
	/* Forget users whose time has decayed away before growing. */
	for (size_t i = 0; i < g->n_usage;) {
		if (forgotten(s, &g->usage[i], now))
			g->usage[i] = g->usage[--g->n_usage];
		else
			i++;
	}
	if (VS_GROW(g->usage, g->n_usage, g->cap_usage, 4) != 0)
		return NULL;
	u = &g->usage[g->n_usage++];
	memset(u, 0, sizeof(*u));
	u->uid = uid;
	u->rec.stamp = now;
	return u;
}
