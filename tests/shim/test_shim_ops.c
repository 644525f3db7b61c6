/*
 * The hook layer and the CUDA operations for the gate, in process: the
 * shim's sources are built into this program with a recording gate
 * (gate_stub.c) and run on the CUDA test driver with two devices.
 * Compiled like the shim, with every driver variant under its own name.
 */
#include <cuda.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "gate_stub.h"
#include "hooks.h"
#include "mem_alloc.h"
#include "mem_cache.h"
#include "vshare/proto.h"

/* The client callbacks the top handed over (shim_ops.c). */
#define FOOTPRINT(d, m, p) stub.cbs->footprint(stub.cbs->arg, (d), (m), (p))

#define CK(call) assert_int_equal((call), CUDA_SUCCESS)

static char log_path[] = "/tmp/vshare-shim-ops-XXXXXX";
static CUcontext ctx0, ctx1;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static CUfunction kernel(const char *name)
{
	static CUmodule m;
	CUfunction f;

	if (m == NULL)
		CK(cuModuleLoadData(&m, "// any image"));
	CK(cuModuleGetFunction(&f, m, name));
	return f;
}

static void launch_sleep(CUstream s, unsigned long long us)
{
	void *args[] = { &us };

	CK(cuLaunchKernel(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s, args,
			  NULL));
}

static int setup(void **state)
{
	CUdevice d;

	(void)state;
	CK(cuInit(0));
	CK(cuDeviceGet(&d, 1));
	CK(cuDevicePrimaryCtxRetain(&ctx1, d));
	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx0, d));
	CK(cuCtxSetCurrent(ctx0));
	assert_non_null(stub.ops);
	assert_non_null(stub.ev);
	assert_non_null(stub.cbs);
	assert_int_equal(stub.inits, 1);
	/* Each retain registered its GPU at once, before any submission. */
	assert_int_equal(stub.gate_prepared[0], 1);
	assert_int_equal(stub.gate_prepared[1], 1);
	assert_int_equal(stub.client_prepared[0], 1);
	assert_int_equal(stub.client_prepared[1], 1);
	assert_int_equal(stub.enters, 0);
	return 0;
}

/* A context of one's own registers its GPU too; a GPU the gate cannot
 * know (disabled, unreadable) is not announced to the client. */
static void test_context_prepares(void **state)
{
	CUcontext own, cur;
	int g0 = stub.gate_prepared[0], c0 = stub.client_prepared[0];

	(void)state;
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	assert_int_equal(stub.gate_prepared[0], g0 + 1);
	assert_int_equal(stub.client_prepared[0], c0 + 1);
	CK(cuCtxPopCurrent_v2(&cur));
	CK(cuCtxDestroy_v2(own));
	stub.prepare_fails = 1;
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	stub.prepare_fails = 0;
	assert_int_equal(stub.gate_prepared[0], g0 + 2);
	assert_int_equal(stub.client_prepared[0], c0 + 1);
	CK(cuCtxPopCurrent_v2(&cur));
	CK(cuCtxDestroy_v2(own));
	CK(cuCtxSetCurrent(ctx0));
}

static void test_devices(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	uint8_t uuid[16];
	uint64_t total;
	CUstream s1;

	(void)state;
	assert_ptr_equal(ops->current_context(), ctx0);
	assert_int_equal(ops->current_device(), 0);
	CK(cuCtxSetCurrent(ctx1));
	assert_int_equal(ops->current_device(), 1);
	CK(cuStreamCreate(&s1, 0));
	CK(cuCtxSetCurrent(ctx0));
	assert_int_equal(ops->current_device(), 0);
	assert_int_equal(ops->stream_device(s1), 1);
	assert_int_equal(ops->stream_device(NULL), 0);
	assert_int_equal(ops->stream_device(CU_STREAM_PER_THREAD), 0);
	assert_int_equal(ops->device_info(1, uuid, &total), 0);
	assert_memory_equal(uuid, "vstd", 4);
	assert_int_equal(uuid[15], 1);
	assert_int_equal(total, 256u << 20);
	CK(cuStreamDestroy_v2(s1));
}

/* Prefetch lines of the execution log: "device0" or "host" bytes. */
static int count_prefetch(const char *where, size_t bytes)
{
	FILE *f = fopen(log_path, "r");
	char kind[32], name[32];
	size_t b;
	int n = 0;

	assert_non_null(f);
	while (fscanf(f, "%*s %*s %*s %*s %*s %31s %31s %zu", kind, name, &b) == 3)
		if (!strcmp(kind, "prefetch") && !strcmp(name, where) && b == bytes)
			n++;
	fclose(f);
	return n;
}

