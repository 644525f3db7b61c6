/*
 * On a real GPU: what the submission path's driver calls cost, to tell
 * the shim's share of a launch from the driver's. Prints ns per call of
 * cuCtxGetCurrent (what the gate's multi-device fast path asks on every
 * submission) and of clock_gettime(CLOCK_MONOTONIC_COARSE) (gate_exit's
 * activity stamp). Built by hand against the driver (not part of the
 * CMake build, which has no libcuda):
 *   gcc -O2 -I/usr/local/cuda/include -o ctx_cost ctx_cost.c \
 *       -L/usr/local/cuda/lib64/stubs -lcuda
 */
#include <cuda.h>
#include <stdio.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(void)
{
	enum { N = 10000000 };
	CUdevice dev;
	CUcontext ctx, cur = NULL;
	struct timespec ts;
	double t0, t1, t2;
	volatile long sink = 0;

	if (cuInit(0) != CUDA_SUCCESS || cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
	    cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS ||
	    cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
		fprintf(stderr, "ctx_cost: no CUDA device\n");
		return 1;
	}
	t0 = now_ns();
	for (long i = 0; i < N; i++) {
		cuCtxGetCurrent(&cur);
		sink += (long)(cur != NULL);
	}
	t1 = now_ns();
	for (long i = 0; i < N; i++) {
		clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
		sink += ts.tv_nsec;
	}
	t2 = now_ns();
	printf("{\"prog\": \"ctx_cost\", \"cuCtxGetCurrent_ns\": %.2f, "
	       "\"clock_coarse_ns\": %.2f}\n", (t1 - t0) / N, (t2 - t1) / N);
	cuDevicePrimaryCtxRelease(dev);
	return 0;
}
