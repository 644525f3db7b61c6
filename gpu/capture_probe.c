/*
 * Which driver calls a stream capture forbids, asked of the driver itself.
 *
 * For each capture mode (global, thread-local, relaxed), each caller (the
 * capturing thread, or another thread), each capture interaction mode of
 * the caller (cuThreadExchangeStreamCaptureMode: global, thread-local,
 * relaxed) and each call of the list below, the probe begins a capture on
 * stream sc (a memset recorded in it), makes the call once, ends the
 * capture, and prints one line:
 *
 *   capture=MODE caller=self|other thread=MODE call=NAME rc=CURESULT end=CURESULT
 *
 * rc is the call's answer, end that of cuStreamEndCapture (an invalidated
 * capture ends with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED). "other" calls
 * concern stream s2, which never captures; "cap" calls the capturing
 * stream sc. The output is the same table on the real driver and on the
 * test driver when the test driver's capture rule is the real one: the
 * test driver.capture_rule compares it with the table recorded on a GPU
 * (tests/driver/capture_rule.txt). Built by scripts/gpu-check beside the
 * suite's programs; needs only libcuda (no kernels). Exit 0 when every
 * call could be set up and cleaned up.
 */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK (1u << 20)

static const char *cr_name(CUresult r)
{
	const char *n = NULL;

	if (cuGetErrorName(r, &n) != CUDA_SUCCESS || !n)
		return "?";
	return n;
}

/* CK: set-up that must work; SOFT: clean-up, noted and carried on, so
 * that one odd answer does not lose the rest of the table. */
static int soft_failures;
#define CK(call) ck((call), #call, __LINE__, 1)
#define SOFT(call) ck((call), #call, __LINE__, 0)
static void ck(CUresult r, const char *what, int line, int fatal)
{
	if (r == CUDA_SUCCESS)
		return;
	fprintf(stderr, "capture_probe:%d: %s failed: %s\n", line, what,
		cr_name(r));
	if (fatal)
		exit(2);
	soft_failures++;
}

/* What the calls work on: made before each capture, released after. */
struct fix {
	CUcontext ctx;
	CUdevice dev;
	CUstream sc, s2;
	CUevent ev;		/* recorded on s2 before the capture */
	CUdeviceptr d;		/* to free */
	CUdeviceptr a;		/* stream-ordered, to free on s2 */
	CUdeviceptr m;		/* managed, to prefetch */
	CUdeviceptr got;	/* what an allocating call returned */
	void *h;		/* pinned host memory, to free */
	void *hgot;		/* pinned host memory a call returned */
	void *buf;		/* pageable host memory */
	CUmemoryPool pool;
	CUstream sgot;
	CUevent egot;
	void *reg;		/* registered host memory, to unregister */
	CUevent ev2;		/* to destroy, or record in the capture */
	CUstream s3;		/* to destroy */
};

typedef CUresult (*call_fn)(struct fix *f);