static void test_footprint_prefetch(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	CUdeviceptr a, b, c;
	struct client_swap sw;
	uint64_t m, p;
	int ch0 = stub.fp_changes[0], ch1 = stub.fp_changes[1];

	(void)state;
	CK(cuMemAlloc_v2(&a, 1 << 20));
	CK(cuMemAlloc_v2(&b, 2 << 20));
	CK(cuCtxSetCurrent(ctx1));
	CK(cuMemAlloc_v2(&c, 3 << 20));
	CK(cuCtxSetCurrent(ctx0));
	assert_int_equal(stub.fp_changes[0], ch0 + 2);
	assert_int_equal(stub.fp_changes[1], ch1 + 1);
	FOOTPRINT(0, &m, &p);
	assert_int_equal(m, 3 << 20);
	assert_int_equal(p, 0);
	FOOTPRINT(1, &m, &p);
	assert_int_equal(m, 3 << 20);

	/* An oversubscribed grant swaps in, a plain one does not. */
	sw = (struct client_swap){ 0, 0 };
	stub.cbs->granted(stub.cbs->arg, 0, 0, &sw);
	assert_int_equal(count_prefetch("device0", 1 << 20), 0);
	assert_int_equal(sw.bytes, 0);
	stub.cbs->granted(stub.cbs->arg, 0, VS_GRANTF_OVERSUB, &sw);
	/* What moved, for the scheduler (VS_MSG_SWAPPED). */
	assert_int_equal(sw.bytes, 3 << 20);
	assert_int_equal(count_prefetch("device0", 1 << 20), 1);
	assert_int_equal(count_prefetch("device0", 2 << 20), 1);
	assert_int_equal(count_prefetch("device1", 3 << 20), 0);
	/* A release swaps out only when eager, and says what moved (for
	 * the scheduler: VS_MSG_USAGE). */
	sw = (struct client_swap){ 0, 0 };
	stub.cbs->released(stub.cbs->arg, 0, 0, &sw);
	assert_int_equal(count_prefetch("host", 1 << 20), 0);
	assert_int_equal(sw.bytes, 0);
	stub.cbs->released(stub.cbs->arg, 0, 1, &sw);
	assert_int_equal(count_prefetch("host", 1 << 20), 1);
	assert_int_equal(count_prefetch("host", 2 << 20), 1);
	assert_int_equal(sw.bytes, 3 << 20);
	/* The device's context is still the current one afterwards. */
	assert_ptr_equal(ops->current_context(), ctx0);

	CK(cuMemFree_v2(a));
	CK(cuMemFree_v2(b));
	CK(cuMemFree_v2(c));
	assert_int_equal(stub.fp_changes[0], ch0 + 4);
	FOOTPRINT(0, &m, &p);
	assert_int_equal(m + p, 0);
}

/* Prefetches of `bytes` to `where`; *stream: the stream of the last. */
static int count_prefetch_on(const char *where, size_t bytes,
			     unsigned long long *stream)
{
	FILE *f = fopen(log_path, "r");
	char kind[32], name[32];
	unsigned long long st;
	size_t b;
	int n = 0;

	assert_non_null(f);
	while (fscanf(f, "%*s %*s %*s %*s %llu %31s %31s %zu", &st, kind, name,
		      &b) == 4)
		if (!strcmp(kind, "prefetch") && !strcmp(name, where) &&
		    b == bytes) {
			n++;
			*stream = st;
		}
	fclose(f);
	return n;
}

/* A bulk swap cuts a large allocation into 64 MiB chunks spread over
 * VSHARE_SWAP_STREAMS streams; with one stream it is one prefetch. */
static void test_swap_chunks(void **state)
{
	CUdeviceptr a;
	struct client_swap sw = { 0, 0 };
	unsigned long long s_a = 0, s_b = 0;
	int old = mem_conf.swap_streams;

	(void)state;
	CK(cuMemAlloc_v2(&a, 67u << 20));
	mem_conf.swap_streams = 4;
	stub.cbs->granted(stub.cbs->arg, 0, VS_GRANTF_OVERSUB, &sw);
	assert_int_equal(sw.bytes, 67u << 20);
	assert_int_equal(count_prefetch_on("device0", 67u << 20, &s_a), 0);
	assert_int_equal(count_prefetch_on("device0", 64u << 20, &s_a), 1);
	assert_int_equal(count_prefetch_on("device0", 3u << 20, &s_b), 1);
	assert_true(s_a != s_b);
	mem_conf.swap_streams = 1;
	sw = (struct client_swap){ 0, 0 };
	stub.cbs->released(stub.cbs->arg, 0, 1, &sw);
	assert_int_equal(sw.bytes, 67u << 20);
	assert_int_equal(count_prefetch_on("host", 67u << 20, &s_a), 1);
	assert_int_equal(count_prefetch_on("host", 64u << 20, &s_a), 0);
	mem_conf.swap_streams = old;
	CK(cuMemFree_v2(a));
}

