/*
 * A configuration reloaded while the policy runs (SIGHUP): the settings
 * that may change under running clients, and the GPUs they affect now.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

/* The capacity setting a configuration gives one GPU (0: none). */
static uint64_t cap_setting(const struct sched_gpu_cfg *t, size_t n,
			    uint64_t dflt, const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < n; i++)
		if ((t[i].set & SCHED_GCFG_CAP) &&
		    memcmp(t[i].uuid, uuid, VS_UUID_LEN) == 0)
			return t[i].capacity;
	return dflt;
}

/* A GPU whose capacity setting changed gets it now: what no longer fits
 * is dropped, what now fits is admitted. */
static void recap(struct sched *s, const struct sched_cfg *cfg)
{
	for (size_t i = 0; i < s->n_gpus; i++) {
		struct sched_gpu *g = s->gpus[i];
		uint64_t was = cap_setting(s->gcfg, s->cfg.n_gpus,
					   s->cfg.capacity, g->uuid);
		uint64_t cap = cap_setting(cfg->gpus, cfg->n_gpus,
					   cfg->capacity, g->uuid), old;

		if (cap == was)
			continue;
		old = g->capacity;
		g->cap_cfg = cap;
		g->capacity = sched_capacity_of(g->total_mem, cap);
		if (g->capacity < old)
			sched_enforce_fit(s, g, VS_DROP_CAPACITY);
		sched_admit(s, g);
	}
}

int sched_reconfigure(struct sched *s, const struct sched_cfg *cfg)
{
	struct sched_gpu_cfg *t = NULL;

	if (cfg->n_gpus > 0) {
		t = calloc(cfg->n_gpus, sizeof(*t));
		if (t == NULL)
			return -1;
		memcpy(t, cfg->gpus, cfg->n_gpus * sizeof(*t));
	}
	recap(s, cfg);
	free(s->gcfg);
	s->gcfg = t;
	s->cfg.gpus = t;
	s->cfg.n_gpus = cfg->n_gpus;
	s->cfg.capacity = cfg->capacity;
	s->cfg.grace_ms = cfg->grace_ms;
	s->cfg.skip_unresponsive = cfg->skip_unresponsive;
	return 0;
}
