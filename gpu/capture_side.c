/*
 * Stream-ordered memory on other streams while a stream capture is
 * active, on the real driver. The driver refuses potentially unsafe calls
 * (event queries, allocations, frees) and invalidates the capture: from
 * the capturing thread (unless the capture is relaxed) and, while a
 * capture is global, from every thread in global interaction mode
 * (tests/driver/capture_rule.txt, recorded by gpu/capture_probe.c, says
 * which calls). What the shim does behind the program's allowed calls
 * (cuMemFreeAsync, memsets; cuMemAllocAsync from a relaxed thread) must
 * not make refused calls where the program made none (docs/shim.md,
 * "Beside an active capture").
 *
 * A block is freed on stream s1 behind a long kernel, so the GPU has not
 * passed its free; then, while stream sc captures (--capture global or
 * thread_local), another thread (--side MODE, its interaction mode) and
 * the capturing thread (--main MODE) allocate, fill and free on s2.
 * Printed, as one JSON object: each call's CUresult, the capture's end,
 * whether its graph computes, and whether each new block holds what its
 * stream wrote after s1's late write to the freed block (a block handed
 * to s2 before s1 passed its free would be overwritten: the driver's own
 * pool may hand it out only with a dependency on s1); -1 where a refused
 * allocation left nothing to check. The suite compares the answers with
 * the recorded rule (plain) and with the plain run (under the shim).
 * Exit 0 when the set-up worked (the answers are the suite's to judge).
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

/* A CUresult's name for the JSON, "-" for a call not made (-1). */
static const char *name(int r)
{
	const char *n = NULL;

	if (r < 0)
		return "-";
	if (cuGetErrorName((CUresult)r, &n) != CUDA_SUCCESS || !n)
		return "?";
	return n;
}

static CUstreamCaptureMode mode_arg(int argc, char **argv, const char *name,
				    const char *dflt)
{
	const char *v = vsg_arg(argc, argv, name, dflt);

	if (strcmp(v, "global") == 0)
		return CU_STREAM_CAPTURE_MODE_GLOBAL;
	if (strcmp(v, "thread_local") == 0)
		return CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
	if (strcmp(v, "relaxed") == 0)
		return CU_STREAM_CAPTURE_MODE_RELAXED;
	fprintf(stderr, "capture_side: %s: global, thread_local or relaxed, "
		"not %s\n", name, v);
	exit(2);
}

/* What one thread does on s2 during the capture, in interaction mode
 * mode: allocate a block and fill it with val, and free one block made
 * before the capture (when free is set). */
struct part {
	CUcontext ctx;
	CUstream s;
	CUstreamCaptureMode mode;
	float val;
	CUdeviceptr got, free;
	int alloc, set, freed;	/* CUresults; set -1: not tried */
};

static void part_run(struct part *pt)
{
	CUstreamCaptureMode m = pt->mode;

	VSG_CK(cuThreadExchangeStreamCaptureMode(&m));
	pt->alloc = cuMemAllocAsync(&pt->got, N_ELEM * sizeof(float), pt->s);
	pt->set = -1;
	if (pt->alloc == CUDA_SUCCESS)
		pt->set = cuMemsetD32Async(pt->got, bits(pt->val), N_ELEM, pt->s);
	else
		pt->got = 0;
	pt->freed = CUDA_SUCCESS;
	if (pt->free)
		pt->freed = cuMemFreeAsync(pt->free, pt->s);
	if (pt->freed == (int)CUDA_SUCCESS)
		pt->free = 0;
	VSG_CK(cuThreadExchangeStreamCaptureMode(&m));
}

static void *side_main(void *arg)
{
	struct part *pt = arg;

	VSG_CK(cuCtxSetCurrent(pt->ctx));
	part_run(pt);
	return NULL;
}

/* 1 when the part's block holds its value, 0 when not, -1 when the part
 * got no block; the block is freed. */
static int part_check(struct part *pt)
{
	int ok = -1;

	if (pt->got && pt->set == (int)CUDA_SUCCESS)
		ok = all_equal(pt->got, pt->val, pt->s);
	if (pt->got)
		VSG_CK(cuMemFreeAsync(pt->got, pt->s));
	if (pt->free)
		VSG_CK(cuMemFreeAsync(pt->free, pt->s));
	return ok;
}

