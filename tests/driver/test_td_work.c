/*
 * The test driver's work semantics: asynchrony of streams, events,
 * copies and sets, built-in kernels and their launch forms, host
 * functions, stream-ordered free, the legacy default stream.
 */
#include "tdt.h"

#include <string.h>

#define MS 1000000ull

static void test_async_kernel(void **state)
{
	CUstream s;
	uint64_t t0, t1;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	t0 = tdt_now_ns();
	CK(tdt_sleep(s, 200000));
	t1 = tdt_now_ns();
	assert_true(t1 - t0 < 100 * MS);	/* the launch does not wait */
	assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(s));
	assert_true(tdt_now_ns() - t0 >= 200 * MS);
	CK(cuStreamQuery(s));
	CK(cuStreamDestroy_v2(s));
}

static void test_vs_add_fill(void **state)
{
	enum { N = 1000 };
	float ha[N], hb[N], hc[N];
	CUdeviceptr a, b, c;
	CUstream s;
	int n = N, i;
	float v = 2.5f;
	void *add_args[] = { &a, &b, &c, &n };
	void *fill_args[] = { &c, &v, &n };
	CUfunction add = tdt_func("vs_add"), fill = tdt_func("vs_fill");

	(void)state;
	tdt_ctx(0);
	for (i = 0; i < N; i++) {
		ha[i] = (float)i;
		hb[i] = 2.0f * (float)i;
	}
	CK(cuMemAlloc_v2(&a, sizeof(ha)));
	CK(cuMemAlloc_v2(&b, sizeof(hb)));
	CK(cuMemAllocManaged(&c, sizeof(hc), CU_MEM_ATTACH_GLOBAL));
	CK(cuStreamCreate(&s, 0));
	CK(cuMemcpyHtoDAsync_v2(a, ha, sizeof(ha), s));
	CK(cuMemcpyHtoD_v2(b, hb, sizeof(hb)));
	CK(cuLaunchKernel(add, 4, 1, 1, 256, 1, 1, 0, s, add_args, NULL));
	CK(cuMemcpyDtoHAsync_v2(hc, c, sizeof(hc), s));
	CK(cuStreamSynchronize(s));
	for (i = 0; i < N; i++)
		assert_true(hc[i] == 3.0f * (float)i);
	CK(cuLaunchKernel_ptsz(fill, 1, 1, 1, 1, 1, 1, 0, s, fill_args, NULL));
	CK(cuStreamSynchronize(s));
	assert_true(((float *)(uintptr_t)c)[N - 1] == 2.5f);
	/* Arguments through CU_LAUNCH_PARAM_BUFFER_POINTER. */
	{
		struct { CUdeviceptr p; float v; int n; } buf = { c, 7.0f, N };
		size_t size = sizeof(buf);
		void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, &buf,
				  CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
				  CU_LAUNCH_PARAM_END };

		CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
		CK(cuCtxSynchronize());
		assert_true(((float *)(uintptr_t)c)[0] == 7.0f);
	}
	CK(cuStreamDestroy_v2(s));
	CK(cuMemFree_v2(a));
	CK(cuMemFree_v2(b));
	CK(cuMemFree_v2(c));
}

