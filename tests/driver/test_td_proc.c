/*
 * cuGetProcAddress(_v2): base names resolve to the variant that the given
 * CUDA version and stream flag select, as distinct exported functions.
 */
#include "tdt.h"

#include <dlfcn.h>

static void *proc(const char *name, int version, cuuint64_t flags,
		  CUdriverProcAddressQueryResult *st)
{
	void *p = (void *)1;
	CUresult rc = cuGetProcAddress_v2(name, &p, version, flags, st);

	if (rc != CUDA_SUCCESS)
		assert_null(p);
	return p;
}

static void test_versions(void **state)
{
	CUdriverProcAddressQueryResult st;

	(void)state;
	CK(cuInit(0));
	assert_ptr_equal(proc("cuMemAlloc", 13000, 0, &st), (void *)cuMemAlloc_v2);
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SUCCESS);
	assert_ptr_equal(proc("cuCtxCreate", 12080, 0, &st), (void *)cuCtxCreate_v3);
	assert_ptr_equal(proc("cuCtxCreate", 13000, 0, &st), (void *)cuCtxCreate_v4);
	assert_ptr_equal(proc("cuMemPrefetchAsync", 12080, 0, &st),
			 (void *)cuMemPrefetchAsync);
	assert_ptr_equal(proc("cuMemPrefetchAsync", 13000, 0, &st),
			 (void *)cuMemPrefetchAsync_v2);
	assert_ptr_equal(proc("cuGetProcAddress", 12000, 0, &st),
			 (void *)cuGetProcAddress_v2);
	assert_ptr_equal(proc("cuGetProcAddress", 11080, 0, &st),
			 (void *)cuGetProcAddress);
	/* Before CUDA 3.2 the 32-bit variant, before 2.0 none. */
	assert_ptr_equal(proc("cuMemAlloc", 3000, 0, &st), (void *)cuMemAlloc);
	assert_ptr_equal(proc("cuMemAlloc", 3020, 0, &st), (void *)cuMemAlloc_v2);
	assert_null(proc("cuMemAlloc", 1000, 0, &st));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
	assert_null(proc("cuNoSuchFunction", 13000, 0, &st));
	assert_int_equal(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
	assert_null(proc("cuMemAlloc_v2", 13000, 0, &st));	/* base names only */
}

static void test_per_thread_variants(void **state)
{
	const cuuint64_t pt = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	CUdriverProcAddressQueryResult st;
	void *legacy, *ptsz;

	(void)state;
	legacy = proc("cuLaunchKernel", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st);
	ptsz = proc("cuLaunchKernel", 13000, pt, &st);
	assert_ptr_equal(legacy, (void *)cuLaunchKernel);
	assert_ptr_equal(ptsz, (void *)cuLaunchKernel_ptsz);
	assert_ptr_not_equal(legacy, ptsz);
	assert_ptr_equal(proc("cuMemcpyHtoD", 13000, pt, &st),
			 (void *)cuMemcpyHtoD_v2_ptds);
	assert_ptr_equal(proc("cuMemcpyHtoD", 13000, 0, &st), (void *)cuMemcpyHtoD_v2);
	assert_ptr_equal(proc("cuMemcpyAsync", 13000, pt, &st),
			 (void *)cuMemcpyAsync_ptsz);
	assert_ptr_equal(proc("cuMemPrefetchAsync", 13000, pt, &st),
			 (void *)cuMemPrefetchAsync_v2_ptsz);
	assert_ptr_equal(proc("cuGraphLaunch", 13000, pt, &st),
			 (void *)cuGraphLaunch_ptsz);
	/* No per-thread variant: the plain one. */
	assert_ptr_equal(proc("cuMemAlloc", 13000, pt, &st), (void *)cuMemAlloc_v2);
	/* The old four-argument entry point answers the same. */
	{
		void *p = NULL;

		CK(cuGetProcAddress("cuLaunchKernelEx", &p, 13000, pt));
		assert_ptr_equal(p, (void *)cuLaunchKernelEx_ptsz);
		assert_int_equal(cuGetProcAddress("cuNope", &p, 13000, 0),
				 CUDA_ERROR_NOT_FOUND);
	}
}

static void test_dlsym_names(void **state)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	(void)state;
	assert_non_null(h);
	assert_ptr_equal(dlsym(h, "cuLaunchKernel_ptsz"), (void *)cuLaunchKernel_ptsz);
	assert_ptr_equal(dlsym(h, "cuMemAlloc_v2"), (void *)cuMemAlloc_v2);
	assert_null(dlsym(h, "td_submit"));	/* internals stay hidden */
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_per_thread_variants),
		cmocka_unit_test(test_dlsym_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
