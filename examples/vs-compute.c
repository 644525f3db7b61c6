/*
 * vs-compute: a long-running compute loop, like a training job. Each
 * iteration runs a kernel of fixed length and rewrites a working set in
 * device memory, then waits for it; progress is printed periodically.
 * With --ts-out it records each kernel's GPU start and end times.
 */
#include "vs_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct opts {
	unsigned long long iters, mem, device;
	double seconds, kernel_ms, progress_ms;
	const char *ts_out;
	int quiet;
};

static void usage(void)
{
	printf("usage: vs-compute [options]\n"
	       "Runs a loop of GPU kernels for a time or a number of iterations.\n"
	       "  --seconds X      run for X seconds (default 10 unless --iters)\n"
	       "  --iters N        run N iterations\n"
	       "  --kernel-ms X    length of each iteration's kernel (default 50)\n"
	       "  --mem SIZE       working set in device memory, rewritten every\n"
	       "                   iteration (default 64M; K/M/G suffixes)\n"
	       "  --device N       device ordinal (default 0)\n"
	       "  --progress-ms X  progress line interval (default 1000, 0: none)\n"
	       "  --ts-out FILE    write 'start_ns end_ns' of each kernel, GPU clock\n"
	       "  --quiet          print only the final line\n"
	       "Final line: 'done: N iterations in X s (Y it/s), PASS|FAIL'.\n"
	       "Exit status: 0 PASS, 1 FAIL, 2 usage or CUDA error.\n");
}

static void parse(int argc, char **argv, struct opts *o)
{
	int i;

	memset(o, 0, sizeof(*o));
	o->kernel_ms = 50;
	o->mem = 64ull << 20;
	o->progress_ms = 1000;
	for (i = 1; i < argc; i++) {
		if (vs_opt_flag(argv, i, "--help") || vs_opt_flag(argv, i, "-h")) {
			usage();
			exit(0);
		} else if (vs_opt_flag(argv, i, "--quiet")) {
			o->quiet = 1;
		} else if (!vs_opt_ull(argc, argv, &i, "--iters", &o->iters) &&
			   !vs_opt_ull(argc, argv, &i, "--mem", &o->mem) &&
			   !vs_opt_ull(argc, argv, &i, "--device", &o->device) &&
			   !vs_opt_double(argc, argv, &i, "--seconds", &o->seconds) &&
			   !vs_opt_double(argc, argv, &i, "--kernel-ms", &o->kernel_ms) &&
			   !vs_opt_double(argc, argv, &i, "--progress-ms", &o->progress_ms) &&
			   !vs_opt_str(argc, argv, &i, "--ts-out", &o->ts_out)) {
			vs_usage_error("unknown option '%s'", argv[i]);
		}
	}
	if (!o->iters && o->seconds == 0)
		o->seconds = 10;
	if (o->mem < sizeof(float) || o->mem / sizeof(float) > 0x7fffffffull)
		vs_usage_error("--mem must be between 4 bytes and 8 GiB");
}

struct loop {
	CUfunction sleep_ts, fill;
	CUstream s;
	CUdeviceptr buf, ts;
	int n;
};

/* One iteration: the timed kernel, then the working-set rewrite. */
static void step(struct loop *l, const struct opts *o, float value,
		 unsigned long long t[2])
{
	unsigned long long us = (unsigned long long)(o->kernel_ms * 1000.0);
	unsigned int blocks = (unsigned int)((l->n + 255) / 256);
	void *sargs[] = { &us, &l->ts };
	void *fargs[] = { &l->buf, &value, &l->n };

	if (blocks > 65535)
		blocks = 65535;
	VS_CK(cuLaunchKernel(l->sleep_ts, 1, 1, 1, 1, 1, 1, 0, l->s, sargs, NULL));
	VS_CK(cuLaunchKernel(l->fill, blocks, 1, 1, 256, 1, 1, 0, l->s, fargs, NULL));
	VS_CK(cuMemcpyDtoHAsync(t, l->ts, 2 * sizeof(*t), l->s));
	VS_CK(cuStreamSynchronize(l->s));
}

/* The working set holds the last iteration's value at both ends. */
static int check(const struct loop *l, float value)
{
	float first, last;

	VS_CK(cuMemcpyDtoH(&first, l->buf, sizeof(first)));
	VS_CK(cuMemcpyDtoH(&last, l->buf + (size_t)(l->n - 1) * sizeof(float),
			   sizeof(last)));
	return first == value && last == value;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct vs_gpu g;
	struct loop l;
	FILE *ts = NULL;
	unsigned long long it = 0, t[2];
	double t0, now, next_report;
	int ok;

	vs_prog = "vs-compute";
	parse(argc, argv, &o);
	vs_setup(&g, (int)o.device, o.quiet);
	if (o.ts_out && !(ts = fopen(o.ts_out, "w"))) {
		perror(o.ts_out);
		return VS_EXIT_FAIL;
	}
	l.sleep_ts = vs_kernel(&g, "vs_sleep_ts");
	l.fill = vs_kernel(&g, "vs_fill");
	l.n = (int)(o.mem / sizeof(float));
	VS_CK(cuStreamCreate(&l.s, CU_STREAM_NON_BLOCKING));
	VS_CK(cuMemAlloc(&l.buf, (size_t)l.n * sizeof(float)));
	VS_CK(cuMemAlloc(&l.ts, 2 * sizeof(unsigned long long)));
	if (!o.quiet)
		printf("vs-compute: %s, kernel %.1f ms, working set %.1f MiB, managed: %s\n",
		       o.iters ? "fixed iterations" : "timed run", o.kernel_ms,
		       (double)o.mem / (1024.0 * 1024), vs_is_managed(l.buf) ? "yes" : "no");
	t0 = vs_now_ms();
	next_report = t0 + o.progress_ms;
	for (;;) {
		now = vs_now_ms();
		if (o.iters ? it >= o.iters : now - t0 >= o.seconds * 1e3)
			break;
		step(&l, &o, (float)(it + 1), t);
		it++;
		if (ts)
			fprintf(ts, "%llu %llu\n", t[0], t[1]);
		now = vs_now_ms();
		if (!o.quiet && o.progress_ms > 0 && now >= next_report) {
			printf("vs-compute: iteration %llu, %.2f s, %.1f it/s\n", it,
			       (now - t0) / 1e3, (double)it * 1e3 / (now - t0));
			fflush(stdout);
			next_report = now + o.progress_ms;
		}
	}
	now = vs_now_ms();
	ok = it == 0 || check(&l, (float)it);
	printf("vs-compute: done: %llu iterations in %.2f s (%.1f it/s), %s\n", it,
	       (now - t0) / 1e3, now > t0 ? (double)it * 1e3 / (now - t0) : 0.0,
	       ok ? "PASS" : "FAIL");
	if (ts)
		fclose(ts);
	VS_CK(cuMemFree(l.buf));
	VS_CK(cuMemFree(l.ts));
	VS_CK(cuStreamDestroy(l.s));
	vs_teardown(&g);
	return ok ? 0 : 1;
}
