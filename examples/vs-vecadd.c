/*
 * vs-vecadd: c = a + b on the GPU, checked on the host. Reports whether
 * its device allocations are managed memory (they are under vshare, which
 * turns cuMemAlloc into cuMemAllocManaged).
 */
#include "vs_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
	unsigned long long n, iters, device, sleep_us;
	int managed, quiet;
};

static void usage(void)
{
	printf("usage: vs-vecadd [options]\n"
	       "Adds two float vectors on the GPU and checks the result.\n"
	       "  --size N       elements per vector (default 1048576; K/M/G suffixes)\n"
	       "  --iters N      times to launch the add (default 1)\n"
	       "  --device N     device ordinal (default 0)\n"
	       "  --sleep-us N   also run vs_sleep for N us before each add\n"
	       "  --managed      allocate with cuMemAllocManaged instead of cuMemAlloc\n"
	       "  --quiet        print only the result line\n"
	       "Prints 'managed: yes|no' for its buffers and PASS or FAIL.\n"
	       "Exit status: 0 PASS, 1 FAIL, 2 usage or CUDA error.\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->n = 1 << 20;
	o->iters = 1;
	for (i = 1; i < argc; i++) {
		if (vs_opt_flag(argv, i, "--help") || vs_opt_flag(argv, i, "-h")) {
			usage();
			exit(0);
		} else if (vs_opt_flag(argv, i, "--managed")) {
			o->managed = 1;
		} else if (vs_opt_flag(argv, i, "--quiet")) {
			o->quiet = 1;
		} else if (!vs_opt_ull(argc, argv, &i, "--size", &o->n) &&
			   !vs_opt_ull(argc, argv, &i, "--iters", &o->iters) &&
			   !vs_opt_ull(argc, argv, &i, "--device", &o->device) &&
			   !vs_opt_ull(argc, argv, &i, "--sleep-us", &o->sleep_us)) {
			vs_usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (o->n == 0 || o->n > 0x7fffffffull)
		vs_usage_error("--size must be between 1 and 2^31-1");
}

static CUdeviceptr alloc(size_t bytes, int managed)
{
	CUdeviceptr p;

	if (managed)
		VS_CK(cuMemAllocManaged(&p, bytes, CU_MEM_ATTACH_GLOBAL));
	else
		VS_CK(cuMemAlloc(&p, bytes));
	return p;
}

/* Launches the adds (after an optional sleep) and copies c back. */
static void run(const struct vs_gpu *g, const struct opts *o, CUdeviceptr a,
		CUdeviceptr b, CUdeviceptr c, float *hc, CUstream s)
{
	CUfunction add = vs_kernel(g, "vs_add"), sleep = vs_kernel(g, "vs_sleep");
	int n = (int)o->n;
	unsigned long long us = o->sleep_us;
	void *add_args[] = { &a, &b, &c, &n };
	void *sleep_args[] = { &us };
	unsigned int blocks = (unsigned int)((o->n + 255) / 256);
	unsigned long long it;

	if (blocks > 65535)
		blocks = 65535;	/* the kernel strides over the rest */
	for (it = 0; it < o->iters; it++) {
		if (us)
			VS_CK(cuLaunchKernel(sleep, 1, 1, 1, 1, 1, 1, 0, s,
					     sleep_args, NULL));
		VS_CK(cuLaunchKernel(add, blocks, 1, 1, 256, 1, 1, 0, s,
				     add_args, NULL));
	}
	VS_CK(cuMemcpyDtoHAsync(hc, c, o->n * sizeof(float), s));
	VS_CK(cuStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	struct opts o;
	struct vs_gpu g;
	CUdeviceptr a, b, c;
	CUstream s;
	float *ha, *hb, *hc;
	size_t bytes, i, bad = 0;
	int nmanaged;
	double t0, t1;

	vs_prog = "vs-vecadd";
	parse(argc, argv, &o);
	vs_setup(&g, (int)o.device, o.quiet);
	bytes = o.n * sizeof(float);
	ha = malloc(bytes);
	hb = malloc(bytes);
	hc = malloc(bytes);
	if (!ha || !hb || !hc) {
		fprintf(stderr, "vs-vecadd: out of host memory\n");
		return VS_EXIT_FAIL;
	}
	for (i = 0; i < o.n; i++) {
		ha[i] = (float)(i % 1000);
		hb[i] = 0.5f * (float)(i % 333);
		hc[i] = -1.0f;
	}
	a = alloc(bytes, o.managed);
	b = alloc(bytes, o.managed);
	c = alloc(bytes, o.managed);
	nmanaged = vs_is_managed(a) + vs_is_managed(b) + vs_is_managed(c);
	if (!o.quiet)
		printf("vs-vecadd: n=%llu iters=%llu alloc=%s managed: %s (%d/3 buffers)\n",
		       o.n, o.iters, o.managed ? "cuMemAllocManaged" : "cuMemAlloc",
		       nmanaged == 3 ? "yes" : nmanaged ? "partly" : "no", nmanaged);
	VS_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	t0 = vs_now_ms();
	VS_CK(cuMemcpyHtoD(a, ha, bytes));
	VS_CK(cuMemcpyHtoD(b, hb, bytes));
	run(&g, &o, a, b, c, hc, s);
	t1 = vs_now_ms();
	for (i = 0; i < o.n; i++)
		if (hc[i] != ha[i] + hb[i] && bad++ < 3)
			fprintf(stderr, "vs-vecadd: c[%zu] = %g, expected %g\n",
				i, (double)hc[i], (double)(ha[i] + hb[i]));
	printf("vs-vecadd: %s (%zu errors, %.1f ms)\n", bad ? "FAIL" : "PASS",
	       bad, t1 - t0);
	VS_CK(cuStreamDestroy(s));
	VS_CK(cuMemFree(a));
	VS_CK(cuMemFree(b));
	VS_CK(cuMemFree(c));
	vs_teardown(&g);
	free(ha);
	free(hb);
	free(hc);
	return bad ? 1 : 0;
}