static CUresult c_alloc(struct fix *f) { return cuMemAlloc(&f->got, BLOCK); }
static CUresult c_free(struct fix *f)
{
	CUresult r = cuMemFree(f->d);

	if (r == CUDA_SUCCESS)
		f->d = 0;
	return r;
}
static CUresult c_alloc_managed(struct fix *f)
{
	return cuMemAllocManaged(&f->got, BLOCK, CU_MEM_ATTACH_GLOBAL);
}
static CUresult c_alloc_host(struct fix *f) { return cuMemAllocHost(&f->hgot, 4096); }
static CUresult c_free_host(struct fix *f)
{
	CUresult r = cuMemFreeHost(f->h);

	if (r == CUDA_SUCCESS)
		f->h = NULL;
	return r;
}
static CUresult c_host_register(struct fix *f)
{
	CUresult r = cuMemHostRegister(f->buf, BLOCK, 0);

	if (r == CUDA_SUCCESS)
		f->hgot = f->buf;
	return r;
}
static CUresult c_event_query(struct fix *f) { return cuEventQuery(f->ev); }
static CUresult c_event_sync(struct fix *f) { return cuEventSynchronize(f->ev); }
static CUresult c_event_record_other(struct fix *f) { return cuEventRecord(f->ev, f->s2); }
static CUresult c_event_create(struct fix *f)
{
	return cuEventCreate(&f->egot, CU_EVENT_DISABLE_TIMING);
}
static CUresult c_stream_create(struct fix *f)
{
	return cuStreamCreate(&f->sgot, CU_STREAM_NON_BLOCKING);
}
static CUresult c_stream_query_other(struct fix *f) { return cuStreamQuery(f->s2); }
static CUresult c_stream_sync_other(struct fix *f) { return cuStreamSynchronize(f->s2); }
static CUresult c_stream_wait_other(struct fix *f) { return cuStreamWaitEvent(f->s2, f->ev, 0); }
static CUresult c_ctx_sync(struct fix *f) { (void)f; return cuCtxSynchronize(); }
static CUresult c_alloc_async_other(struct fix *f)
{
	return cuMemAllocAsync(&f->got, BLOCK, f->s2);
}
static CUresult c_free_async_other(struct fix *f)
{
	CUresult r = cuMemFreeAsync(f->a, f->s2);

	if (r == CUDA_SUCCESS)
		f->a = 0;
	return r;
}
static CUresult c_alloc_pool_other(struct fix *f)
{
	return cuMemAllocFromPoolAsync(&f->got, BLOCK, f->pool, f->s2);
}
static CUresult c_alloc_async_cap(struct fix *f)
{
	CUdeviceptr p;
	CUresult r = cuMemAllocAsync(&p, BLOCK, f->sc);

	/* A memory node of the graph: freed in the graph too. */
	if (r == CUDA_SUCCESS)
		SOFT(cuMemFreeAsync(p, f->sc));
	return r;
}
static CUresult c_memset_other(struct fix *f)
{
	return cuMemsetD32Async(f->d, 7, BLOCK / 4, f->s2);
}
static CUresult c_htod_async_other(struct fix *f)
{
	return cuMemcpyHtoDAsync(f->d, f->buf, 4096, f->s2);
}
static CUresult c_dtoh_async_other(struct fix *f)
{
	return cuMemcpyDtoHAsync(f->buf, f->d, 4096, f->s2);
}
static CUresult c_htod_sync(struct fix *f) { return cuMemcpyHtoD(f->d, f->buf, 4096); }
static CUresult c_prefetch_other(struct fix *f)
{
#if CUDA_VERSION >= 13000
	CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, (int)f->dev };

	return cuMemPrefetchAsync(f->m, BLOCK, loc, 0, f->s2);
#else
	return cuMemPrefetchAsync(f->m, BLOCK, f->dev, f->s2);
#endif
}
static CUresult c_mem_get_info(struct fix *f)
{
	size_t fr, tot;

	(void)f;
	return cuMemGetInfo(&fr, &tot);
}
static CUresult c_pointer_attr(struct fix *f)
{
	unsigned int managed = 0;

	return cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, f->d);
}
static CUresult c_pool_attr(struct fix *f)
{
	cuuint64_t v = 0;

	return cuMemPoolGetAttribute(f->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v);
}
static CUresult c_stream_capturing_other(struct fix *f)
{
	CUstreamCaptureStatus st;

	return cuStreamIsCapturing(f->s2, &st);
}

static CUresult c_host_alloc(struct fix *f)
{
	return cuMemHostAlloc(&f->hgot, 4096, CU_MEMHOSTALLOC_PORTABLE);
}
static CUresult c_host_unregister(struct fix *f)
{
	CUresult r = cuMemHostUnregister(f->reg);

	if (r == CUDA_SUCCESS)
		f->reg = NULL;
	return r;
}
static CUresult c_alloc_pitch(struct fix *f)
{
	size_t pitch;

	return cuMemAllocPitch(&f->got, &pitch, 256, 16, 4);
}
static CUresult c_event_destroy(struct fix *f)
{
	CUresult r = cuEventDestroy(f->ev2);

	if (r == CUDA_SUCCESS)
		f->ev2 = NULL;
	return r;
}
static CUresult c_stream_destroy(struct fix *f)
{
	CUresult r = cuStreamDestroy(f->s3);

	if (r == CUDA_SUCCESS)
		f->s3 = NULL;
	return r;
}
static CUresult c_stream_query_cap(struct fix *f) { return cuStreamQuery(f->sc); }
static CUresult c_stream_sync_cap(struct fix *f) { return cuStreamSynchronize(f->sc); }
static CUresult c_free_async_cap(struct fix *f)
{
	CUresult r = cuMemFreeAsync(f->a, f->sc);

	if (r == CUDA_SUCCESS)
		f->a = 0;
	return r;
}
static CUresult c_event_record_cap(struct fix *f) { return cuEventRecord(f->ev2, f->sc); }
static CUresult c_pool_trim(struct fix *f) { return cuMemPoolTrimTo(f->pool, 0); }
static CUresult c_pool_set_attr(struct fix *f)
{
	cuuint64_t v = 0;

	return cuMemPoolSetAttribute(f->pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &v);
}
static CUresult c_ctx_get_device(struct fix *f)
{
	CUdevice d;

	(void)f;
	return cuCtxGetDevice(&d);
}
static CUresult c_stream_get_ctx(struct fix *f)
{
	CUcontext c;

	return cuStreamGetCtx(f->s2, &c);
}
static CUresult c_ctx_push_pop(struct fix *f)
{
	CUcontext c;
	CUresult r = cuCtxPushCurrent(f->ctx);

	if (r == CUDA_SUCCESS)
		r = cuCtxPopCurrent(&c);
	return r;
}
static CUresult c_advise(struct fix *f)
{
#if CUDA_VERSION >= 13000
	CUmemLocation loc = { CU_MEM_LOCATION_TYPE_DEVICE, (int)f->dev };

	return cuMemAdvise(f->m, BLOCK, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc);
#else
	return cuMemAdvise(f->m, BLOCK, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, f->dev);
#endif
}
static CUresult c_pointer_attrs(struct fix *f)
{
	CUpointer_attribute a[2] = { CU_POINTER_ATTRIBUTE_IS_MANAGED,
				     CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL };
	unsigned int managed = 0;
	int ord = -1;
	void *v[2] = { &managed, &ord };

	return cuPointerGetAttributes(2, a, v, f->d);
}
static CUresult c_device_total(struct fix *f)
{
	size_t t;

	return cuDeviceTotalMem(&t, f->dev);
}

