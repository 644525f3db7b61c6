/*
 * Stream capture and graph replay: captured work is recorded, not run;
 * a launched graph runs it; illegal synchronisation invalidates a capture.
 */
#include <pthread.h>

#include "tdt.h"

static float *fptr(CUdeviceptr p) { return (float *)(uintptr_t)p; }

static CUresult fill(CUstream s, CUdeviceptr p, float v, int n)
{
	void *args[] = { &p, &v, &n };

	return cuLaunchKernel(tdt_func("vs_fill"), 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static void test_capture_and_replay(void **state)
{
	CUstream s;
	CUdeviceptr p, q;
	CUgraph g;
	CUgraphExec x;
	CUstreamCaptureStatus st;
	size_t nodes = 0;
	cuuint64_t id = 0;
	float one = 1.0f;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocManaged(&p, 64, CU_MEM_ATTACH_GLOBAL));
	CK(cuMemAllocManaged(&q, 64, CU_MEM_ATTACH_GLOBAL));
	fptr(p)[0] = 0;
	fptr(q)[0] = 0;
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CK(cuStreamGetCaptureInfo_v3(s, &st, &id, NULL, NULL, NULL, NULL));
	assert_true(id != 0);
	CK(tdt_sleep(s, 1000));
	CK(fill(s, p, 5.0f, 16));
	CK(cuMemcpyHtoDAsync_v2(q, &one, sizeof(one), s));
	CK(cuStreamEndCapture(s, &g));
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CK(cuStreamSynchronize(s));
	assert_true(fptr(p)[0] == 0.0f);	/* recorded, not run */
	assert_true(fptr(q)[0] == 0.0f);
	CK(cuGraphGetNodes(g, NULL, &nodes));
	assert_int_equal(nodes, 3);
	CK(cuGraphInstantiateWithFlags(&x, g, 0));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	assert_true(fptr(p)[15] == 5.0f);
	assert_true(fptr(q)[0] == 1.0f);
	fptr(p)[15] = 0;
	CK(cuGraphLaunch_ptsz(x, s));	/* replays */
	CK(cuStreamSynchronize(s));
	assert_true(fptr(p)[15] == 5.0f);
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuStreamDestroy_v2(s));
	CK(cuMemFree_v2(p));
	CK(cuMemFree_v2(q));
}