/* A new converted allocation of a large page or more is placed on its
 * GPU at once while the process may submit there: a synchronous one
 * through the thread's own stream, a stream-ordered one on its stream;
 * nothing while the gate is closed, during a capture, or below the
 * size. */
static void test_prefetch_new(void **state)
{
	unsigned long long s_a = 0, s_b = 0, s_sync = 0;
	CUdeviceptr small, big, a1, a2, closed, capt;
	int ex0 = stub.try_exits;
	CUstream s;

	(void)state;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	stub.try_open = 1;
	CK(cuMemAlloc_v2(&small, MEM_PREFETCH_NEW_MIN - 4096));
	CK(cuMemAlloc_v2(&big, 5u << 20));
	CK(cuMemAllocAsync(&a1, 4u << 20, s));
	CK(cuMemAllocAsync(&a2, 8u << 20, s));
	/* The driver logs a prefetch when its stream runs it. */
	CK(cuStreamSynchronize(s));
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	assert_int_equal(count_prefetch("device0", MEM_PREFETCH_NEW_MIN - 4096), 0);
	assert_int_equal(count_prefetch_on("device0", 5u << 20, &s_sync), 1);
	assert_int_equal(count_prefetch_on("device0", 4u << 20, &s_a), 1);
	assert_int_equal(count_prefetch_on("device0", 8u << 20, &s_b), 1);
	assert_true(s_a == s_b);
	assert_true(s_a != s_sync);
	/* Each inside the gate's bracket. */
	assert_int_equal(stub.try_exits, ex0 + 3);

	stub.try_open = 0;
	CK(cuMemAlloc_v2(&closed, 9u << 20));
	stub.try_open = 1;
	gate_capture_delta(1);
	CK(cuMemAlloc_v2(&capt, 10u << 20));
	gate_capture_delta(-1);
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	assert_int_equal(count_prefetch("device0", 9u << 20), 0);
	assert_int_equal(count_prefetch("device0", 10u << 20), 0);
	assert_int_equal(stub.try_exits, ex0 + 3);
	stub.try_open = 0;

	CK(cuMemFreeAsync(a1, s));
	CK(cuMemFreeAsync(a2, s));
	CK(cuStreamSynchronize(s));
	CK(cuMemFree_v2(small));
	CK(cuMemFree_v2(big));
	CK(cuMemFree_v2(closed));
	CK(cuMemFree_v2(capt));
	CK(cuStreamDestroy_v2(s));
}

/* sync_device waits for every context of the device, not only the
 * current one, and leaves the other device alone. */
static void test_sync_device(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	CUcontext own, cur;
	CUstream s0, s_own, s1;
	uint64_t t0;

	(void)state;
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	CK(cuStreamCreate(&s_own, CU_STREAM_NON_BLOCKING));
	CK(cuCtxPopCurrent_v2(&cur));
	assert_ptr_equal(cur, own);
	CK(cuCtxSetCurrent(ctx1));
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamCreate(&s0, CU_STREAM_NON_BLOCKING));

	CK(cuCtxPushCurrent_v2(own));
	launch_sleep(s_own, 300000);
	CK(cuCtxPopCurrent_v2(&cur));
	launch_sleep(s0, 100000);
	CK(cuCtxSetCurrent(ctx1));
	launch_sleep(s1, 1000000);
	CK(cuCtxSetCurrent(ctx0));

	t0 = now_ms();
	assert_int_equal(ops->sync_device(0), 0);
	assert_true(now_ms() - t0 >= 250);
	assert_true(now_ms() - t0 < 1500);
	CK(cuStreamQuery(s0));
	CK(cuCtxPushCurrent_v2(own));
	CK(cuStreamQuery(s_own));
	CK(cuCtxPopCurrent_v2(&cur));
	assert_int_equal(cuStreamQuery(s1), CUDA_ERROR_NOT_READY);
	assert_ptr_equal(ops->current_context(), ctx0);

	CK(cuCtxDestroy_v2(own));
	/* A destroyed context is forgotten, not synchronized. */
	assert_int_equal(ops->sync_device(0), 0);
	CK(cuStreamSynchronize(s1));
	CK(cuStreamDestroy_v2(s0));
}

