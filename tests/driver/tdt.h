/*
 * Helpers shared by the test driver's own tests: check macros, a current
 * primary context, the built-in kernels, a monotonic clock.
 */
#ifndef VSHARE_TDT_H
#define VSHARE_TDT_H

#include <cuda.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>

#define CK(call) assert_int_equal((call), CUDA_SUCCESS)

static inline uint64_t tdt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* cuInit, then the primary context of device dev made current. */
static inline CUcontext tdt_ctx(int dev)
{
	CUcontext c;
	CUdevice d;

	CK(cuInit(0));
	CK(cuDeviceGet(&d, dev));
	CK(cuDevicePrimaryCtxRetain(&c, d));
	CK(cuCtxSetCurrent(c));
	return c;
}

/* A built-in kernel, from one module loaded once per process. */
static inline CUfunction tdt_func(const char *name)
{
	static CUmodule m;
	CUfunction f;

	if (!m)
		CK(cuModuleLoadData(&m, "// any image"));
	CK(cuModuleGetFunction(&f, m, name));
	return f;
}

static inline CUresult tdt_sleep(CUstream s, unsigned long long us)
{
	void *args[] = { &us };

	return cuLaunchKernel(tdt_func("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s,
			      args, NULL);
}

#endif