static void test_illegal_sync_invalidates(void **state)
{
	CUstream s;
	CUgraph g = (CUgraph)1;
	CUstreamCaptureStatus st;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK(cuStreamIsCapturing(s, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_null(g);
	/* A context synchronisation during a global capture is illegal too ... */
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* ... and in relaxed mode as well (the real driver refuses it in
	 * every mode: tests/driver/capture_rule.txt). */
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	/* Legacy-stream work while a blocking stream captures is refused. */
	{
		CUstream b;

		CK(cuStreamCreate(&b, CU_STREAM_DEFAULT));
		CK(cuStreamBeginCapture_v2(b, CU_STREAM_CAPTURE_MODE_GLOBAL));
		assert_int_equal(tdt_sleep(NULL, 1), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
		assert_int_equal(cuStreamEndCapture(b, &g),
				 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
		CK(tdt_sleep(NULL, 1));	/* fine again after the capture */
		CK(cuStreamDestroy_v2(b));
	}
	/* The legacy stream cannot capture. */
	assert_int_equal(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	CK(cuStreamDestroy_v2(s));
}

/* Potentially unsafe calls (allocations, frees, event queries) during a
 * capture: refused and the capture invalidated where the thread's mode
 * and the capture's say so. */
struct unsafe_probe {
	CUcontext ctx;
	CUevent ev;
	CUstreamCaptureMode mode;	/* the probing thread's */
	CUresult query, alloc;
};

static void *probe_unsafe(void *arg)
{
	struct unsafe_probe *u = arg;
	CUstreamCaptureMode m = u->mode;
	CUdeviceptr p;

	CK(cuCtxSetCurrent(u->ctx));
	CK(cuThreadExchangeStreamCaptureMode(&m));
	u->query = cuEventQuery(u->ev);
	u->alloc = cuMemAlloc_v2(&p, 64);
	if (u->alloc == CUDA_SUCCESS)
		CK(cuMemFree_v2(p));
	CK(cuThreadExchangeStreamCaptureMode(&m));
	return NULL;
}

/* A capture of mode cap_mode on s, probed from another thread in mode
 * thread_mode; whether the capture then ends well. */
static CUresult probe_from_thread(CUstream s, CUstreamCaptureMode cap_mode,
				  CUstreamCaptureMode thread_mode,
				  struct unsafe_probe *u)
{
	pthread_t t;
	CUgraph g;
	CUresult rc;

	u->mode = thread_mode;
	CK(cuStreamBeginCapture_v2(s, cap_mode));
	assert_int_equal(pthread_create(&t, NULL, probe_unsafe, u), 0);
	pthread_join(t, NULL);
	rc = cuStreamEndCapture(s, &g);
	if (rc == CUDA_SUCCESS)
		CK(cuGraphDestroy(g));
	return rc;
}

static void test_unsafe_calls(void **state)
{
	struct unsafe_probe u = { 0 };
	CUstreamCaptureMode m;
	CUstream s;
	CUdeviceptr p;
	CUgraph g;

	(void)state;
	u.ctx = tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&u.ev, CU_EVENT_DISABLE_TIMING));
	/* Another thread's global capture binds a thread in global mode. */
	assert_int_equal(probe_from_thread(s, CU_STREAM_CAPTURE_MODE_GLOBAL,
					   CU_STREAM_CAPTURE_MODE_GLOBAL, &u),
			 CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	assert_int_equal(u.query, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(u.alloc, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	/* Not one in relaxed or thread-local mode. */
	CK(probe_from_thread(s, CU_STREAM_CAPTURE_MODE_GLOBAL,
			     CU_STREAM_CAPTURE_MODE_RELAXED, &u));
	CK(u.query);
	CK(u.alloc);
	CK(probe_from_thread(s, CU_STREAM_CAPTURE_MODE_GLOBAL,
			     CU_STREAM_CAPTURE_MODE_THREAD_LOCAL, &u));
	CK(u.query);
	/* A thread-local or relaxed capture binds no other thread. */
	CK(probe_from_thread(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
			     CU_STREAM_CAPTURE_MODE_GLOBAL, &u));
	CK(u.query);
	CK(probe_from_thread(s, CU_STREAM_CAPTURE_MODE_RELAXED,
			     CU_STREAM_CAPTURE_MODE_GLOBAL, &u));
	CK(u.query);
	/* The capturing thread itself, thread-local: refused, unless it
	 * switched itself to relaxed. */
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	assert_int_equal(cuMemFree_v2(0x1000), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	m = CU_STREAM_CAPTURE_MODE_RELAXED;
	CK(cuThreadExchangeStreamCaptureMode(&m));
	assert_int_equal(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
	CK(cuEventQuery(u.ev));
	CK(cuMemAllocManaged(&p, 64, CU_MEM_ATTACH_GLOBAL));
	CK(cuThreadExchangeStreamCaptureMode(&m));
	assert_int_equal(m, CU_STREAM_CAPTURE_MODE_RELAXED);
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphDestroy(g));
	CK(cuMemFree_v2(p));
	CK(cuEventDestroy_v2(u.ev));
	CK(cuStreamDestroy_v2(s));
}

static void test_fork_join(void **state)
{
	CUstream s1, s2;
	CUevent fork_ev, join_ev;
	CUstreamCaptureStatus st;
	CUdeviceptr p;
	CUgraph g;
	CUgraphExec x;
	size_t nodes;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&fork_ev, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&join_ev, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAllocManaged(&p, 64, CU_MEM_ATTACH_GLOBAL));
	fptr(p)[0] = fptr(p)[8] = 0;
	CK(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	CK(cuEventRecord(fork_ev, s1));
	CK(cuStreamWaitEvent(s2, fork_ev, 0));
	CK(cuStreamIsCapturing(s2, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
	CK(fill(s1, p, 1.0f, 8));
	CK(fill(s2, p + 32, 2.0f, 8));
	CK(cuEventRecord(join_ev, s2));
	CK(cuStreamWaitEvent(s1, join_ev, 0));
	CK(cuStreamEndCapture(s1, &g));
	CK(cuStreamIsCapturing(s2, &st));
	assert_int_equal(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CK(cuGraphGetNodes(g, NULL, &nodes));
	assert_int_equal(nodes, 2);
	assert_true(fptr(p)[0] == 0.0f && fptr(p)[8] == 0.0f);
	CK(cuGraphInstantiateWithFlags(&x, g, 0));
	CK(cuGraphLaunch(x, s1));
	CK(cuStreamSynchronize(s1));
	assert_true(fptr(p)[0] == 1.0f && fptr(p)[8] == 2.0f);
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuEventDestroy_v2(fork_ev));
	CK(cuEventDestroy_v2(join_ev));
	CK(cuStreamDestroy_v2(s1));
	CK(cuStreamDestroy_v2(s2));
	CK(cuMemFree_v2(p));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_and_replay),
		cmocka_unit_test(test_illegal_sync_invalidates),
		cmocka_unit_test(test_unsafe_calls),
		cmocka_unit_test(test_fork_join),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
