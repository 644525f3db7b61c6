/*
 * Stream-ordered memory on other streams while a stream capture is
 * active in global mode (PyTorch's default), on the real driver: the
 * driver refuses potentially unsafe calls then (event queries,
 * allocations, frees) and invalidates the capture, so what the shim does
 * behind a cuMemAllocAsync or cuMemFreeAsync must not make such calls
 * where the program made none (docs/shim.md, "Beside an active capture").
 *
 * A block is freed on stream s1 behind a long kernel, so the GPU has not
 * passed its free; then, while stream sc captures, another thread and the
 * capturing thread allocate, fill and free on s2. Checked: the capture
 * ends well and its graph computes; each new block holds what its stream
 * wrote after s1's late write to the freed block (a block handed to s2
 * before s1 passed its free would be overwritten: the driver's own pool
 * may hand it out only with a dependency on s1).
 * Prints one JSON object; exit 0 when every check holds.
 */
#include "vsg_util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N_ELEM   (4u << 20)             /* 16 MiB of floats */
#define SPIN_NS  1500000000ull          /* s1 stays busy this long */

static unsigned int bits(float v)
{
	unsigned int u;

	memcpy(&u, &v, sizeof(u));
	return u;
}

/* Every element of p (on s, waited for) equals v. */
static int all_equal(CUdeviceptr p, float v, CUstream s)
{
	static float host[N_ELEM];
	unsigned int n = 0;

	VSG_CK(cuMemcpyDtoHAsync(host, p, sizeof(host), s));
	VSG_CK(cuStreamSynchronize(s));
	for (unsigned int i = 0; i < N_ELEM; i++)
		n += host[i] != v;
	return n == 0;
}

struct side {
	CUcontext ctx;
	CUstream s;
	CUdeviceptr got;
	CUresult alloc, set;
};

static void *side_main(void *arg)
{
	struct side *sd = arg;

	VSG_CK(cuCtxSetCurrent(sd->ctx));
	sd->alloc = cuMemAllocAsync(&sd->got, N_ELEM * sizeof(float), sd->s);
	if (sd->alloc == CUDA_SUCCESS)
		sd->set = cuMemsetD32Async(sd->got, bits(5.0f), N_ELEM, sd->s);
	return NULL;
}

int main(void)
{
	struct side sd = { 0 };
	CUcontext ctx = vsg_ctx_open();
	CUmodule mod = vsg_module_load();
	CUfunction f_scale = vsg_function(mod, "vsg_scale");
	CUfunction f_stamp = vsg_function(mod, "vsg_stamp");
	unsigned long long n = N_ELEM, spin = SPIN_NS;
	unsigned int idx = 0;
	float three = 3.0f;
	CUstream s1, s2, sc;
	CUdeviceptr g, p, q, stamps;
	CUgraph graph = NULL;
	CUgraphExec exec;
	CUresult end;
	pthread_t t;
	int graph_ok = 0, side_ok = 0, q_ok = 0, managed;
	void *scale_args[] = { &g, &three, &n };
	void *stamp_args[] = { &stamps, &idx, &spin };

	VSG_CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuStreamCreate(&sc, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuMemAlloc(&g, N_ELEM * sizeof(float)));
	VSG_CK(cuMemAlloc(&stamps, 16));
	VSG_CK(cuMemsetD32(g, bits(1.0f), N_ELEM));

	/* p's free, behind a long kernel and a late write. */
	VSG_CK(cuMemAllocAsync(&p, N_ELEM * sizeof(float), s1));
	VSG_CK(cuMemsetD32Async(p, bits(1.0f), N_ELEM, s1));
	VSG_CK(cuLaunchKernel(f_stamp, 1, 1, 1, 1, 1, 1, 0, s1, stamp_args,
			      NULL));
	VSG_CK(cuMemsetD32Async(p, bits(2.0f), N_ELEM, s1));
	VSG_CK(cuMemFreeAsync(p, s1));

	VSG_CK(cuStreamBeginCapture(sc, CU_STREAM_CAPTURE_MODE_GLOBAL));
	VSG_CK(cuLaunchKernel(f_scale, 256, 1, 1, 256, 1, 1, 0, sc, scale_args,
			      NULL));
	sd.ctx = ctx;
	sd.s = s2;
	if (pthread_create(&t, NULL, side_main, &sd) != 0)
		return 2;
	pthread_join(t, NULL);
	VSG_CK(cuMemAllocAsync(&q, N_ELEM * sizeof(float), s2));
	VSG_CK(cuMemsetD32Async(q, bits(6.0f), N_ELEM, s2));
	end = cuStreamEndCapture(sc, &graph);

	if (end == CUDA_SUCCESS) {
		VSG_CK(cuGraphInstantiate(&exec, graph, 0));
		VSG_CK(cuGraphLaunch(exec, sc));
		graph_ok = all_equal(g, 3.0f, sc);
		VSG_CK(cuGraphExecDestroy(exec));
		VSG_CK(cuGraphDestroy(graph));
	}
	/* After s1's late write: still what s2 wrote. */
	VSG_CK(cuStreamSynchronize(s1));
	if (sd.alloc == CUDA_SUCCESS && sd.set == CUDA_SUCCESS)
		side_ok = all_equal(sd.got, 5.0f, s2);
	q_ok = all_equal(q, 6.0f, s2);
	managed = vsg_is_managed(q);
	if (sd.alloc == CUDA_SUCCESS)
		VSG_CK(cuMemFreeAsync(sd.got, s2));
	VSG_CK(cuMemFreeAsync(q, s2));
	VSG_CK(cuStreamSynchronize(s2));
	VSG_CK(cuMemFree(g));
	VSG_CK(cuMemFree(stamps));
	VSG_CK(cuStreamDestroy(s1));
	VSG_CK(cuStreamDestroy(s2));
	VSG_CK(cuStreamDestroy(sc));
	vsg_ctx_close();

	int ok = end == CUDA_SUCCESS && graph_ok && side_ok && q_ok;
	printf("{\"prog\": \"capture_side\", \"ok\": %s, \"end_capture\": %d, "
	       "\"graph_ok\": %d, \"side_alloc\": %d, "
	       "\"side_ok\": %d, \"q_ok\": %d, \"side_got_freed_block\": %d, "
	       "\"managed\": %d}\n", ok ? "true" : "false", (int)end, graph_ok,
	       (int)sd.alloc, side_ok, q_ok, sd.got == p, managed);
	return ok ? 0 : 1;
}
