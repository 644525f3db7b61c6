/*
 * A small world for the policy's tests, on the fixture's fake clock and
 * GPU_A: programs that obey the policy's drops the way the shim does (release at
 * once on a hard drop after a drain, when idle on an idle drop), stepped
 * every STEP_MS, measuring what each program got and how long it waited.
 */
#ifndef VSHARE_SCHED_WORLD_H
#define VSHARE_SCHED_WORLD_H

#include <stdint.h>

#include "policy_fixture.h"

#define STEP_MS 5u

/* One program of the world. */
enum kind { TRAIN, BURSTY, HUNG };
struct prog {
	struct sched_client *c;
	enum kind kind;
	uint32_t uid;
	int holding, waiting, drop, release_at_set;
	uint64_t release_at;      /* when a pending release goes out */
	uint64_t next_burst;      /* BURSTY: when it wants the GPU_A next */
	uint64_t burst_end;       /* BURSTY: end of the burst it runs */
	uint64_t asked;           /* when its current wait started */
	uint64_t held_ms;         /* GPU_A time it got */
	uint64_t held_int_ms;     /* of it, in the interactive class */
	uint64_t max_wait, waits, sum_wait, n_over;
	uint64_t first_wait;
};

struct world {
	struct sched *s;
	struct prog p[16];
	int n;
	uint32_t gap_ms, burst_ms, drain_ms, idle_ms;
};

/* The fair share's settings of the tests: mode on, quantum 30 s, slice
 * 1 s, half-life 60 s. */
struct sched_cfg fair_cfg(uint32_t policy);
void world_init(struct world *w, const struct sched_cfg *cfg);
struct prog *add(struct world *w, enum kind kind, uint32_t uid);
/* The program asks for a class; its user's policy (interactive allowed,
 * budget, cap) is set on it. */
void add_class(struct world *w, struct prog *p, uint32_t klass,
	       int allowed, uint32_t budget_pct, uint32_t cap_pct);
void ask(struct world *w, struct prog *p);
/* Deliver the outbox: grants start holders, drops schedule releases. */
void deliver(struct world *w);
void release(struct world *w, struct prog *p);
/* One program's step at now_ms. */
void act(struct world *w, struct prog *p);
void run(struct world *w, uint64_t until);
uint64_t uid_held(const struct world *w, uint32_t uid);
void reset_counts(struct world *w);

#endif