/* A destroy that the driver refuses (here: of a primary context) leaves
 * the context alive, so releases must still synchronize it. */
static void test_refused_destroy(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	CUstream s;
	uint64_t t0;

	(void)state;
	CK(cuCtxSetCurrent(ctx0));
	assert_int_not_equal(cuCtxDestroy_v2(ctx0), CUDA_SUCCESS);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	launch_sleep(s, 200000);
	t0 = now_ms();
	assert_int_equal(ops->sync_device(0), 0);
	assert_true(now_ms() - t0 >= 150);
	CK(cuStreamQuery(s));
	CK(cuStreamDestroy_v2(s));
}

/* Each submission hook passes the stream the work goes to. */
static void test_submission_streams(void **state)
{
	CUstream s;
	CUdeviceptr p;
	char host[16] = { 0 };
	CUlaunchConfig cfg;
	int e;
	unsigned long long us = 1;
	void *args[] = { &us };

	(void)state;
	CK(cuStreamCreate(&s, 0));
	CK(cuMemAlloc_v2(&p, sizeof(host)));

	e = stub.enters;
	CK(cuMemcpyHtoD_v2(p, host, sizeof(host)));
	assert_null(stub.last_stream);
	CK(cuMemcpyHtoD_v2_ptds(p, host, sizeof(host)));
	assert_ptr_equal(stub.last_stream, CU_STREAM_PER_THREAD);
	CK(cuMemsetD8Async(p, 1, sizeof(host), s));
	assert_ptr_equal(stub.last_stream, s);
	/* (the per-thread stream is not ordered with s) */
	CK(cuStreamSynchronize(s));
	CK(cuMemsetD8Async_ptsz(p, 1, sizeof(host), NULL));
	assert_ptr_equal(stub.last_stream, CU_STREAM_PER_THREAD);
	CK(cuLaunchKernel_ptsz(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s,
			       args, NULL));
	assert_ptr_equal(stub.last_stream, s);
	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	CK(cuLaunchKernelEx(&cfg, kernel("vs_sleep"), args, NULL));
	assert_ptr_equal(stub.last_stream, s);
	assert_int_equal(stub.enters, e + 6);
	assert_int_equal(stub.exits, stub.enters);

	/* Not submissions. */
	CK(cuStreamSynchronize(s));
	CK(cuMemFree_v2(p));
	assert_int_equal(stub.enters, e + 6);
	CK(cuStreamDestroy_v2(s));
}

static void test_capture_deltas(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	CUstream s;
	CUgraph g = NULL;
	int c = stub.captures;

	(void)state;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	/* A capture that cannot begin does not count. */
	assert_int_not_equal(cuStreamBeginCapture_v2(NULL,
			     CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
	assert_int_equal(stub.captures, c);

	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	assert_int_equal(stub.captures, c + 1);
	assert_int_equal(ops->stream_capturing(s), 1);
	CK(cuStreamEndCapture(s, &g));
	assert_int_equal(stub.captures, c);
	assert_int_equal(ops->stream_capturing(s), 0);
	CK(cuGraphDestroy(g));

	/* An invalidated capture ends with an error, and still ends. */
	CK(cuStreamBeginCapture_ptsz(s));
	assert_int_equal(stub.captures, c + 1);
	assert_int_not_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
	g = NULL;
	assert_int_not_equal(cuStreamEndCapture_ptsz(s, &g), CUDA_SUCCESS);
	assert_int_equal(stub.captures, c);
	/* Ending a capture that is not there changes nothing. */
	assert_int_not_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	assert_int_equal(stub.captures, c);
	CK(cuStreamDestroy_v2(s));
}

/* A thread in a synchronize, for test_wait_hooks. */
static void *sync_thread(void *arg)
{
	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamSynchronize((CUstream)arg));
	return NULL;
}

#define SYNCS_IN() (__atomic_load_n(&stub.syncs_begun, __ATOMIC_SEQ_CST) - \
		    __atomic_load_n(&stub.syncs_ended, __ATOMIC_SEQ_CST))

/* The program's waits and queries of its own work: each wait calls the
 * driver's between gate_sync_begin and gate_sync_end (a thread blocked in
 * one is inside), each query that answers "not ready" tells the gate; the
 * program gets the driver's answers, a capture's refusal included. The
 * shim's own waits and queries (a release's synchronize, pacing's marks)
 * pass none of it. */
