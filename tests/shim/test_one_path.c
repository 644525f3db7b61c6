/*
 * The one path for the shim's own driver calls (mem/cu_query.h), in
 * process on the CUDA test driver, whose capture rule is the real
 * driver's (tests/driver/capture_rule.txt). Beside another thread's global
 * capture, a call through CUQ() is allowed and leaves the capture valid,
 * where the same call made directly is refused and invalidates it; a call
 * for the program (CUQ_PROG) is answered as the program's would be. Scopes
 * nest, turn cancellation off, hold frees back while a capture is active,
 * and make a context current. Built like test_shim_ops (gate_stub.c).
 */
#include <cuda.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>

#include "cu_query.h"
#include "gate.h"
#include "gate_stub.h"
#include "hooks.h"

#define CK(call) assert_int_equal((call), CUDA_SUCCESS)

static CUcontext ctx0, ctx1;

/* A global capture on another thread: begun, then held until go, then
 * ended; its end's answer in end. */
struct capturer {
	CUstream s;
	pthread_barrier_t begun, go;
	CUresult end;
	pthread_t t;
};

static void *capture_main(void *arg)
{
	struct capturer *c = arg;
	CUgraph g = NULL;

	CK(cuCtxSetCurrent(ctx0));
	CK(cuStreamBeginCapture_v2(c->s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	pthread_barrier_wait(&c->begun);
	pthread_barrier_wait(&c->go);
	c->end = cuStreamEndCapture(c->s, &g);
	if (g != NULL)
		CK(cuGraphDestroy(g));
	return NULL;
}

static void capture_start(struct capturer *c)
{
	CK(cuStreamCreate(&c->s, CU_STREAM_NON_BLOCKING));
	pthread_barrier_init(&c->begun, NULL, 2);
	pthread_barrier_init(&c->go, NULL, 2);
	assert_int_equal(pthread_create(&c->t, NULL, capture_main, c), 0);
	pthread_barrier_wait(&c->begun);
}

/* Ends the capture; its answer. */
static CUresult capture_stop(struct capturer *c)
{
	pthread_barrier_wait(&c->go);
	pthread_join(c->t, NULL);
	pthread_barrier_destroy(&c->begun);
	pthread_barrier_destroy(&c->go);
	CK(cuStreamDestroy_v2(c->s));
	return c->end;
}

static int capture_active(const struct capturer *c)
{
	CUstreamCaptureStatus st;

	CK(cuStreamIsCapturing(c->s, &st));
	return st == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* The calling thread's capture interaction mode. */
static CUstreamCaptureMode thread_mode(void)
{
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_GLOBAL, back;

	CK(REAL(cuThreadExchangeStreamCaptureMode)(&m));
	back = m;
	CK(REAL(cuThreadExchangeStreamCaptureMode)(&back));
	return m;
}

static int cancel_state(void)
{
	int old;

	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	pthread_setcancelstate(old, NULL);
	return old;
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
	return 0;
}

/* The shim's own waits and queries beside a global capture of another
 * thread: allowed through CUQ(); made directly (as before the one path),
 * refused, and the capture is invalidated. */
static void test_own_calls_relaxed(void **state)
{
	struct capturer c;
	CUstream s2;
	CUevent ev;

	(void)state;
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
	CK(cuEventRecord(ev, s2));
	capture_start(&c);
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
	CK(CUQ(cuEventSynchronize, (ev)));
	CK(CUQ(cuEventQuery, (ev)));
	CK(CUQ(cuStreamSynchronize, (s2)));
	assert_true(capture_active(&c));
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
	/* The same query outside the one path. */
	assert_int_equal(REAL(cuEventQuery)(ev),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	assert_false(capture_active(&c));
	assert_int_equal(capture_stop(&c), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
	CK(cuEventDestroy_v2(ev));
	CK(cuStreamDestroy_v2(s2));
}

/* A call for the program keeps the program's mode, inside a scope too:
 * the driver refuses it as it would the program's own. */
static void test_program_calls_keep_mode(void **state)
{
	struct capturer c;
	CUdeviceptr p = 0;

	(void)state;
	capture_start(&c);
	cuq_rules_in();
	assert_int_equal(CUQ_PROG(cuMemAlloc_v2, (&p, 4096)),
			 CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
	/* Relaxed again after it. */
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_RELAXED);
	cuq_rules_out();
	assert_int_equal(capture_stop(&c), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

/* Scopes: the outermost one sets and restores the mode and the
 * cancellation state, inner ones only count; a context is pushed and
 * popped; CUQ_FREES is refused while a capture is counted. */
static void test_scopes(void **state)
{
	struct cuq_scope a, b, f;
	CUcontext cur;

	(void)state;
	assert_int_equal(cancel_state(), PTHREAD_CANCEL_ENABLE);
	assert_int_equal(cuq_enter(&a, 0, NULL), 0);
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_RELAXED);
	assert_int_equal(cancel_state(), PTHREAD_CANCEL_DISABLE);
	assert_int_equal(cuq_enter(&b, 0, ctx1), 0);
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, ctx1);
	cuq_leave(&b);
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, ctx0);
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_RELAXED);
	assert_int_equal(cancel_state(), PTHREAD_CANCEL_DISABLE);
	cuq_leave(&a);
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
	assert_int_equal(cancel_state(), PTHREAD_CANCEL_ENABLE);

	gate_capture_delta(1);
	assert_int_equal(cuq_enter(&f, CUQ_FREES, NULL), -1);
	assert_int_equal(thread_mode(), CU_STREAM_CAPTURE_MODE_GLOBAL);
	gate_capture_delta(-1);
	assert_int_equal(cuq_enter(&f, CUQ_FREES, NULL), 0);
	cuq_leave(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_calls_relaxed),
		cmocka_unit_test(test_program_calls_keep_mode),
		cmocka_unit_test(test_scopes),
	};

	setenv("VSHARE_TD_DEVICES", "2", 1);
	setenv("VSHARE_TD_MEM", "256M", 1);
	return cmocka_run_group_tests(tests, setup, NULL);
}
