/*
 * Driver-API correctness program. Allocates through every converted path
 * (cuMemAlloc, cuMemAllocPitch, cuMemAllocAsync), copies with 1D and 2D
 * forms, launches with cuLaunchKernel and cuLaunchKernelEx, replays a
 * captured graph and runs a host function, then checks the result against
 * the CPU bit for bit. The arithmetic is exact in float, so a plain run and
 * a run under the shim must print the same checksum.
 * Prints one JSON object: ok, mismatches, checksum, managed{path: 0/1}.
 */
#include "vsg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_ELEM    (1u << 20)
#define ROW_ELEMS 4096u
#define N_ROWS    (N_ELEM / ROW_ELEMS)
#define REPLAYS   3

static void host_done(void *arg)
{
	*(volatile int *)arg = 1;
}

static void launch(CUfunction f, CUstream s, void **args)
{
	VSG_CK(cuLaunchKernel(f, 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void launch_ex(CUfunction f, CUstream s, void **args)
{
	CUlaunchConfig cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = 256;
	cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 256;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	VSG_CK(cuLaunchKernelEx(&cfg, f, args, NULL));
}

/* Upload hb into a pitched allocation, then copy it into a linear one. */
static void pitched_roundtrip(const float *hb, CUdeviceptr pitched, size_t pitch,
			      CUdeviceptr lin, CUstream s)
{
	CUDA_MEMCPY2D c;

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_HOST;
	c.srcHost = hb;
	c.srcPitch = ROW_ELEMS * sizeof(float);
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = pitched;
	c.dstPitch = pitch;
	c.WidthInBytes = ROW_ELEMS * sizeof(float);
	c.Height = N_ROWS;
	VSG_CK(cuMemcpy2D(&c));

	memset(&c, 0, sizeof(c));
	c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	c.srcDevice = pitched;
	c.srcPitch = pitch;
	c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c.dstDevice = lin;
	c.dstPitch = ROW_ELEMS * sizeof(float);
	c.WidthInBytes = ROW_ELEMS * sizeof(float);
	c.Height = N_ROWS;
	VSG_CK(cuMemcpy2DAsync(&c, s));
}

int main(void)
{
	unsigned long long n = N_ELEM;
	size_t bytes = N_ELEM * sizeof(float), pitch = 0;
	CUdeviceptr a, bp, b, c;
	CUstream s;
	CUgraph g;
	CUgraphExec ge;
	float *ha = malloc(bytes), *hb = malloc(bytes), *hc, two = 2.0f, half = 0.5f;
	volatile int host_ran = 0;
	unsigned mism = 0;
	double sum = 0;
	int m_alloc, m_pitch, m_async;

	vsg_ctx_open();
	CUmodule mod = vsg_module_load();
	CUfunction f_add = vsg_function(mod, "vsg_add");
	CUfunction f_scale = vsg_function(mod, "vsg_scale");

	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (unsigned i = 0; i < N_ELEM; i++) {
		ha[i] = (float)(i % 1000) * 0.5f;
		hb[i] = (float)(i % 37) * 0.25f;
	}
	VSG_CK(cuMemAlloc(&a, bytes));
	VSG_CK(cuMemAllocPitch(&bp, &pitch, ROW_ELEMS * sizeof(float), N_ROWS, 4));
	VSG_CK(cuMemAlloc(&b, bytes));
	VSG_CK(cuMemAllocAsync(&c, bytes, s));
	VSG_CK(cuMemAllocHost((void **)&hc, bytes));
	m_alloc = vsg_is_managed(a);
	m_pitch = vsg_is_managed(bp);

	VSG_CK(cuMemcpyHtoD(a, ha, bytes));
	pitched_roundtrip(hb, bp, pitch, b, s);
	VSG_CK(cuMemsetD32Async(c, 0xffffffffu, N_ELEM, s)); /* poison */
	VSG_CK(cuStreamSynchronize(s));
	m_async = vsg_is_managed(c);

	void *add_args[] = { &a, &b, &c, &n };
	void *scale2[] = { &c, &two, &n };
	launch(f_add, s, add_args);        /* c = a + b */
	launch_ex(f_scale, s, scale2);     /* c = 2(a + b) */

	/* A graph captured from the stream: c = 0.5 c + a, replayed. */
	void *scale_h[] = { &c, &half, &n };
	void *add_ca[] = { &c, &a, &c, &n };
	VSG_CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
	launch(f_scale, s, scale_h);
	launch(f_add, s, add_ca);
	VSG_CK(cuStreamEndCapture(s, &g));
	VSG_CK(cuGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < REPLAYS; r++)
		VSG_CK(cuGraphLaunch(ge, s));
	VSG_CK(cuMemcpyDtoHAsync(hc, c, bytes, s));
	VSG_CK(cuLaunchHostFunc(s, host_done, (void *)&host_ran));
	VSG_CK(cuStreamSynchronize(s));

	for (unsigned i = 0; i < N_ELEM; i++) {
		float want = 2.0f * (ha[i] + hb[i]);

		for (int r = 0; r < REPLAYS; r++)
			want = want * 0.5f + ha[i];
		if (hc[i] != want)
			mism++;
		sum += hc[i];
	}
	VSG_CK(cuMemFreeAsync(c, s));
	VSG_CK(cuStreamSynchronize(s));
	VSG_CK(cuGraphExecDestroy(ge));
	VSG_CK(cuGraphDestroy(g));
	VSG_CK(cuMemFree(a));
	VSG_CK(cuMemFree(bp));
	VSG_CK(cuMemFree(b));
	VSG_CK(cuMemFreeHost(hc));
	VSG_CK(cuStreamDestroy(s));
	vsg_ctx_close();

	printf("{\"prog\": \"drv_check\", \"ok\": %s, \"mismatches\": %u, "
	       "\"host_func\": %d, \"checksum\": %.1f, \"managed\": "
	       "{\"cuMemAlloc\": %d, \"cuMemAllocPitch\": %d, \"cuMemAllocAsync\": %d}}\n",
	       (mism == 0 && host_ran) ? "true" : "false", mism, host_ran, sum,
	       m_alloc, m_pitch, m_async);
	free(ha);
	free(hb);
	return (mism == 0 && host_ran) ? 0 : 1;
}