static void test_wait_hooks(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	CUstream s;
	CUevent ev;
	CUgraph g = NULL;
	pthread_t t;
	void *mark;
	int b, u;

	(void)state;
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	b = stub.syncs_begun;
	u = stub.unfinished;
	launch_sleep(s, 500000);
	CK(cuEventRecord(ev, s));
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuEventQuery(ev), CUDA_ERROR_NOT_READY);
	assert_int_equal(stub.unfinished, u + 2);
	u = stub.unfinished;
	assert_int_equal(pthread_create(&t, NULL, sync_thread, s), 0);
	while (SYNCS_IN() == 0)
		usleep(1000);
	/* Inside while the kernel runs: it cannot leave before the kernel
	 * is done, and the kernel is not done yet. */
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(SYNCS_IN(), 0);
	assert_int_equal(stub.syncs_begun, b + 1);
	assert_int_equal(stub.unfinished, u + 1);
	u = stub.unfinished;
	CK(cuStreamQuery(s));
	CK(cuEventQuery(ev));
	CK(cuStreamQuery_ptsz(NULL));
	assert_int_equal(stub.unfinished, u);

	launch_sleep(s, 1000);
	CK(cuEventRecord(ev, s));
	CK(cuEventSynchronize(ev));
	CK(cuCtxSynchronize());
	CK(cuCtxSynchronize_v2(NULL));
	CK(cuCtxSynchronize_v2(ctx1));
	CK(cuStreamSynchronize_ptsz(NULL));
	assert_int_equal(stub.syncs_begun, b + 6);
	assert_int_equal(SYNCS_IN(), 0);

	/* The shim's own: through the real entry points. */
	launch_sleep(s, 100000);
	mark = ops->mark_new();
	assert_non_null(mark);
	assert_int_equal(ops->mark_record(mark, s), 0);
	assert_int_equal(ops->mark_state(mark), 0);
	assert_int_equal(ops->sync_device(0), 0);
	assert_int_equal(ops->mark_state(mark), 1);
	ops->mark_free(mark);
	assert_int_equal(stub.syncs_begun, b + 6);
	assert_int_equal(stub.unfinished, u);

	/* A capturing stream's query and wait: the driver's refusal, as the
	 * program would get it without the shim. */
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	launch_sleep(s, 1000);
	assert_int_equal(cuStreamQuery(s),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(stub.unfinished, u);
	assert_int_not_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
	assert_int_equal(SYNCS_IN(), 0);
	CK(cuEventDestroy_v2(ev));
	CK(cuStreamDestroy_v2(s));
}

/* The driver frees a context's memory with the context: destroying it,
 * or resetting a primary context, takes that memory off the footprint. */
static void test_context_memory(void **state)
{
	CUcontext own, cur;
	CUdeviceptr a, b, keep;
	uint64_t m0, m;
	int ch;

	(void)state;
	FOOTPRINT(0, &m0, NULL);
	CK(cuMemAlloc_v2(&keep, 1 << 20));
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	CK(cuMemAlloc_v2(&a, 2 << 20));
	FOOTPRINT(0, &m, NULL);
	assert_int_equal(m, m0 + (3 << 20));
	ch = stub.fp_changes[0];
	CK(cuCtxDestroy_v2(own));
	assert_int_equal(stub.fp_changes[0], ch + 1);
	FOOTPRINT(0, &m, NULL);
	assert_int_equal(m, m0 + (1 << 20));
	CK(cuCtxGetCurrent(&cur));
	if (cur != ctx0)
		CK(cuCtxSetCurrent(ctx0));
	CK(cuMemFree_v2(keep));

	CK(cuCtxSetCurrent(ctx1));
	CK(cuMemAlloc_v2(&b, 4 << 20));
	FOOTPRINT(1, &m, NULL);
	assert_int_equal(m, 4 << 20);
	CK(cuDevicePrimaryCtxReset_v2(1));
	FOOTPRINT(1, &m, NULL);
	assert_int_equal(m, 0);
	CK(cuCtxSetCurrent(ctx0));
}

/* A driver may hand out addresses that are not its exports: the variant
 * is then told by the driver's rule (version, per-thread flag). */
static void not_an_export(void)
{
}

static void *proc(const char *base, int version, int pt)
{
	return hook_for_proc(base, (void *)not_an_export, version,
			     pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0);
}

#define HOOK_OF(sym) (hook_infos[HK_##sym].hook)

