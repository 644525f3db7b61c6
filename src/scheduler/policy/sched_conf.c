/*
 * A configuration reloaded while the policy runs (SIGHUP). A setting
 * applies to the GPUs already known only where its value in the file
 * changed, so that a reload does not undo what an admin set at run time.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

struct eff {
	uint32_t tq_ms, mode, slice_ms;
	uint64_t cap;
	int trusted;            /* the GPU's own capacity, not the default */
};

/* What a configuration gives one GPU: its own entry over the defaults. */
static struct eff effective(const struct sched_cfg *c,
			    const uint8_t uuid[VS_UUID_LEN])
{
	struct eff e = { c->tq_ms, c->mode, c->min_slice_ms, c->capacity, 0 };

	for (size_t i = 0; i < c->n_gpus; i++) {
		const struct sched_gpu_cfg *gc = &c->gpus[i];

		if (memcmp(gc->uuid, uuid, VS_UUID_LEN) != 0)
			continue;
		if (gc->set & SCHED_GCFG_TQ)
			e.tq_ms = gc->tq_ms;
		if (gc->set & SCHED_GCFG_MODE)
			e.mode = gc->mode;
		if (gc->set & SCHED_GCFG_SLICE)
			e.slice_ms = gc->min_slice_ms;
		if (gc->set & SCHED_GCFG_CAP) {
			e.cap = gc->capacity;
			e.trusted = gc->capacity != 0;
		}
	}
	return e;
}

/* A new capacity: what no longer fits is dropped, what fits is admitted. */
static void recap(struct sched *s, struct sched_gpu *g, const struct eff *e)
{
	g->cap_cfg = e->cap;
	g->trusted = e->trusted;
	sched_cap_refresh(g);
	sched_enforce_fit(s, g, VS_DROP_CAPACITY);
	sched_admit(s, g);
}

static void apply(struct sched *s, const struct sched_cfg *old,
		  const struct sched_cfg *cfg)
{
	/* The fair share's, the budgets' and the caps' constants apply at
	 * once: they are no admin's run-time choice. Before the GPUs'
	 * changes below, whose decisions (a mode's drops, a capacity's)
	 * must not measure a cap or a budget against the old window. */
	s->cfg.halflife_ms = cfg->halflife_ms;
	s->cfg.preempt_pct = cfg->preempt_pct;
	s->cfg.preempt_budget_pct = cfg->preempt_budget_pct;
	s->cfg.budget_pct = cfg->budget_pct;
	s->cfg.total_pct = cfg->total_pct;
	s->cfg.cap_window_ms = cfg->cap_window_ms;
	for (size_t i = 0; i < s->n_gpus; i++) {
		struct sched_gpu *g = s->gpus[i];
		struct eff o = effective(old, g->uuid), n = effective(cfg, g->uuid);

		if (n.cap != o.cap || n.trusted != o.trusted)
			recap(s, g, &n);
		if (n.tq_ms != o.tq_ms)
			g->tq_ms = n.tq_ms;
		if (n.slice_ms != o.slice_ms)
			g->min_slice_ms = n.slice_ms;
		/* No admin changes it at run time: the file's value. */
		g->total_pct = sched_class_total_cfg(cfg, g->uuid);
		if (cfg->policy != old->policy)
			g->policy = cfg->policy;
		if (n.mode != o.mode)
			sched_gpu_mode(s, g, n.mode);
	}
	if (cfg->tq_ms != old->tq_ms)
		s->cfg.tq_ms = cfg->tq_ms;
	if (cfg->mode != old->mode)
		s->cfg.mode = cfg->mode;
	if (cfg->min_slice_ms != old->min_slice_ms)
		s->cfg.min_slice_ms = cfg->min_slice_ms;
	if (cfg->policy != old->policy)
		s->cfg.policy = cfg->policy;
	for (size_t i = 0; i < s->n_gpus; i++)
		sched_admit(s, s->gpus[i]);
}

int sched_reconfigure(struct sched *s, const struct sched_cfg *old,
		      const struct sched_cfg *cfg)
{
	struct sched_gpu_cfg *t = NULL;

	if (cfg->n_gpus > 0) {
		t = calloc(cfg->n_gpus, sizeof(*t));
		if (t == NULL)
			return -1;
		memcpy(t, cfg->gpus, cfg->n_gpus * sizeof(*t));
	}
	apply(s, old, cfg);
	free(s->gcfg);
	s->gcfg = t;
	s->cfg.gpus = t;
	s->cfg.n_gpus = cfg->n_gpus;
	s->cfg.capacity = cfg->capacity;
	s->cfg.grace_ms = cfg->grace_ms;
	s->cfg.uid_gpus = cfg->uid_gpus;
	s->cfg.uid_requests = cfg->uid_requests;
	s->cfg.skip_unresponsive = cfg->skip_unresponsive;
	return 0;
}

void sched_defaults(const struct sched *s, uint32_t *tq_ms, uint32_t *mode)
{
	*tq_ms = s->cfg.tq_ms;
	*mode = s->cfg.mode;
}
