/*
 * What the shim asks the driver about devices, contexts and streams,
 * through the real entry points (never the hooks): for the memory layer,
 * the hooks and the gate's CUDA operations (shim_ops.c). Each runs after a
 * hook made sure of the init, so it reads the real pointers directly.
 * And the one path for the shim's own driver calls (cu_query.h: the
 * rules, CUQ(), the scopes).
 */
#include <pthread.h>
#include <string.h>

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
	CUcontext ctx = NULL;

	if (CUQ_QUERY(cuCtxGetCurrent, (&ctx)) != CUDA_SUCCESS)
		return NULL;
	return ctx;
}

int cuq_current_device(void)
{
	CUcontext ctx = cuq_current_context();
	CUdevice dev;

	if (ctx == NULL)
		return -1;
	if (ctx == tl_ctx)
		return tl_dev;
	if (CUQ_QUERY(cuCtxGetDevice, (&dev)) != CUDA_SUCCESS)
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
	struct cuq_scope sc;
	CUdevice dev;
	int d = ctx_device_of(ctx);

	if (d >= 0 || cuq_enter(&sc, 0, ctx) != 0)
		return d;
	if (CUQ_QUERY(cuCtxGetDevice, (&dev)) == CUDA_SUCCESS)
		d = (int)dev;
	cuq_leave(&sc);
	if (d >= 0)
		ctx_track(ctx, d, 0);
	return d;
}

int cuq_stream_device(void *stream)
{
	CUstream s = stream;
	CUcontext ctx;
	CUdevice dev;

	if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
		return cuq_current_device();
	if (CUQ_QUERY(cuStreamGetDevice, (s, &dev)) == CUDA_SUCCESS)
		return (int)dev;
	if (CUQ_QUERY(cuStreamGetCtx, (s, &ctx)) == CUDA_SUCCESS)
		return context_device(ctx);
	return -1;
}

int cuq_stream_capturing(void *stream)
{
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;

	if (CUQ_QUERY(cuStreamIsCapturing, ((CUstream)stream, &st)) !=
	    CUDA_SUCCESS)
		return 0;
	return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The rules of the thread's outermost scope: its depth, and the capture
 * mode (-1 when it could not be changed) and cancellation state to give
 * back at its end. */
struct rules_state {
	int depth;
	int mode;
	int cancel;
};
static __thread __attribute__((tls_model("initial-exec")))
	struct rules_state tl_rules;

static int exchange_mode(int mode)
{
	__typeof__(&cuThreadExchangeStreamCaptureMode) xchg =
		REAL(cuThreadExchangeStreamCaptureMode);
	CUstreamCaptureMode m = (CUstreamCaptureMode)mode;

	if (mode < 0 || xchg == NULL || xchg(&m) != CUDA_SUCCESS)
		return -1;
	return (int)m;
}

void cuq_rules_in(void)
{
	if (tl_rules.depth++ > 0)
		return;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &tl_rules.cancel);
	tl_rules.mode = exchange_mode(CU_STREAM_CAPTURE_MODE_RELAXED);
}

void cuq_rules_out(void)
{
	if (--tl_rules.depth > 0)
		return;
	(void)exchange_mode(tl_rules.mode);
	pthread_setcancelstate(tl_rules.cancel, NULL);
}

/* Outside a scope the thread is in the program's mode already; inside
 * one, the program's mode comes back for the call. */
int cuq_prog_in(void)
{
	int cancel;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	if (tl_rules.depth > 0)
		(void)exchange_mode(tl_rules.mode);
	return cancel;
}

void cuq_prog_out(int saved)
{
	if (tl_rules.depth > 0 && tl_rules.mode >= 0)
		(void)exchange_mode(CU_STREAM_CAPTURE_MODE_RELAXED);
	pthread_setcancelstate(saved, NULL);
}

int cuq_enter(struct cuq_scope *sc, unsigned rules, const void *ctx)
{
	sc->pushed = NULL;
	sc->entered = 0;
	/* The capture count moves before the driver begins a capture
	 * (hook_submit.c), so a free that starts after this check and a
	 * capture that begins meanwhile meet only in relaxed mode, which
	 * the driver allows (capture_rule.txt: free, relaxed thread). */
	if ((rules & CUQ_FREES) && gate_capturing())
		return -1;
	cuq_rules_in();
	sc->entered = 1;
	if (ctx != NULL && ctx != cuq_current_context()) {
		if (CUQ_QUERY(cuCtxPushCurrent_v2, ((CUcontext)ctx)) !=
		    CUDA_SUCCESS) {
			cuq_leave(sc);
			return -1;
		}
		sc->pushed = (void *)ctx;
	}
	return 0;
}

void cuq_leave(struct cuq_scope *sc)
{
	CUcontext old;

	if (!sc->entered)
		return;
	if (sc->pushed != NULL)
		(void)CUQ_QUERY(cuCtxPopCurrent_v2, (&old));
	sc->pushed = NULL;
	sc->entered = 0;
	cuq_rules_out();
}

int cuq_query_passed(int answer)
{
	return answer != CUDA_ERROR_NOT_READY &&
	       answer != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
	       answer != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
	       answer != CUDA_ERROR_CAPTURED_EVENT;
}

int cuq_device_info(int dev, uint8_t uuid[16], uint64_t *total)
{
	CUuuid u;
	size_t bytes;
	CUresult r;

	/* A CUdevice is its ordinal: cuDeviceGet(&d, i) gives d == i. */
	r = CUQ_QUERY(cuDeviceGetUuid_v2, (&u, (CUdevice)dev));
	if (r == CUDA_ERROR_NOT_INITIALIZED && REAL(cuDeviceGetUuid_v2) == NULL)
		r = CUQ_QUERY(cuDeviceGetUuid, (&u, (CUdevice)dev));
	if (r != CUDA_SUCCESS ||
	    CUQ_QUERY(cuDeviceTotalMem_v2, (&bytes, (CUdevice)dev)) !=
	    CUDA_SUCCESS)
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
	tl_rules.depth = 0;
}