static void test_proc_rule(void **state)
{
	(void)state;
	assert_ptr_equal(proc("cuMemAlloc", 13000, 0), HOOK_OF(cuMemAlloc_v2));
	assert_ptr_equal(proc("cuMemAlloc", 13000, 1), HOOK_OF(cuMemAlloc_v2));
	assert_ptr_equal(proc("cuLaunchKernel", 12000, 0), HOOK_OF(cuLaunchKernel));
	assert_ptr_equal(proc("cuLaunchKernel", 12000, 1),
			 HOOK_OF(cuLaunchKernel_ptsz));
	assert_ptr_equal(proc("cuMemcpyHtoD", 13000, 0), HOOK_OF(cuMemcpyHtoD_v2));
	assert_ptr_equal(proc("cuMemcpyHtoD", 13000, 1),
			 HOOK_OF(cuMemcpyHtoD_v2_ptds));
	assert_ptr_equal(proc("cuMemcpyHtoD", 3000, 0), HOOK_OF(cuMemcpyHtoD));
	assert_ptr_equal(proc("cuStreamBeginCapture", 10000, 0),
			 HOOK_OF(cuStreamBeginCapture));
	assert_ptr_equal(proc("cuStreamBeginCapture", 10010, 1),
			 HOOK_OF(cuStreamBeginCapture_v2_ptsz));
	assert_ptr_equal(proc("cuMemPrefetchAsync", 12010, 0),
			 HOOK_OF(cuMemPrefetchAsync));
	assert_ptr_equal(proc("cuMemPrefetchAsync", 12020, 0),
			 HOOK_OF(cuMemPrefetchAsync_v2));
	assert_ptr_equal(proc("cuGetProcAddress", 11030, 0),
			 HOOK_OF(cuGetProcAddress));
	assert_ptr_equal(proc("cuGetProcAddress", 12000, 1),
			 HOOK_OF(cuGetProcAddress_v2));
	assert_ptr_equal(proc("cuCtxCreate", 12050, 0), HOOK_OF(cuCtxCreate_v4));
	/* An allocation or a submission older than every hooked variant:
	 * refused (NULL), not handed out around the shim. */
	assert_null(proc("cuMemAlloc", 3000, 0));
	assert_null(proc("cuMemAlloc", 2000, 0));
	assert_null(proc("cuMemcpyPeer", 3000, 0));
	assert_null(proc("cuMemCreate", 10010, 0));
	/* The variants of a context's end that the CUDA runtime asks for
	 * (7000) have hooks of their own. */
	assert_ptr_equal(proc("cuDevicePrimaryCtxRelease", 10000, 0),
			 HOOK_OF(cuDevicePrimaryCtxRelease));
	assert_ptr_equal(proc("cuDevicePrimaryCtxRelease", 7000, 0),
			 HOOK_OF(cuDevicePrimaryCtxRelease));
	assert_ptr_equal(proc("cuDevicePrimaryCtxRelease", 11000, 0),
			 HOOK_OF(cuDevicePrimaryCtxRelease_v2));
	assert_ptr_equal(proc("cuDevicePrimaryCtxReset", 7000, 0),
			 HOOK_OF(cuDevicePrimaryCtxReset));
	/* The waits and queries: CUDA 13's context synchronize takes the
	 * context, the per-thread stream ones have their own hooks. */
	assert_ptr_equal(proc("cuCtxSynchronize", 12090, 0),
			 HOOK_OF(cuCtxSynchronize));
	assert_ptr_equal(proc("cuCtxSynchronize", 13000, 0),
			 HOOK_OF(cuCtxSynchronize_v2));
	assert_ptr_equal(proc("cuStreamSynchronize", 13000, 1),
			 HOOK_OF(cuStreamSynchronize_ptsz));
	assert_ptr_equal(proc("cuStreamQuery", 13000, 1),
			 HOOK_OF(cuStreamQuery_ptsz));
	assert_ptr_equal(proc("cuEventQuery", 13000, 1), HOOK_OF(cuEventQuery));
	/* Any other call older than every hooked variant cannot escape the
	 * limit or the lock: the driver's own function. Not hooked, or
	 * unknown: left as the driver's too. */
	assert_ptr_equal(proc("cuMemFree", 2000, 0), (void *)not_an_export);
	assert_ptr_equal(proc("cuMemGetInfo", 2000, 0), (void *)not_an_export);
	assert_ptr_equal(proc("cuCtxDestroy", 3000, 0), (void *)not_an_export);
	assert_ptr_equal(proc("cuMemRelease", 10010, 0), (void *)not_an_export);
	assert_ptr_equal(proc("cuCtxGetCurrent", 13000, 0), (void *)not_an_export);
	assert_ptr_equal(proc("cuNoSuchThing", 13000, 0), (void *)not_an_export);
	/* The driver's own export and the hook itself map to the hook. */
	assert_ptr_equal(hook_for_proc("cuMemAlloc", hook_real_tab[HK_cuMemAlloc_v2],
				       13000, 0), HOOK_OF(cuMemAlloc_v2));
	assert_ptr_equal(hook_for_proc("cuMemAlloc", HOOK_OF(cuMemAlloc_v2),
				       13000, 0), HOOK_OF(cuMemAlloc_v2));
	assert_int_equal(hook_find("cuLaunchKernel_ptsz"), HK_cuLaunchKernel_ptsz);
	assert_int_equal(hook_find("cuCtxGetCurrent"), -1);
	assert_int_equal(hook_find("cuNoSuchThing"), -1);
}

