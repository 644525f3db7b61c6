/*
 * What the shim asks the driver about devices, contexts and streams,
 * through the real entry points (never the hooks): for the memory layer,
 * the hooks and the gate's CUDA operations (shim_ops.c). Each runs after a
 * hook made sure of the init, so it reads the real pointers directly.
 */
#include <string.h>
#include <time.h>

#include "ctx_track.h"
#include "cu_query.h"
#include "gate.h"
#include "hooks.h"
#include "mem_reg.h"

/* The device of the thread's current context, cached per thread and
 * keyed by the context, so a context switch is noticed. */
static __thread __attribute__((tls_model("initial-exec"))) CUcontext tl_ctx;
static __thread __attribute__((tls_model("initial-exec"))) int tl_dev = -1;
static uint64_t dev_total[MREG_MAX_DEVS];

void *cuq_current_context(void)
{
	__typeof__(&cuCtxGetCurrent) get = REAL(cuCtxGetCurrent);
	CUcontext ctx = NULL;

	if (get == NULL || get(&ctx) != CUDA_SUCCESS)
		return NULL;
	return ctx;
}

int cuq_current_device(void)
{
	__typeof__(&cuCtxGetDevice) getdev = REAL(cuCtxGetDevice);
	CUcontext ctx = cuq_current_context();
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

void cuq_track_current(void)
{
	/* Answering the device notes the context (ctx_track), once per
	 * context switch of the thread. */
	(void)cuq_current_device();
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

int cuq_stream_device(void *stream)
{
	__typeof__(&cuStreamGetDevice) sdev = REAL(cuStreamGetDevice);
	__typeof__(&cuStreamGetCtx) sctx = REAL(cuStreamGetCtx);
	CUstream s = stream;
	CUcontext ctx;
	CUdevice dev;

	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return cuq_current_device();
	if (sdev != NULL && sdev(s, &dev) == CUDA_SUCCESS)
		return (int)dev;
	if (sctx != NULL && sctx(s, &ctx) == CUDA_SUCCESS)
		return context_device(ctx);
	return -1;
}

int cuq_stream_capturing(void *stream)
{
	__typeof__(&cuStreamIsCapturing) is = REAL(cuStreamIsCapturing);
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (is == NULL || is((CUstream)stream, &st) != CUDA_SUCCESS)
		return 0;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

int cuq_relax(void)
{
	__typeof__(&cuThreadExchangeStreamCaptureMode) xchg =
		REAL(cuThreadExchangeStreamCaptureMode);
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;

	if (xchg == NULL || xchg(&m) != CUDA_SUCCESS)
		return -1;
	return (int)m;
}

void cuq_unrelax(int old)
{
	__typeof__(&cuThreadExchangeStreamCaptureMode) xchg =
		REAL(cuThreadExchangeStreamCaptureMode);
	CUstreamCaptureMode m = (CUstreamCaptureMode)old;

	if (old >= 0 && xchg != NULL)
		(void)xchg(&m);
}

int cuq_query_passed(int answer)
{
	return answer != CUDA_ERROR_NOT_READY &&
	       answer != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
	       answer != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
	       answer != CUDA_ERROR_CAPTURED_EVENT;
}

static int frees_inside;

/* Both sides are sequentially consistent: the count of frees inside is
 * changed before the capture count is read (gate_capturing), and the
 * capture count before this one is read (cuq_frees_wait), so one of the
 * two sees the other. */
int cuq_frees_enter(void)
{
	__atomic_add_fetch(&frees_inside, 1, __ATOMIC_SEQ_CST);
	if (!gate_capturing())
		return 1;
	cuq_frees_leave();
	return 0;
}

void cuq_frees_leave(void)
{
	__atomic_sub_fetch(&frees_inside, 1, __ATOMIC_SEQ_CST);
}

void cuq_frees_wait(void)
{
	struct timespec pause = { 0, 100000 };

	/* A free that waits for GPU work (at the memory limit) may take a
	 * while; past 2 s the capture goes ahead. */
	for (int i = 0; i < 20000 &&
	     __atomic_load_n(&frees_inside, __ATOMIC_SEQ_CST) > 0; i++)
		nanosleep(&pause, NULL);
}

int cuq_device_info(int dev, uint8_t uuid[16], uint64_t *total)
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

uint64_t cuq_device_total(int dev)
{
	uint8_t uuid[16];
	uint64_t t;

	if (dev < 0 || dev >= MREG_MAX_DEVS)
		return 0;
	t = __atomic_load_n(&dev_total[dev], __ATOMIC_RELAXED);
	if (t == 0 && cuq_device_info(dev, uuid, &t) != 0)
		return 0;
	return t;
}

/* cuDeviceGetCount is not in the hook table: the shim needs it only
 * here, once, so it is looked up through the real cuGetProcAddress. */
int cuq_device_count(void)
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

void cuq_atfork_child(void)
{
	tl_ctx = NULL;
	tl_dev = -1;
	frees_inside = 0;
}
