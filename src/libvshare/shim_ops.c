#include <stdlib.h>
#include <string.h>

#include "ctx_track.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_reg.h"
#include "shim_ops.h"

/* The device of the thread's current context, cached per thread and
 * keyed by the context, so a context switch is noticed. */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext tl_ctx;
static __thread __attribute__((tls_model("initial-exec"))) int tl_dev = -1;
static uint64_t dev_total[MREG_MAX_DEVS];

void *shim_ops_current_context(void)
{
	__typeof__(&cuCtxGetCurrent) get = REAL(cuCtxGetCurrent);
	CUcontext ctx = NULL;

	if (get == NULL || get(&ctx) != CUDA_SUCCESS)
		return NULL;
	return ctx;
}

int shim_ops_current_device(void)
{
	__typeof__(&cuCtxGetDevice) getdev = REAL(cuCtxGetDevice);
	CUcontext ctx = shim_ops_current_context();
	CUdevice dev;

	if (ctx == NULL || getdev == NULL)
		return -1;
	if (ctx == tl_ctx)
		return tl_dev;
	if (getdev(&dev) != CUDA_SUCCESS)
		return -1;
	tl_ctx = ctx;
	tl_dev = (int)dev;
	ctx_track(ctx, (int)dev, 0);
	return (int)dev;
}

/* Device of a context that is not current: ask it while current. */
static int context_device(CUcontext ctx)
{
	__typeof__(&cuCtxPushCurrent_v2) push = REAL(cuCtxPushCurrent_v2);
	__typeof__(&cuCtxPopCurrent_v2) pop = REAL(cuCtxPopCurrent_v2);
	__typeof__(&cuCtxGetDevice) getdev = REAL(cuCtxGetDevice);
	CUcontext old;
	CUdevice dev;
	int d = ctx_device_of(ctx);

	if (d >= 0 || push == NULL || pop == NULL || getdev == NULL)
		return d;
	if (push(ctx) != CUDA_SUCCESS)
		return -1;
	if (getdev(&dev) == CUDA_SUCCESS)
		d = (int)dev;
	pop(&old);
	if (d >= 0)
		ctx_track(ctx, d, 0);
	return d;
}

int shim_ops_stream_device(void *stream)
{
	__typeof__(&cuStreamGetDevice) sdev = REAL(cuStreamGetDevice);
	__typeof__(&cuStreamGetCtx) sctx = REAL(cuStreamGetCtx);
	CUstream s = stream;
	CUcontext ctx;
	CUdevice dev;

	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return shim_ops_current_device();
	if (sdev != NULL && sdev(s, &dev) == CUDA_SUCCESS)
		return (int)dev;
	if (sctx != NULL && sctx(s, &ctx) == CUDA_SUCCESS)
		return context_device(ctx);
	return -1;
}

int shim_ops_stream_capturing(void *stream)
{
	__typeof__(&cuStreamIsCapturing) is = REAL(cuStreamIsCapturing);
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (is == NULL || is((CUstream)stream, &st) != CUDA_SUCCESS)
		return 0;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static int ops_device_info(int dev, uint8_t uuid[16], uint64_t *total)
{
	__typeof__(&cuDeviceGetUuid_v2) uuid2 = REAL(cuDeviceGetUuid_v2);
	__typeof__(&cuDeviceGetUuid) uuid1 = REAL(cuDeviceGetUuid);
	__typeof__(&cuDeviceTotalMem_v2) mem = REAL(cuDeviceTotalMem_v2);
	CUuuid u;
	size_t bytes;
	CUresult r = CUDA_ERROR_NOT_FOUND;

	/* A CUdevice is its ordinal: cuDeviceGet(&d, i) gives d == i. */
	if (uuid2 != NULL)
		r = uuid2(&u, (CUdevice)dev);
	else if (uuid1 != NULL)
		r = uuid1(&u, (CUdevice)dev);
	if (r != CUDA_SUCCESS || mem == NULL ||
	    mem(&bytes, (CUdevice)dev) != CUDA_SUCCESS)
		return -1;
	memcpy(uuid, u.bytes, 16);
	*total = bytes;
	if (dev >= 0 && dev < MREG_MAX_DEVS)
		__atomic_store_n(&dev_total[dev], (uint64_t)bytes, __ATOMIC_RELAXED);
	return 0;
}

uint64_t shim_ops_device_total(int dev)
{
	uint8_t uuid[16];
	uint64_t t;

	if (dev < 0 || dev >= MREG_MAX_DEVS)
		return 0;
	t = __atomic_load_n(&dev_total[dev], __ATOMIC_RELAXED);
	if (t == 0 && ops_device_info(dev, uuid, &t) != 0)
		return 0;
	return t;
}

/* cuDeviceGetCount is not in the hook table: the shim needs it only
 * here, once, so it is looked up through the real cuGetProcAddress. */
static int ops_device_count(void)
{
	__typeof__(&cuGetProcAddress_v2) gpa2 = REAL(cuGetProcAddress_v2);
	__typeof__(&cuGetProcAddress) gpa1 = REAL(cuGetProcAddress);
	CUresult (*count)(int *) = NULL;
	CUresult r = CUDA_ERROR_NOT_FOUND;
	void *fn = NULL;
	int n = -1;

	if (gpa2 != NULL)
		r = gpa2("cuDeviceGetCount", &fn, 2000, CU_GET_PROC_ADDRESS_DEFAULT,
			 NULL);
	else if (gpa1 != NULL)   /* a driver older than CUDA 12 */
		r = gpa1("cuDeviceGetCount", &fn, 2000, CU_GET_PROC_ADDRESS_DEFAULT);
	if (r != CUDA_SUCCESS)
		return -1;
	count = (CUresult (*)(int *))fn;
	if (count == NULL || count(&n) != CUDA_SUCCESS)
		return -1;
	return n;
}

static int ops_stream_capturing(void *stream)
{
	return shim_ops_stream_capturing(stream);
}

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
	mem_defer_reap(0);
	if (outer)
		shim_guard_leave();
	return rc;
}

static void ops_footprint(int dev, uint64_t *managed, uint64_t *pinned)
{
	mreg_usage(dev, managed, pinned);
}

static void ops_prefetch(int dev, int to_host)
{
	int outer = shim_guard_enter();

	mem_prefetch_device(dev, to_host);
	if (outer)
		shim_guard_leave();
}

void shim_ops_atfork_child(void)
{
	tl_ctx = NULL;
	tl_dev = -1;
}

const struct gate_cuda_ops shim_gate_ops = {
	.current_device = shim_ops_current_device,
	.stream_device = shim_ops_stream_device,
	.device_info = ops_device_info,
	.stream_capturing = ops_stream_capturing,
	.sync_device = ops_sync_device,
	.footprint = ops_footprint,
	.prefetch = ops_prefetch,
	.current_context = shim_ops_current_context,
	.device_count = ops_device_count,
};