/* The cache of stream-ordered memory at a release of the GPU lock
 * (sync_device): each pool keeps its release threshold, oldest blocks
 * go first, other devices keep theirs; the footprint follows. A
 * destroyed context takes its cached blocks with it. */
static void test_async_cache_sync(void **state)
{
	const struct gate_cuda_ops *ops = stub.ops;
	struct mem_cache_stats st0, st;
	CUmemoryPool pool;
	CUcontext own, cur;
	CUstream s, s1;
	CUdeviceptr p, q, r;
	cuuint64_t thr = 1 << 20, zero = 0;
	uint64_t m, pin, m0;

	(void)state;
	CK(cuCtxSetCurrent(ctx0));
	CK(cuDeviceGetDefaultMemPool(&pool, 0));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	FOOTPRINT(0, &m0, &pin);
	mem_cache_stats(&st0);
	CK(cuMemAllocAsync(&p, 1 << 20, s));
	CK(cuMemAllocAsync(&q, 2 << 20, s));
	CK(cuMemFreeAsync(q, s));
	CK(cuMemFreeAsync(p, s));
	CK(cuMemAllocAsync(&r, 1 << 20, s));
	assert_true(r == p);
	CK(cuMemFreeAsync(r, s));
	mem_cache_stats(&st);
	assert_int_equal(st.hits_same, st0.hits_same + 1);
	assert_int_equal(st.puts, st0.puts + 3);
	assert_int_equal(mem_cache_bytes(0), 3 << 20);
	FOOTPRINT(0, &m, &pin);
	assert_int_equal(m, m0 + (3 << 20));

	/* A block of device 1, which a release of device 0 leaves (its
	 * primary context again: test_context_memory reset it). */
	CK(cuDevicePrimaryCtxRetain(&ctx1, 1));
	CK(cuCtxSetCurrent(ctx1));
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocAsync(&r, 1 << 20, s1));
	CK(cuMemFreeAsync(r, s1));
	CK(cuCtxSetCurrent(ctx0));

	CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr));
	assert_int_equal(ops->sync_device(0), 0);
	assert_int_equal(mem_cache_bytes(0), 1 << 20);   /* q went, p stays */
	FOOTPRINT(0, &m, &pin);
	assert_int_equal(m, m0 + (1 << 20));
	CK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero));
	assert_int_equal(ops->sync_device(0), 0);
	assert_int_equal(mem_cache_bytes(0), 0);
	FOOTPRINT(0, &m, &pin);
	assert_int_equal(m, m0);
	assert_int_equal(mem_cache_bytes(1), 1 << 20);
	assert_int_equal(ops->sync_device(1), 0);
	assert_int_equal(mem_cache_bytes(1), 0);

	/* A context's own cached blocks go with it. */
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	CK(cuMemAllocAsync(&r, 1 << 20, NULL));
	CK(cuMemFreeAsync(r, NULL));
	assert_int_equal(mem_cache_bytes(0), 1 << 20);
	CK(cuCtxPopCurrent_v2(&cur));
	CK(cuCtxDestroy_v2(own));
	assert_int_equal(mem_cache_bytes(0), 0);
	FOOTPRINT(0, &m, &pin);
	assert_int_equal(m, m0);
	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamDestroy_v2(s));
}

static int allocated(CUdeviceptr p)
{
	size_t sz = 0;

	return cuPointerGetAttribute(&sz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) ==
		       CUDA_SUCCESS && sz > 0;
}

/* What the shim keeps of a context goes with it: a cached block is never
 * served to another context (the driver frees it with its own), pending
 * deferred frees are done before the destroy (no event of a dead context
 * is touched later), and the last release of a primary context drops its
 * cached blocks and takes its memory off the footprint. */