static const struct call {
	const char *name;
	call_fn fn;
} calls[] = {
	{ "alloc", c_alloc },
	{ "free", c_free },
	{ "alloc_managed", c_alloc_managed },
	{ "alloc_host", c_alloc_host },
	{ "free_host", c_free_host },
	{ "host_register", c_host_register },
	{ "event_query", c_event_query },
	{ "event_sync", c_event_sync },
	{ "event_record_other", c_event_record_other },
	{ "event_create", c_event_create },
	{ "stream_create", c_stream_create },
	{ "stream_query_other", c_stream_query_other },
	{ "stream_sync_other", c_stream_sync_other },
	{ "stream_wait_other", c_stream_wait_other },
	{ "stream_capturing_other", c_stream_capturing_other },
	{ "ctx_sync", c_ctx_sync },
	{ "alloc_async_other", c_alloc_async_other },
	{ "free_async_other", c_free_async_other },
	{ "alloc_pool_other", c_alloc_pool_other },
	{ "alloc_async_cap", c_alloc_async_cap },
	{ "memset_other", c_memset_other },
	{ "htod_async_other", c_htod_async_other },
	{ "dtoh_async_other", c_dtoh_async_other },
	{ "htod_sync", c_htod_sync },
	{ "prefetch_other", c_prefetch_other },
	{ "mem_get_info", c_mem_get_info },
	{ "pointer_attr", c_pointer_attr },
	{ "pool_attr", c_pool_attr },
	{ "host_alloc", c_host_alloc },
	{ "host_unregister", c_host_unregister },
	{ "alloc_pitch", c_alloc_pitch },
	{ "event_destroy", c_event_destroy },
	{ "stream_destroy", c_stream_destroy },
	{ "stream_query_cap", c_stream_query_cap },
	{ "stream_sync_cap", c_stream_sync_cap },
	{ "free_async_cap", c_free_async_cap },
	{ "event_record_cap", c_event_record_cap },
	{ "pool_trim", c_pool_trim },
	{ "pool_set_attr", c_pool_set_attr },
	{ "ctx_get_device", c_ctx_get_device },
	{ "stream_get_ctx", c_stream_get_ctx },
	{ "ctx_push_pop", c_ctx_push_pop },
	{ "advise", c_advise },
	{ "pointer_attrs", c_pointer_attrs },
	{ "device_total", c_device_total },
};

static const char *const mode_names[] = { "global", "thread_local", "relaxed" };
static const CUstreamCaptureMode modes[] = {
	CU_STREAM_CAPTURE_MODE_GLOBAL, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
	CU_STREAM_CAPTURE_MODE_RELAXED,
};

static void fix_make(struct fix *f)
{
	CK(cuMemAlloc(&f->d, BLOCK));
	CK(cuMemAllocHost(&f->h, 4096));
	CK(cuMemAllocAsync(&f->a, BLOCK, f->s2));
	CK(cuEventCreate(&f->ev, CU_EVENT_DISABLE_TIMING));
	CK(cuEventRecord(f->ev, f->s2));
	CK(cuEventCreate(&f->ev2, CU_EVENT_DISABLE_TIMING));
	CK(cuStreamCreate(&f->s3, CU_STREAM_NON_BLOCKING));
	f->reg = (char *)f->buf + BLOCK;
	CK(cuMemHostRegister(f->reg, 4096, 0));
	CK(cuStreamSynchronize(f->s2));
}

