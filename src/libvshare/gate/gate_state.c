/*
 * The gate's state and what every part of the gate reads or changes it
 * with: the clocks, the in-flight count and activity stamp, opening. The
 * fast path (gate.c), the slow wait (gate_wait.c) and the controls
 * (gate_ctl.c) build on this file and never call each other back.
 */
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "atomics.h"
#include "gate_int.h"

struct gate_global gate_g = {
	.cap_mu = PTHREAD_MUTEX_INITIALIZER,
	.cap_cv = PTHREAD_COND_INITIALIZER,
};

uint64_t gate_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t gate_now_ms(void)
{
	return gate_clock_ms();
}

void gate_gpu_init(struct gate_gpu *g)
{
	memset(g, 0, sizeof(*g));
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv_open, NULL);
	pthread_cond_init(&g->cv_drain, NULL);
	pthread_mutex_init(&g->prio_mu, NULL);
}

long gate_inflight(struct gate_gpu *g)
{
	long n = 0;

	/* Read after the releaser's store of the closed state: every entry
	 * that saw the gate open has its increment before that store, so it
	 * is counted here until its exit. */
	for (int i = 0; i < GATE_SHARDS; i++)
		n += A_LOAD(&g->shard[i].inflight);
	return n;
}

long gate_syncs(struct gate_gpu *g)
{
	long n = 0;

	/* Acquire: a wait that is over left its stamp before its count
	 * came down (gate_sync_end). */
	for (int i = 0; i < GATE_SHARDS; i++)
		n += __atomic_load_n(&g->shard[i].syncs, __ATOMIC_ACQUIRE);
	return n;
}

/* The latest of a coarse stamp that each shard keeps (at byte `off` of
 * struct gate_shard, a uint64_t). */
static uint64_t shard_latest(struct gate_gpu *g, size_t off)
{
	uint64_t last = 0;

	for (int i = 0; i < GATE_SHARDS; i++) {
		uint64_t t = A_LOAD_RLX((uint64_t *)((char *)&g->shard[i] + off));

		if (t > last)
			last = t;
	}
	return last;
}

uint64_t gate_unfinished_ms(struct gate_gpu *g)
{
	return shard_latest(g, offsetof(struct gate_shard, unfinished_ms));
}

uint32_t gate_gap_of(struct gate_gpu *g)
{
	uint32_t gap = 0, n = 0;

	for (int i = 0; i < GATE_SHARDS; i++) {
		uint32_t t = A_LOAD_RLX(&g->shard[i].gap_ms);

		n += A_LOAD_RLX(&g->shard[i].gap_n);
		if (t > gap)
			gap = t;
	}
	return n >= GATE_GAP_SAMPLES ? gap : GATE_GAP_UNKNOWN;
}

uint64_t gate_last_ms(struct gate_gpu *g)
{
	return shard_latest(g, offsetof(struct gate_shard, last_ms));
}

void gate_open_locked(struct gate_gpu *g)
{
	A_STORE(&g->state, GATE_OPEN);
	pthread_cond_broadcast(&g->cv_open);
	pthread_cond_broadcast(&g->cv_drain);
}

void gate_open_all(void)
{
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		struct gate_gpu *g = &gate_g.gpu[i];

		pthread_mutex_lock(&g->mu);
		if (g->known || g->waiters)
			gate_open_locked(g);
		else
			pthread_cond_broadcast(&g->cv_drain);
		pthread_mutex_unlock(&g->mu);
	}
}
