/*
 * What the top hands to the layers it wires together (shim.c): the CUDA
 * side of the gate contract (gate.h), answered through the real entry
 * points, never the hooks, and the client's callbacks (client.h), which
 * reach the memory layer. The gate and the client call up only through
 * these tables.
 */
#include "client.h"
#include "ctx_track.h"
#include "cu_query.h"
#include "gate_ctl.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_cache.h"
#include "mem_reg.h"
#include "mem_state.h"
#include "shim_guard.h"
#include "shim_ops.h"
#include "vshare/proto.h"

/* Synchronize every context of the device this process has: the
 * contexts the hooks saw created or retained, and those seen current. */
static int ops_sync_device(int dev)
{
	__typeof__(&cuCtxPushCurrent_v2) push = REAL(cuCtxPushCurrent_v2);
	__typeof__(&cuCtxPopCurrent_v2) pop = REAL(cuCtxPopCurrent_v2);
	__typeof__(&cuCtxSynchronize) sync = REAL(cuCtxSynchronize);
	CUcontext ctxs[CTX_TRACK_MAX], old;
	int n, rc = 0, outer = shim_guard_enter();

	n = ctx_list(dev, ctxs, CTX_TRACK_MAX);
	for (int i = 0; i < n && push != NULL && pop != NULL && sync; i++) {
		CUresult r = push(ctxs[i]);

		if (r != CUDA_SUCCESS) {
			/* Destroyed behind the hooks' back: forget it. */
			ctx_untrack(ctxs[i]);
			continue;
		}
		r = sync();
		pop(&old);
		if (r == CUDA_ERROR_CONTEXT_IS_DESTROYED ||
		    r == CUDA_ERROR_DEINITIALIZED) {
			/* The program destroyed the context (or the driver is
			 * shutting down) while this release ran, as seen on an
			 * H200 when a program exits holding the lock: nothing
			 * is left to wait for, and nothing to warn about. */
			ctx_untrack(ctxs[i]);
			continue;
		}
		if (r != CUDA_SUCCESS) {
			log_once(LOG_LVL_WARN, "synchronizing a context of "
				 "GPU %d failed (CUDA error %d)", dev, (int)r);
			rc = -1;
		}
	}
	/* Frees that fell due, and a synchronization point as for the
	 * driver's pools. */
	mem_sync_point(dev);
	if (outer)
		shim_guard_leave();
	return rc;
}

static int ops_current_device(void)
{
	return cuq_current_device();
}

static int ops_stream_device(void *stream)
{
	return cuq_stream_device(stream);
}

static int ops_stream_capturing(void *stream)
{
	return cuq_stream_capturing(stream);
}

static void *ops_current_context(void)
{
	return cuq_current_context();
}

/* Pacing's marks (gate.h): events without timing, the cheapest kind,
 * made and queried under the rules of the shim's own calls (cu_query.h:
 * relaxed capture mode, no cancellation). */
static void *ops_mark_new(void)
{
	CUevent ev = NULL;

	if (CUQ(cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
		return NULL;
	return ev;
}

static int ops_mark_record(void *mark, void *stream)
{
	return CUQ(cuEventRecord, ((CUevent)mark, (CUstream)stream)) ==
	       CUDA_SUCCESS ? 0 : -1;
}

/* A refusal because of a capture says nothing of the mark: the pacing
 * wait gives up rather than loop on it. */
static int ops_mark_state(void *mark)
{
	CUresult r = CUQ(cuEventQuery, ((CUevent)mark));

	if (r == CUDA_ERROR_NOT_READY)
		return 0;
	return cuq_query_passed((int)r) ? 1 : -1;
}

static void ops_mark_free(void *mark)
{
	CUQ(cuEventDestroy_v2, ((CUevent)mark));
}

const struct gate_cuda_ops shim_gate_ops = {
	.current_device = ops_current_device,
	.stream_device = ops_stream_device,
	.device_info = cuq_device_info,
	.stream_capturing = ops_stream_capturing,
	.sync_device = ops_sync_device,
	.current_context = ops_current_context,
	.device_count = cuq_device_count,
	.track_context = cuq_track_current,
	.mark_new = ops_mark_new,
	.mark_record = ops_mark_record,
	.mark_state = ops_mark_state,
	.mark_free = ops_mark_free,
};

/* Prefetch outside any hook of this thread (the client thread): the
 * driver calls it makes pass straight through. The bytes moved. */
static uint64_t prefetch(int dev, int to_host)
{
	int outer = shim_guard_enter();
	uint64_t bytes = mem_prefetch_device(dev, to_host,
					     mem_conf.swap_streams);

	if (outer)
		shim_guard_leave();
	return bytes;
}

/* An oversubscribed grant: swap in before the first kernel runs, one bulk
 * prefetch being several times faster than the page faults it replaces.
 * Its cost (the prefetch waits for the copies) goes to the scheduler,
 * which lengthens the slice when swaps would take too much of the GPU. */
static void cb_granted(void *arg, int dev, uint32_t flags,
		       struct client_swap *swap)
{
	uint64_t t0;

	(void)arg;
	if (!(flags & VS_GRANTF_OVERSUB))
		return;
	t0 = gate_now_ns();
	swap->bytes = prefetch(dev, 0);
	swap->us = (gate_now_ns() - t0) / 1000u;
}

/* VSHARE_SWAP_OUT=eager: the next holder finds the GPU's memory free.
 * What it moved, and how long that took, goes to the scheduler. */
static void cb_released(void *arg, int dev, int swap_out,
			struct client_swap *swap)
{
	uint64_t t0;

	(void)arg;
	if (!swap_out)
		return;
	t0 = gate_now_ns();
	swap->bytes = prefetch(dev, 1);
	swap->us = (gate_now_ns() - t0) / 1000u;
}

static void cb_footprint(void *arg, int dev, uint64_t *managed,
			 uint64_t *pinned)
{
	(void)arg;
	mreg_usage(dev, managed, pinned);
}

static void cb_policy(void *arg, uint64_t mem_limit)
{
	(void)arg;
	mem_set_policy_limit(mem_limit);
}

void shim_gpu_opened(int dev)
{
	if (gate_prepare(dev) == 0)
		client_prepare(dev);
}

const struct client_callbacks shim_client_cbs = {
	.granted = cb_granted,
	.released = cb_released,
	.footprint = cb_footprint,
	.policy = cb_policy,
};
