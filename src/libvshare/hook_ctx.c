/*
 * Context hooks: remember every context this process has on a device, so
 * that releasing the GPU can synchronize all of them.
 */
#include "ctx_track.h"
#include "hook_body.h"
#include "mem_state.h"
#include "shim_ops.h"

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	HOOK_ENTER(cuDevicePrimaryCtxRetain, (pctx, dev));
	r_ = real_(pctx, dev);
	if (r_ == CUDA_SUCCESS) {
		ctx_track(*pctx, (int)dev, 1);
		shim_gpu_opened((int)dev);
	}
	HOOK_LEAVE();
}

/* A context is about to go (ctx NULL: every context of dev): what the
 * memory layer keeps of it (cached blocks, deferred frees, staging
 * buffers) goes first, while the context still exists; once the driver
 * destroyed it, its memory stops counting (mem_state.h). */

static CUresult primary_release(CUresult (*real)(CUdevice), CUdevice dev)
{
	CUcontext primary;
	CUresult r;
	int last;

	/* The last release destroys the context, and with it its memory, the
	 * cached stream-ordered blocks and the pinned staging buffers; its
	 * handle may come back with the next retain, so what the shim keeps
	 * of it goes first (an early drop only costs new allocations). */
	primary = ctx_primary_of((int)dev);
	last = primary != NULL && ctx_primary_refs(primary) <= 1;
	if (last)
		mem_ctx_closing(primary, (int)dev);
	r = real(dev);
	if (r == CUDA_SUCCESS) {
		ctx_primary_release((int)dev);
		/* Unless another thread retained it meanwhile. */
		if (last && ctx_primary_refs(primary) == 0)
			mem_ctx_gone(primary, (int)dev);
	}
	return r;
}

/* A reset destroys the primary context and every allocation in it. */
static CUresult primary_reset(CUresult (*real)(CUdevice), CUdevice dev)
{
	CUcontext primary = ctx_primary_of((int)dev);
	CUresult r;

	mem_ctx_closing(primary, (int)dev);
	r = real(dev);
	if (r == CUDA_SUCCESS) {
		ctx_primary_reset((int)dev);
		mem_ctx_gone(primary, (int)dev);
	}
	return r;
}

/* Both variants of release and of reset end a context the same way (the
 * CUDA runtime asks for the older ones). */
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	HOOK_ENTER(cuDevicePrimaryCtxRelease_v2, (dev));
	r_ = primary_release(real_, dev);
	HOOK_LEAVE();
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	HOOK_ENTER(cuDevicePrimaryCtxRelease, (dev));
	r_ = primary_release(real_, dev);
	HOOK_LEAVE();
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	HOOK_ENTER(cuDevicePrimaryCtxReset_v2, (dev));
	r_ = primary_reset(real_, dev);
	HOOK_LEAVE();
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	HOOK_ENTER(cuDevicePrimaryCtxReset, (dev));
	r_ = primary_reset(real_, dev);
	HOOK_LEAVE();
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	HOOK_ENTER(cuCtxCreate_v2, (pctx, flags, dev));
	r_ = real_(pctx, flags, dev);
	if (r_ == CUDA_SUCCESS) {
		ctx_track(*pctx, (int)dev, 0);
		shim_gpu_opened((int)dev);
	}
	HOOK_LEAVE();
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
			int numParams, unsigned int flags, CUdevice dev)
{
	HOOK_ENTER(cuCtxCreate_v3, (pctx, paramsArray, numParams, flags, dev));
	r_ = real_(pctx, paramsArray, numParams, flags, dev);
	if (r_ == CUDA_SUCCESS) {
		ctx_track(*pctx, (int)dev, 0);
		shim_gpu_opened((int)dev);
	}
	HOOK_LEAVE();
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
			unsigned int flags, CUdevice dev)
{
	HOOK_ENTER(cuCtxCreate_v4, (pctx, ctxCreateParams, flags, dev));
	r_ = real_(pctx, ctxCreateParams, flags, dev);
	if (r_ == CUDA_SUCCESS) {
		ctx_track(*pctx, (int)dev, 0);
		shim_gpu_opened((int)dev);
	}
	HOOK_LEAVE();
}

/* The context is forgotten before the driver destroys it, so that a
 * release does not push it meanwhile; a destroy the driver refuses (a
 * primary context, a context current elsewhere) leaves it alive, and it
 * is tracked again. */
CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	int dev, refs;

	HOOK_ENTER(cuCtxDestroy_v2, (ctx));
	dev = ctx_device_of(ctx);
	refs = ctx_primary_refs(ctx);
	ctx_untrack(ctx);
	mem_ctx_closing(ctx, -1);
	r_ = real_(ctx);
	if (r_ == CUDA_SUCCESS)
		mem_ctx_gone(ctx, -1);
	else if (dev >= 0)
		ctx_track(ctx, dev, refs);
	HOOK_LEAVE();
}