static void test_launch_forms(void **state)
{
	CUdeviceptr p;
	int n = 16;
	float v = 1.0f;
	void *args[] = { &p, &v, &n };
	CUfunction fill = tdt_func("vs_fill");
	CUlaunchConfig cfg = { 0 };
	CUlibrary lib;
	CUkernel k;
	CUfunction kf;
	CUmodule m;
	CUfunction f;

	(void)state;
	tdt_ctx(0);
	CK(cuMemAllocManaged(&p, 64, CU_MEM_ATTACH_GLOBAL));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	CK(cuLaunchKernelEx(&cfg, fill, args, NULL));
	CK(cuCtxSynchronize());
	assert_true(((float *)(uintptr_t)p)[15] == 1.0f);
	v = 2.0f;
	CK(cuLaunchCooperativeKernel(fill, 1, 1, 1, 1, 1, 1, 0, NULL, args));
	CK(cuCtxSynchronize());
	assert_true(((float *)(uintptr_t)p)[15] == 2.0f);
	v = 3.0f;
	CK(cuLibraryLoadData(&lib, "ptx", NULL, NULL, 0, NULL, NULL, 0));
	CK(cuLibraryGetKernel(&k, lib, "vs_fill"));
	CK(cuKernelGetFunction(&kf, k));
	CK(cuLaunchKernel(kf, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
	CK(cuCtxSynchronize());
	assert_true(((float *)(uintptr_t)p)[0] == 3.0f);
	CK(cuModuleLoadData(&m, "ptx"));
	assert_int_equal(cuModuleGetFunction(&f, m, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(cuLaunchKernel(fill, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	CK(cuModuleUnload(m));
	CK(cuLibraryUnload(lib));
	CK(cuMemFree_v2(p));
}

static void test_copies_and_sets(void **state)
{
	CUdeviceptr d, e;
	unsigned char h[64], back[64];
	uint32_t w[16];
	uint16_t hw[8];
	CUDA_MEMCPY2D c2 = { 0 };
	int i;

	(void)state;
	tdt_ctx(0);
	for (i = 0; i < 64; i++)
		h[i] = (unsigned char)i;
	CK(cuMemAlloc_v2(&d, 64));
	CK(cuMemAlloc_v2(&e, 64));
	CK(cuMemcpyHtoD_v2_ptds(d, h, 64));
	CK(cuMemcpyDtoD_v2(e, d, 64));
	CK(cuMemcpy(e + 32, d, 8));
	CK(cuMemcpyDtoH_v2(back, e, 64));
	assert_memory_equal(back, h, 32);
	assert_memory_equal(back + 32, h, 8);
	CK(cuMemsetD8_v2(d, 0xab, 64));
	CK(cuMemcpyDtoH_v2(back, d, 64));
	assert_int_equal(back[63], 0xab);
	CK(cuMemsetD32Async(d, 0x01020304, 16, NULL));
	CK(cuMemsetD16_v2_ptds(e, 0xbeef, 8));
	CK(cuMemcpyDtoH_v2(w, d, 64));
	CK(cuMemcpyDtoH_v2(hw, e, 16));
	assert_int_equal(w[15], 0x01020304);
	assert_int_equal(hw[7], 0xbeef);
	/* 2D: four rows of 8 bytes from a pitch-16 host image. */
	c2.srcMemoryType = CU_MEMORYTYPE_HOST;
	c2.srcHost = h;
	c2.srcPitch = 16;
	c2.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c2.dstDevice = d;
	c2.dstPitch = 8;
	c2.WidthInBytes = 8;
	c2.Height = 4;
	CK(cuMemcpy2D_v2(&c2));
	CK(cuMemcpyDtoH_v2(back, d, 32));
	assert_memory_equal(back + 8, h + 16, 8);
	assert_memory_equal(back + 24, h + 48, 8);
	CK(cuMemsetD2D8_v2(d, 8, 0, 4, 4));
	CK(cuMemcpyDtoH_v2(back, d, 32));
	assert_int_equal(back[3], 0);
	assert_int_equal(back[4], h[4]);
	CK(cuMemFree_v2(d));
	CK(cuMemFree_v2(e));
}

static void test_events(void **state)
{
	CUstream s;
	CUevent a, b;
	float ms = 0;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&a, 0));
	CK(cuEventCreate(&b, 0));
	CK(cuEventQuery(a));	/* never recorded: complete */
	CK(cuEventRecord(a, s));
	CK(tdt_sleep(s, 100000));
	CK(cuEventRecord(b, s));
	assert_int_equal(cuEventQuery(b), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuEventElapsedTime_v2(&ms, a, b), CUDA_ERROR_NOT_READY);
	CK(cuEventSynchronize(b));
	CK(cuEventQuery(b));
	CK(cuEventElapsedTime_v2(&ms, a, b));
	assert_true(ms >= 99.0f && ms < 1000.0f);
	CK(cuEventRecord(a, s));
	CK(cuEventDestroy_v2(a));	/* with a record pending */
	CK(cuEventDestroy_v2(b));
	CK(cuStreamDestroy_v2(s));
}

static void test_wait_event_orders_streams(void **state)
{
	CUstream s1, s2;
	CUevent e;
	CUdeviceptr p;
	int n = 1;
	float v = 9.0f;
	void *args[] = { &p, &v, &n };
	float out = 0;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	CK(cuMemAllocManaged(&p, 4, CU_MEM_ATTACH_GLOBAL));
	*(float *)(uintptr_t)p = 0;
	CK(tdt_sleep(s1, 100000));
	CK(cuLaunchKernel(tdt_func("vs_fill"), 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
	CK(cuEventRecord(e, s1));
	CK(cuStreamWaitEvent(s2, e, 0));
	CK(cuMemcpyDtoHAsync_v2(&out, p, 4, s2));
	CK(cuStreamSynchronize(s2));
	assert_true(out == 9.0f);	/* s2's copy waited for s1's fill */
	CK(cuEventDestroy_v2(e));
	CK(cuStreamDestroy_v2(s1));
	CK(cuStreamDestroy_v2(s2));
	CK(cuMemFree_v2(p));
}

static void test_legacy_stream_syncs_blocking(void **state)
{
	CUstream blocking, nonblocking;
	uint64_t t0;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
	CK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
	CK(tdt_sleep(nonblocking, 300000));
	CK(tdt_sleep(blocking, 100000));
	t0 = tdt_now_ns();
	/* The legacy stream waits for the blocking stream only. */
	CK(tdt_sleep(CU_STREAM_LEGACY, 1));
	CK(cuStreamSynchronize(NULL));
	assert_true(tdt_now_ns() - t0 >= 90 * MS);
	assert_int_equal(cuStreamQuery(nonblocking), CUDA_ERROR_NOT_READY);
	CK(cuCtxSynchronize());
	CK(cuStreamQuery(nonblocking));
	CK(cuStreamDestroy_v2(blocking));
	CK(cuStreamDestroy_v2(nonblocking));
}

static void test_per_thread_stream(void **state)
{
	CUstream got;
	CUcontext c = tdt_ctx(0), sc;
	unsigned int flags;

	(void)state;
	CK(tdt_sleep(CU_STREAM_PER_THREAD, 100000));
	assert_int_equal(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
	assert_int_equal(cuStreamQuery_ptsz(NULL), CUDA_ERROR_NOT_READY);
	CK(cuStreamQuery(NULL));	/* legacy: nothing queued there */
	CK(cuStreamSynchronize_ptsz(NULL));
	CK(cuStreamQuery(CU_STREAM_PER_THREAD));
	got = CU_STREAM_PER_THREAD;
	CK(cuStreamGetCtx(got, &sc));
	assert_ptr_equal(sc, c);
	CK(cuStreamGetFlags_ptsz(NULL, &flags));
}

static int host_calls;

static void CUDA_CB host_fn(void *data)
{
	__atomic_add_fetch((int *)data, 1, __ATOMIC_SEQ_CST);
}

static void CUDA_CB stream_cb(CUstream s, CUresult st, void *data)
{
	(void)s;
	assert_int_equal(st, CUDA_SUCCESS);
	__atomic_add_fetch((int *)data, 10, __ATOMIC_SEQ_CST);
}

static void test_host_funcs(void **state)
{
	CUstream s;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, 0));
	CK(tdt_sleep(s, 50000));
	CK(cuLaunchHostFunc(s, host_fn, &host_calls));
	CK(cuStreamAddCallback(s, stream_cb, &host_calls, 0));
	assert_int_equal(__atomic_load_n(&host_calls, __ATOMIC_SEQ_CST), 0);
	CK(cuStreamSynchronize(s));
	assert_int_equal(host_calls, 11);
	CK(cuStreamDestroy_v2(s));
}

static void test_stream_ordered_free(void **state)
{
	CUstream s;
	CUdeviceptr p;
	CUmemoryPool pool, dpool;
	CUmemPoolProps props = { 0 };
	unsigned int managed;
	size_t free0, free1, total;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemGetInfo_v2(&free0, &total));
	CK(cuMemAllocAsync(&p, 1 << 20, s));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free0 - free1, 1 << 20);
	CK(cuPointerGetAttribute(&dpool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
	CK(cuDeviceGetDefaultMemPool(&pool, 0));
	assert_ptr_equal(dpool, pool);
	CK(tdt_sleep(s, 150000));
	CK(cuMemFreeAsync(p, s));
	/* The stream has not reached the free: still allocated. */
	CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	CK(cuStreamSynchronize(s));
	assert_int_equal(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p),
			 CUDA_ERROR_INVALID_VALUE);
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free1, free0);
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CK(cuMemPoolCreate(&pool, &props));
	CK(cuMemAllocFromPoolAsync(&p, 4096, pool, s));
	CK(cuPointerGetAttribute(&dpool, CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE, p));
	assert_ptr_equal(dpool, pool);
	CK(cuMemFreeAsync_ptsz(p, s));
	CK(cuStreamSynchronize(s));
	CK(cuMemPoolDestroy(pool));
	CK(cuStreamDestroy_v2(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async_kernel),
		cmocka_unit_test(test_vs_add_fill),
		cmocka_unit_test(test_launch_forms),
		cmocka_unit_test(test_copies_and_sets),
		cmocka_unit_test(test_events),
		cmocka_unit_test(test_wait_event_orders_streams),
		cmocka_unit_test(test_legacy_stream_syncs_blocking),
		cmocka_unit_test(test_per_thread_stream),
		cmocka_unit_test(test_host_funcs),
		cmocka_unit_test(test_stream_ordered_free),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
