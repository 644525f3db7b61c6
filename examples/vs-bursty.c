/*
 * vs-bursty: an interactive-style program. It sleeps (idle, holding no
 * GPU work), then submits a burst of short kernels and waits for them,
 * and reports each burst's latency: the time a user waits for a cell.
 */
#include "vs_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum api { API_KERNEL, API_EX, API_GRAPH };

struct opts {
	unsigned long long bursts, kernels, kernel_us, device;
	double gap_ms;
	enum api api;
	int quiet;
};

static void usage(void)
{
	printf("usage: vs-bursty [options]\n"
	       "Runs bursts of short kernels separated by idle gaps and prints\n"
	       "each burst's latency (submission to completion).\n"
	       "  --bursts N      number of bursts (default 5)\n"
	       "  --kernels N     kernels per burst (default 10)\n"
	       "  --kernel-us N   duration of each kernel in us (default 1000)\n"
	       "  --gap-ms X      idle time before each burst in ms (default 200)\n"
	       "  --api A         kernel (cuLaunchKernel, default), ex\n"
	       "                  (cuLaunchKernelEx) or graph (captured once, then\n"
	       "                  cuGraphLaunch per burst)\n"
	       "  --device N      device ordinal (default 0)\n"
	       "  --quiet         print only the summary\n"
	       "Output: 'burst I/N: K kernels, latency X ms' per burst, then\n"
	       "'latency ms: min A mean B max C'. Exit status 0, or 2 on error.\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	const char *api = "kernel";
	int i;

	memset(o, 0, sizeof(*o));
	o->bursts = 5;
	o->kernels = 10;
	o->kernel_us = 1000;
	o->gap_ms = 200;
	for (i = 1; i < argc; i++) {
		if (vs_opt_flag(argv, i, "--help") || vs_opt_flag(argv, i, "-h")) {
			usage();
			exit(0);
		} else if (vs_opt_flag(argv, i, "--quiet")) {
			o->quiet = 1;
		} else if (!vs_opt_ull(argc, argv, &i, "--bursts", &o->bursts) &&
			   !vs_opt_ull(argc, argv, &i, "--kernels", &o->kernels) &&
			   !vs_opt_ull(argc, argv, &i, "--kernel-us", &o->kernel_us) &&
			   !vs_opt_ull(argc, argv, &i, "--device", &o->device) &&
			   !vs_opt_double(argc, argv, &i, "--gap-ms", &o->gap_ms) &&
			   !vs_opt_str(argc, argv, &i, "--api", &api)) {
			vs_usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (strcmp(api, "kernel") == 0)
		o->api = API_KERNEL;
	else if (strcmp(api, "ex") == 0)
		o->api = API_EX;
	else if (strcmp(api, "graph") == 0)
		o->api = API_GRAPH;
	else
		vs_usage_error("--api must be kernel, ex or graph");
	if (o->kernels == 0)
		vs_usage_error("--kernels must be at least 1");
}

static void sleep_ms(double ms)
{
	struct timespec ts = { (time_t)(ms / 1e3),
			       (long)((ms - (double)(time_t)(ms / 1e3) * 1e3) * 1e6) };

	nanosleep(&ts, NULL);
}

/* Queues one burst's kernels on s with the chosen launch API. */
static void submit(CUfunction f, const struct opts *o, CUstream s)
{
	unsigned long long us = o->kernel_us, k;
	void *args[] = { &us };
	CUlaunchConfig cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = s;
	for (k = 0; k < o->kernels; k++) {
		if (o->api == API_EX)
			VS_CK(cuLaunchKernelEx(&cfg, f, args, NULL));
		else
			VS_CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
	}
}

/* Captures one burst into an executable graph. */
static CUgraphExec capture(CUfunction f, const struct opts *o, CUstream s)
{
	CUgraph graph;
	CUgraphExec exec;

	VS_CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	submit(f, o, s);
	VS_CK(cuStreamEndCapture(s, &graph));
	VS_CK(cuGraphInstantiate(&exec, graph, 0));
	VS_CK(cuGraphDestroy(graph));
	return exec;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct vs_gpu g;
	CUstream s;
	CUfunction f;
	CUgraphExec exec = NULL;
	double lat, sum = 0, min = 1e30, max = 0;
	unsigned long long b;

	vs_prog = "vs-bursty";
	parse(argc, argv, &o);
	vs_setup(&g, (int)o.device, o.quiet);
	f = vs_kernel(&g, "vs_sleep");
	VS_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	if (o.api == API_GRAPH)
		exec = capture(f, &o, s);
	for (b = 0; b < o.bursts; b++) {
		double t0;

		sleep_ms(o.gap_ms);
		t0 = vs_now_ms();
		if (exec)
			VS_CK(cuGraphLaunch(exec, s));
		else
			submit(f, &o, s);
		VS_CK(cuStreamSynchronize(s));
		lat = vs_now_ms() - t0;
		sum += lat;
		min = lat < min ? lat : min;
		max = lat > max ? lat : max;
		if (!o.quiet) {
			printf("vs-bursty: burst %llu/%llu: %llu kernels, latency %.2f ms\n",
			       b + 1, o.bursts, o.kernels, lat);
			fflush(stdout);
		}
	}
	if (o.bursts)
		printf("vs-bursty: latency ms: min %.2f mean %.2f max %.2f "
		       "(%llu bursts of %llu x %llu us)\n", min, sum / (double)o.bursts,
		       max, o.bursts, o.kernels, o.kernel_us);
	if (exec)
		VS_CK(cuGraphExecDestroy(exec));
	VS_CK(cuStreamDestroy(s));
	vs_teardown(&g);
	return 0;
}
