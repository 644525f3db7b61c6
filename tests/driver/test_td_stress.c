/*
 * Many threads using the test driver at once: streams created and
 * destroyed, kernels, copies, events, allocations and frees, context
 * synchronisation. Checks results, and under TSan checks the locking.
 */
#include "tdt.h"

#include <pthread.h>
#include <string.h>

#define THREADS 6
#define ROUNDS 40
#define N 256

static CUcontext ctx;
static CUfunction fill_fn;

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	CUstream s;
	CUevent e;
	CUdeviceptr p;
	float host[N];
	int r, i, n = N;

	CK(cuCtxSetCurrent(ctx));
	for (r = 0; r < ROUNDS; r++) {
		float v = (float)(id * 1000 + r);
		void *args[] = { &p, &v, &n };
		CUstream use;

		CK(cuStreamCreate(&s, r % 2 ? CU_STREAM_NON_BLOCKING : 0));
		use = r % 3 == 0 ? CU_STREAM_PER_THREAD : s;
		CK(cuEventCreate(&e, 0));
		if (r % 2)
			CK(cuMemAllocManaged(&p, sizeof(host), CU_MEM_ATTACH_GLOBAL));
		else
			CK(cuMemAllocAsync(&p, sizeof(host), use));
		CK(cuLaunchKernel(fill_fn, 1, 1, 1, 32, 1, 1, 0, use, args, NULL));
		CK(cuEventRecord(e, use));
		CK(cuStreamWaitEvent(s, e, 0));
		CK(cuMemcpyDtoHAsync_v2(host, p, sizeof(host), s));
		CK(cuStreamSynchronize(s));
		CK(cuStreamSynchronize(use));
		for (i = 0; i < N; i++)
			assert_true(host[i] == v);
		if (r % 2)
			CK(cuMemFree_v2(p));
		else
			CK(cuMemFreeAsync(p, use));
		if (r % 5 == 0)
			CK(cuCtxSynchronize());
		CK(cuEventDestroy_v2(e));
		CK(cuStreamDestroy_v2(s));
	}
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	size_t free0, free1, total;
	int i;

	(void)state;
	ctx = tdt_ctx(0);
	fill_fn = tdt_func("vs_fill");
	CK(cuMemGetInfo_v2(&free0, &total));
	for (i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker,
						 (void *)(intptr_t)i), 0);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	CK(cuCtxSynchronize());
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free1, free0);	/* every async free happened */
	CK(cuDevicePrimaryCtxReset_v2(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
