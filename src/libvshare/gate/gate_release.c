/*
 * Taking a GPU away from this process: the order of closing, draining,
 * synchronizing and swapping out that makes a release safe. Runs on the
 * client thread.
 */
#include "gate_int.h"
#include "log.h"

#define A_LOAD(p)      __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

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

static void reopen_locked(struct gate_gpu *g)
{
	A_STORE(&g->state, GATE_OPEN);
	pthread_cond_broadcast(&g->cv_open);
}

/* Close the gate and wait until no call is inside it and no capture is in
 * progress. Returns 0 with the gate DRAINING, -1 on shutdown (open). */
static int close_and_drain(struct gate_gpu *g)
{
	for (;;) {
		if (wait_no_capture() != 0)
			return -1;
		pthread_mutex_lock(&g->mu);
		/* Store, then check in-flight: the mirror of gate_enter. */
		A_STORE(&g->state, GATE_DRAINING);
		while (gate_inflight(g) > 0 && !A_LOAD(&gate_g.shutting))
			pthread_cond_wait(&g->cv_drain, &g->mu);
		if (A_LOAD(&gate_g.shutting)) {
			reopen_locked(g);
			pthread_mutex_unlock(&g->mu);
			return -1;
		}
		if (A_LOAD(&gate_g.captures) == 0) {
			pthread_mutex_unlock(&g->mu);
			return 0;
		}
		/* A capture began while the gate was closing: let it end
		 * with the gate open, then try again. */
		reopen_locked(g);
		pthread_mutex_unlock(&g->mu);
	}
}

int gate_drain(int dev)
{
	struct gate_gpu *g = &gate_g.gpu[dev];
	const struct gate_cuda_ops *ops = gate_g.ops;

	if (close_and_drain(g) != 0)
		return -1;
	if (ops->sync_device(dev) != 0)
		log_once(LOG_LVL_WARN, "synchronizing GPU %d before a release "
			 "failed; releasing anyway", dev);
	if (gate_g.conf.swap_eager)
		ops->prefetch(dev, 1);
	pthread_mutex_lock(&g->mu);
	A_STORE(&g->state, GATE_CLOSED);
	pthread_mutex_unlock(&g->mu);
	return 0;
}