int main(int argc, char **argv)
{
	CUstreamCaptureMode cmode = mode_arg(argc, argv, "--capture", "global");
	struct part side = { .mode = mode_arg(argc, argv, "--side", "relaxed"),
			     .val = 5.0f };
	struct part own = { .mode = mode_arg(argc, argv, "--main", "relaxed"),
			    .val = 6.0f };
	CUcontext ctx = vsg_ctx_open();
	CUmodule mod = vsg_module_load();
	CUfunction f_scale = vsg_function(mod, "vsg_scale");
	CUfunction f_stamp = vsg_function(mod, "vsg_stamp");
	unsigned long long n = N_ELEM, spin = SPIN_NS;
	unsigned int idx = 0;
	float three = 3.0f;
	CUstream s1, s2, sc;
	CUdeviceptr g, p, stamps;
	CUgraph graph = NULL;
	CUgraphExec exec;
	CUresult end;
	pthread_t t;
	int graph_ok = -1, side_ok, main_ok, managed = -1;
	void *scale_args[] = { &g, &three, &n };
	void *stamp_args[] = { &stamps, &idx, &spin };

	VSG_CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuStreamCreate(&sc, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuMemAlloc(&g, N_ELEM * sizeof(float)));
	VSG_CK(cuMemAlloc(&stamps, 16));
	VSG_CK(cuMemsetD32(g, bits(1.0f), N_ELEM));
	/* The side thread frees this one on s2 during the capture. */
	VSG_CK(cuMemAllocAsync(&side.free, N_ELEM * sizeof(float), s2));
	VSG_CK(cuStreamSynchronize(s2));

	/* p's free, behind a long kernel and a late write. */
	VSG_CK(cuMemAllocAsync(&p, N_ELEM * sizeof(float), s1));
	VSG_CK(cuMemsetD32Async(p, bits(1.0f), N_ELEM, s1));
	VSG_CK(cuLaunchKernel(f_stamp, 1, 1, 1, 1, 1, 1, 0, s1, stamp_args,
			      NULL));
	VSG_CK(cuMemsetD32Async(p, bits(2.0f), N_ELEM, s1));
	VSG_CK(cuMemFreeAsync(p, s1));

	VSG_CK(cuStreamBeginCapture(sc, cmode));
	VSG_CK(cuLaunchKernel(f_scale, 256, 1, 1, 256, 1, 1, 0, sc, scale_args,
			      NULL));
	side.ctx = own.ctx = ctx;
	side.s = own.s = s2;
	if (pthread_create(&t, NULL, side_main, &side) != 0)
		return 2;
	pthread_join(t, NULL);
	part_run(&own);
	end = cuStreamEndCapture(sc, &graph);

	if (end == CUDA_SUCCESS) {
		VSG_CK(cuGraphInstantiate(&exec, graph, 0));
		VSG_CK(cuGraphLaunch(exec, sc));
		graph_ok = all_equal(g, 3.0f, sc);
		VSG_CK(cuGraphExecDestroy(exec));
	}
	if (graph)
		VSG_CK(cuGraphDestroy(graph));
	/* After s1's late write: still what s2 wrote. */
	VSG_CK(cuStreamSynchronize(s1));
	if (own.got)
		managed = vsg_is_managed(own.got);
	else if (side.got)
		managed = vsg_is_managed(side.got);
	side_ok = part_check(&side);
	main_ok = part_check(&own);
	VSG_CK(cuStreamSynchronize(s2));
	VSG_CK(cuMemFree(g));
	VSG_CK(cuMemFree(stamps));
	VSG_CK(cuStreamDestroy(s1));
	VSG_CK(cuStreamDestroy(s2));
	VSG_CK(cuStreamDestroy(sc));
	vsg_ctx_close();

	printf("{\"prog\": \"capture_side\", \"capture\": \"%s\", "
	       "\"side_mode\": \"%s\", \"main_mode\": \"%s\", "
	       "\"end_capture\": \"%s\", \"graph_ok\": %d, "
	       "\"side_alloc\": \"%s\", \"side_set\": \"%s\", "
	       "\"side_free\": \"%s\", \"main_alloc\": \"%s\", "
	       "\"main_set\": \"%s\", \"side_ok\": %d, \"main_ok\": %d, "
	       "\"side_got_freed_block\": %d, \"managed\": %d}\n",
	       vsg_arg(argc, argv, "--capture", "global"),
	       vsg_arg(argc, argv, "--side", "relaxed"),
	       vsg_arg(argc, argv, "--main", "relaxed"), name(end), graph_ok,
	       name(side.alloc), name(side.set), name(side.freed),
	       name(own.alloc), name(own.set), side_ok, main_ok,
	       side.got != 0 && side.got == p, managed);
	return 0;
}