static void test_context_goes(void **state)
{
	CUcontext own, cur;
	CUstream s, so;
	CUdeviceptr p, q, a;
	uint32_t *word;
	void *host;
	uint64_t m;
	unsigned int flags;
	int active;

	(void)state;
	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuCtxCreate_v4(&own, NULL, 0, 0));
	CK(cuStreamCreate(&so, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocAsync(&p, 1 << 20, so));
	CK(cuMemFreeAsync(p, so));
	CK(cuStreamSynchronize(so));
	/* cuMemAlloc memory freed in stream order: deferred, not cached;
	 * its stream held until just before the destroy, so that no later
	 * call can have done the free. */
	CK(cuMemAlloc_v2(&a, 1 << 20));
	CK(cuMemAllocHost_v2(&host, sizeof(*word)));
	word = host;
	*word = 0;
	CK(cuStreamWaitValue32_v2(so, (CUdeviceptr)(uintptr_t)word, 1,
				  CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuMemFreeAsync(a, so));
	assert_int_equal(mem_defer_pending(), 1);
	CK(cuCtxPushCurrent_v2(ctx0));
	CK(cuMemAllocAsync(&q, 1 << 20, s));
	assert_true(q != p);
	CK(cuMemFreeAsync(q, s));
	CK(cuCtxPopCurrent_v2(&cur));
	assert_int_equal(mem_defer_pending(), 1);
	__atomic_store_n(word, 1, __ATOMIC_RELEASE);
	CK(cuStreamSynchronize(so));
	CK(cuStreamDestroy_v2(so));
	CK(cuCtxPopCurrent_v2(&cur));
	CK(cuCtxDestroy_v2(own));
	assert_int_equal(mem_defer_pending(), 0);	/* word went with own */
	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamDestroy_v2(s));

	/* The last release of device 1's primary context. */
	CK(cuDevicePrimaryCtxRetain(&ctx1, 1));
	CK(cuCtxSetCurrent(ctx1));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocAsync(&p, 1 << 20, s));
	CK(cuMemFreeAsync(p, s));
	CK(cuStreamSynchronize(s));
	CK(cuStreamDestroy_v2(s));
	assert_int_equal(mem_cache_bytes(1), 1 << 20);
	CK(cuCtxSetCurrent(ctx0));
	do {
		CK(cuDevicePrimaryCtxRelease_v2(1));
		CK(cuDevicePrimaryCtxGetState(1, &flags, &active));
	} while (active);
	assert_int_equal(mem_cache_bytes(1), 0);
	FOOTPRINT(1, &m, NULL);
	assert_int_equal(m, 0);
	CK(cuDevicePrimaryCtxRetain(&ctx1, 1));
	CK(cuCtxSetCurrent(ctx1));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocAsync(&q, 1 << 20, s));
	assert_true(allocated(q));
	CK(cuMemFreeAsync(q, s));
	CK(cuStreamSynchronize(s));
	CK(cuStreamDestroy_v2(s));
	CK(cuCtxSetCurrent(ctx0));

	/* The same through the older variant, which the CUDA runtime asks
	 * for (tests/shim/cuda13_procaddr.txt). */
	assert_int_equal(mem_cache_bytes(1), 1 << 20);
	do {
		CK(cuDevicePrimaryCtxRelease(1));
		CK(cuDevicePrimaryCtxGetState(1, &flags, &active));
	} while (active);
	assert_int_equal(mem_cache_bytes(1), 0);
	CK(cuDevicePrimaryCtxRetain(&ctx1, 1));
	CK(cuCtxSetCurrent(ctx0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_context_prepares),
		cmocka_unit_test(test_footprint_prefetch),
		cmocka_unit_test(test_swap_chunks),
		cmocka_unit_test(test_prefetch_new),
		cmocka_unit_test(test_sync_device),
		cmocka_unit_test(test_refused_destroy),
		cmocka_unit_test(test_submission_streams),
		cmocka_unit_test(test_capture_deltas),
		cmocka_unit_test(test_wait_hooks),
		cmocka_unit_test(test_context_memory),
		cmocka_unit_test(test_proc_rule),
		cmocka_unit_test(test_async_cache_sync),
		cmocka_unit_test(test_context_goes),
	};
	int fd = mkstemp(log_path), rc;

	if (fd < 0)
		return 1;
	close(fd);
	setenv("VSHARE_TD_LOG", log_path, 1);
	setenv("VSHARE_TD_DEVICES", "2", 1);
	setenv("VSHARE_TD_MEM", "256M", 1);
	rc = cmocka_run_group_tests(tests, setup, NULL);
	unlink(log_path);
	return rc;
}