/* After the capture has ended: what the call made or left behind goes. */
static void fix_clean(struct fix *f)
{
	SOFT(cuStreamSynchronize(f->s2));
	SOFT(cuCtxSynchronize());
	if (f->got)
		SOFT(cuMemFree(f->got));
	if (f->hgot == f->buf)
		SOFT(cuMemHostUnregister(f->buf));
	else if (f->hgot)
		SOFT(cuMemFreeHost(f->hgot));
	if (f->sgot)
		SOFT(cuStreamDestroy(f->sgot));
	if (f->egot)
		SOFT(cuEventDestroy(f->egot));
	if (f->d)
		SOFT(cuMemFree(f->d));
	if (f->h)
		SOFT(cuMemFreeHost(f->h));
	if (f->a)
		SOFT(cuMemFreeAsync(f->a, f->s2));
	SOFT(cuStreamSynchronize(f->s2));
	SOFT(cuEventDestroy(f->ev));
	if (f->ev2)
		SOFT(cuEventDestroy(f->ev2));
	if (f->s3)
		SOFT(cuStreamDestroy(f->s3));
	if (f->reg)
		SOFT(cuMemHostUnregister(f->reg));
	f->reg = NULL;
	f->ev2 = NULL;
	f->s3 = NULL;
	f->got = f->d = f->a = 0;
	f->h = f->hgot = NULL;
	f->sgot = NULL;
	f->egot = f->ev = NULL;
}

struct job {
	struct fix *f;
	const struct call *c;
	CUstreamCaptureMode tmode;
	CUresult rc;
};

/* The call in the caller's interaction mode, restored afterwards. */
static void job_run(struct job *j)
{
	CUstreamCaptureMode m = j->tmode;

	CK(cuThreadExchangeStreamCaptureMode(&m));
	j->rc = j->c->fn(j->f);
	CK(cuThreadExchangeStreamCaptureMode(&m));
}

static void *job_thread(void *arg)
{
	struct job *j = arg;

	CK(cuCtxSetCurrent(j->f->ctx));
	job_run(j);
	return NULL;
}

static void probe_one(struct fix *f, int cm, int other, int tm,
		      const struct call *c)
{
	struct job j = { f, c, modes[tm], CUDA_SUCCESS };
	CUgraph g = NULL;
	CUresult end;
	pthread_t t;

	fix_make(f);
	CK(cuStreamBeginCapture(f->sc, modes[cm]));
	CK(cuMemsetD32Async(f->d, 1, BLOCK / 4, f->sc));
	if (other) {
		if (pthread_create(&t, NULL, job_thread, &j) != 0)
			exit(2);
		pthread_join(t, NULL);
	} else {
		job_run(&j);
	}
	end = cuStreamEndCapture(f->sc, &g);
	if (g)
		SOFT(cuGraphDestroy(g));
	fix_clean(f);
	printf("capture=%s caller=%s thread=%s call=%s rc=%s end=%s\n",
	       mode_names[cm], other ? "other" : "self", mode_names[tm],
	       c->name, cr_name(j.rc), cr_name(end));
}

int main(void)
{
	struct fix f;
	int drv = 0;

	memset(&f, 0, sizeof(f));
	CK(cuInit(0));
	CK(cuDriverGetVersion(&drv));
	CK(cuDeviceGet(&f.dev, 0));
	CK(cuDevicePrimaryCtxRetain(&f.ctx, f.dev));
	CK(cuCtxSetCurrent(f.ctx));
	CK(cuStreamCreate(&f.sc, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&f.s2, CU_STREAM_NON_BLOCKING));
	CK(cuDeviceGetDefaultMemPool(&f.pool, f.dev));
	CK(cuMemAllocManaged(&f.m, BLOCK, CU_MEM_ATTACH_GLOBAL));
	f.buf = aligned_alloc(4096, 2 * BLOCK);
	if (!f.buf)
		return 2;
	memset(f.buf, 0, 2 * BLOCK);
	{
		char dname[128] = "";

		CK(cuDeviceGetName(dname, sizeof(dname), f.dev));
		printf("# driver API version %d, device %s\n", drv, dname);
	}
	for (int cm = 0; cm < 3; cm++)
		for (int other = 0; other < 2; other++)
			for (int tm = 0; tm < 3; tm++)
				for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
					probe_one(&f, cm, other, tm, &calls[i]);
	CK(cuMemFree(f.m));
	CK(cuStreamDestroy(f.sc));
	CK(cuStreamDestroy(f.s2));
	CK(cuDevicePrimaryCtxRelease(f.dev));
	free(f.buf);
	return soft_failures ? 1 : 0;
}
