/*
 * The gate's controls (gate_ctl.h): opening a gate for a grant, taking a
 * GPU away from this process in the order of closing, draining and
 * synchronizing that makes a release safe, running unshared, and the
 * readers the controller decides with. Called on the client thread.
 */
#include <string.h>

#include "atomics.h"
#include "gate_int.h"
#include "log.h"

static struct gate_gpu *gpu_of(int dev)
{
	return dev >= 0 && dev < GATE_MAX_GPUS ? &gate_g.gpu[dev] : NULL;
}

void gate_grant(int dev)
{
	struct gate_gpu *g = gpu_of(dev);

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->mu);
	/* A fresh holder counts as active, so an idle drop that follows the
	 * grant does not take the GPU before its waiters have run. */
	__atomic_store_n(&g->shard[0].last_ms, gate_now_ms(), __ATOMIC_RELAXED);
	gate_open_locked(g);
	pthread_mutex_unlock(&g->mu);
}

void gate_open_unshared(int dev)
{
	struct gate_gpu *g = gpu_of(dev);

	if (g == NULL)
		return;
	gate_pace(dev, 0);
	pthread_mutex_lock(&g->mu);
	gate_open_locked(g);
	pthread_mutex_unlock(&g->mu);
}

int gate_set_unshared(int on)
{
	int was = A_XCHG(&gate_g.failopen, on ? 1 : 0);

	if (!on)
		return was;
	/* Unshared, nobody waits for this process's work. */
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		gate_pace(i, 0);
	gate_open_all();
	return was;
}

/* A synchronize while a stream is being captured (global mode) would
 * invalidate the capture, so a release first lets captures finish. The
 * gate stays open meanwhile: a capturing thread may need to submit other
 * work before it can end its capture. */
static int wait_no_capture(void)
{
	pthread_mutex_lock(&gate_g.cap_mu);
	while (A_LOAD(&gate_g.captures) > 0 && !A_LOAD(&gate_g.shutting))
		pthread_cond_wait(&gate_g.cap_cv, &gate_g.cap_mu);
	pthread_mutex_unlock(&gate_g.cap_mu);
	return A_LOAD(&gate_g.shutting) ? -1 : 0;
}

/* Close the gate and wait until no call is inside it and no capture is in
 * progress. Returns 0 with the gate DRAINING, 1 if it was not open (left
 * as it is), -1 on shutdown (open). */
static int close_and_drain(struct gate_gpu *g)
{
	for (;;) {
		if (wait_no_capture() != 0)
			return -1;
		pthread_mutex_lock(&g->mu);
		if (A_LOAD(&g->state) != GATE_OPEN) {
			pthread_mutex_unlock(&g->mu);
			return 1;
		}
		/* Store, then check in-flight: the mirror of gate_enter. */
		A_STORE(&g->state, GATE_DRAINING);
		while (gate_inflight(g) > 0 && !A_LOAD(&gate_g.shutting))
			pthread_cond_wait(&g->cv_drain, &g->mu);
		if (A_LOAD(&gate_g.shutting)) {
			gate_open_locked(g);
			pthread_mutex_unlock(&g->mu);
			return -1;
		}
		if (A_LOAD(&gate_g.captures) == 0) {
			pthread_mutex_unlock(&g->mu);
			return 0;
		}
		/* A capture began while the gate was closing: let it end
		 * with the gate open, then try again. */
		gate_open_locked(g);
		pthread_mutex_unlock(&g->mu);
	}
}

int gate_take(int dev)
{
	struct gate_gpu *g = gpu_of(dev);
	uint64_t t0 = gate_now_ns(), t1;
	int rc;

	if (g == NULL)
		return 1;
	rc = close_and_drain(g);
	if (rc != 0)
		return rc;
	t1 = gate_now_ns();
	if (gate_g.ops->sync_device(dev) != 0)
		log_once(LOG_LVL_WARN, "synchronizing GPU %d before a release "
			 "failed; releasing anyway", dev);
	pthread_mutex_lock(&g->mu);
	A_STORE(&g->state, GATE_CLOSED);
	pthread_mutex_unlock(&g->mu);
	/* Where a hand-over's time goes (docs/gate.md, "Where a preemption's
	 * time goes"): calls still inside the gate, then the queued work. */
	log_debug("GPU %d taken: calls in flight done in %.2f ms, queued work "
		  "drained in %.2f ms", dev, (double)(t1 - t0) / 1e6,
		  (double)(gate_now_ns() - t1) / 1e6);
	return 0;
}

int gate_gpu_info(int dev, uint8_t uuid[16], uint64_t *total_mem)
{
	struct gate_gpu *g = gpu_of(dev);
	int known;

	if (g == NULL)
		return 0;
	pthread_mutex_lock(&g->mu);
	known = g->known;
	if (known) {
		memcpy(uuid, g->uuid, VS_UUID_LEN);
		*total_mem = g->total_mem;
	}
	pthread_mutex_unlock(&g->mu);
	return known;
}

int gate_waiting(int dev)
{
	struct gate_gpu *g = gpu_of(dev);
	int n;

	if (g == NULL)
		return 0;
	pthread_mutex_lock(&g->mu);
	n = g->waiters;
	pthread_mutex_unlock(&g->mu);
	return n;
}

void gate_activity(int dev, long *inflight, uint64_t *last_ms)
{
	struct gate_gpu *g = gpu_of(dev);

	*inflight = g != NULL ? gate_inflight(g) : 0;
	*last_ms = g != NULL ? gate_last_ms(g) : 0;
}

void gate_use_activity(int dev, long *syncs, uint64_t *unfinished_ms)
{
	struct gate_gpu *g = gpu_of(dev);

	*syncs = g != NULL ? gate_syncs(g) : 0;
	*unfinished_ms = g != NULL ? gate_unfinished_ms(g) : 0;
}

uint32_t gate_gap_ms(int dev)
{
	struct gate_gpu *g = gpu_of(dev);

	return g != NULL ? gate_gap_of(g) : GATE_GAP_UNKNOWN;
}

uint32_t gate_clock_step_ms(void)
{
	static uint32_t step; /* atomic: 0 until measured */
	struct timespec ts;
	uint32_t v = A_LOAD_RLX(&step);

	if (v != 0)
		return v;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		ts.tv_sec = 0, ts.tv_nsec = 4000000;
	v = (uint32_t)((uint64_t)ts.tv_sec * 1000u +
		       ((uint64_t)ts.tv_nsec + 999999u) / 1000000u);
	v = v ? v : 1;
	__atomic_store_n(&step, v, __ATOMIC_RELAXED);
	return v;
}

int gate_shutting(void)
{
	return A_LOAD(&gate_g.shutting);
}

int gate_enabled(void)
{
	return A_LOAD(&gate_g.enabled);
}
