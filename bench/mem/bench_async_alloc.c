/*
 * Stream-ordered allocation under the shim beside plain CUDA, in one run:
 * a loop of cuMemAllocAsync (a fresh output buffer), a kernel that writes
 * it (vs_add of two inputs), cuMemFreeAsync, on one stream, timed from
 * the first allocation to the stream's end after a few warm-up passes.
 * The parent runs itself as a child plain and with libvshare.so preloaded,
 * alternating, --reps times each, and prints the best time of each and
 * their ratio (one JSON line last). Driver API and the examples' PTX
 * kernels, so it runs on a GPU and on vshare's CUDA test driver:
 *
 *   build/bin/bench_async_alloc [--iters 200] [--mib 64] [--reps 3]
 *       [--shim build/lib/libvshare.so] [--pool]
 *   LD_LIBRARY_PATH=build/lib/testdriver build/bin/bench_async_alloc --mib 4
 *
 * --pool allocates with cuMemAllocFromPoolAsync from the device's default
 * pool. The shim child runs without a scheduler (unshared, the gate
 * open) unless VSHARE_SOCKET names one, with VSHARE_MEM_LIMIT 4G unless
 * set.
 */
#include <cuda.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vs_common.h"

struct opts {
	unsigned long long iters, mib, reps, warmup;
	const char *shim, *child;
	int pool;
};

static void add_on(CUfunction add, CUstream s, CUdeviceptr a, CUdeviceptr b,
		   CUdeviceptr c, int n)
{
	void *args[] = { &a, &b, &c, &n };

	VS_CK(cuLaunchKernel(add, 1024, 1, 1, 256, 1, 1, 0, s, args, NULL));
}

static void alloc_on(const struct opts *o, CUmemoryPool pool, CUdeviceptr *p,
		     size_t bytes, CUstream s)
{
	if (o->pool)
		VS_CK(cuMemAllocFromPoolAsync(p, bytes, pool, s));
	else
		VS_CK(cuMemAllocAsync(p, bytes, s));
}

/* One measured process: the loop, and a check of its last result. */
static int child(const struct opts *o)
{
	struct vs_gpu g;
	CUfunction add, fill;
	CUmemoryPool pool = NULL;
	CUstream s;
	CUdeviceptr a, b, c;
	size_t bytes = (size_t)o->mib << 20;
	int n = (int)(bytes / sizeof(float));
	float one = 1.0f, two = 2.0f, *host;
	double t0 = 0, t1;
	int bad = 0;

	vs_setup(&g, 0, 1);
	add = vs_kernel(&g, "vs_add");
	fill = vs_kernel(&g, "vs_fill");
	VS_CK(cuDeviceGetDefaultMemPool(&pool, g.dev));
	VS_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	VS_CK(cuMemAlloc(&a, bytes));
	VS_CK(cuMemAlloc(&b, bytes));
	{
		void *fa[] = { &a, &one, &n }, *fb[] = { &b, &two, &n };

		VS_CK(cuLaunchKernel(fill, 1024, 1, 1, 256, 1, 1, 0, s, fa, NULL));
		VS_CK(cuLaunchKernel(fill, 1024, 1, 1, 256, 1, 1, 0, s, fb, NULL));
	}
	for (unsigned long long i = 0; i < o->warmup + o->iters; i++) {
		if (i == o->warmup) {
			VS_CK(cuStreamSynchronize(s));
			t0 = vs_now_ms();
		}
		alloc_on(o, pool, &c, bytes, s);
		add_on(add, s, a, b, c, n);
		VS_CK(cuMemFreeAsync(c, s));
	}
	VS_CK(cuStreamSynchronize(s));
	t1 = vs_now_ms();
	/* The memory the loop reuses still computes right. */
	host = malloc(bytes);
	if (host == NULL)
		return VS_EXIT_FAIL;
	alloc_on(o, pool, &c, bytes, s);
	add_on(add, s, a, b, c, n);
	VS_CK(cuMemcpyDtoHAsync(host, c, bytes, s));
	VS_CK(cuMemFreeAsync(c, s));
	VS_CK(cuStreamSynchronize(s));
	for (int i = 0; i < n; i++)
		bad += host[i] != 3.0f;
	free(host);
	printf("{\"mode\": \"%s\", \"seconds\": %.6f, \"us_per_iter\": %.2f, "
	       "\"managed\": %d, \"test_driver\": %d, \"ok\": %s}\n", o->child,
	       (t1 - t0) / 1e3, (t1 - t0) * 1e3 / (double)o->iters,
	       vs_is_managed(a), g.test_driver, bad ? "false" : "true");
	VS_CK(cuMemFree(a));
	VS_CK(cuMemFree(b));
	VS_CK(cuStreamDestroy(s));
	vs_teardown(&g);
	return bad ? 1 : 0;
}

/* This program's path, for its children. */
static const char *self_path(void)
{
	static char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return NULL;
	self[n] = '\0';
	return self;
}

/* Run this program as a child; its seconds, or -1. */
static double run_child(const struct opts *o, const char *mode)
{
	char cmd[PATH_MAX * 2 + 256], line[512];
	double secs = -1;
	int ok = 0;
	FILE *f;

	int shim = strcmp(mode, "shim") == 0;

	if (self_path() == NULL)
		return -1;
	snprintf(cmd, sizeof(cmd), "%s%s%s'%s' --child %s --iters %llu "
		 "--mib %llu --warmup %llu%s", shim ? "LD_PRELOAD='" : "",
		 shim ? o->shim : "", shim ? "' " : "", self_path(), mode,
		 o->iters, o->mib, o->warmup, o->pool ? " --pool" : "");
	f = popen(cmd, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = strstr(line, "\"seconds\": ");

		fputs(line, stdout);
		if (p != NULL) {
			secs = strtod(p + 11, NULL);
			ok = strstr(line, "\"ok\": true") != NULL &&
			     (strcmp(mode, "plain") == 0 ||
			      strstr(line, "\"managed\": 1") != NULL);
		}
	}
	if (pclose(f) != 0 || !ok)
		return -1;
	return secs;
}

/* libvshare.so of the build tree this program is in. */
static const char *default_shim(void)
{
	static char path[PATH_MAX + 32];
	char self[PATH_MAX];
	char *slash;

	if (self_path() == NULL)
		return "libvshare.so";
	snprintf(self, sizeof(self), "%s", self_path());
	slash = strrchr(self, '/');
	if (slash != NULL)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/../lib/libvshare.so", self);
	return path;
}

int main(int argc, char **argv)
{
	struct opts o = { .iters = 200, .mib = 64, .reps = 3, .warmup = 5 };
	double best[2] = { -1, -1 };
	const char *modes[2] = { "plain", "shim" };

	vs_prog = "bench_async_alloc";
	for (int i = 1; i < argc; i++) {
		if (vs_opt_ull(argc, argv, &i, "--iters", &o.iters) ||
		    vs_opt_ull(argc, argv, &i, "--mib", &o.mib) ||
		    vs_opt_ull(argc, argv, &i, "--reps", &o.reps) ||
		    vs_opt_ull(argc, argv, &i, "--warmup", &o.warmup) ||
		    vs_opt_str(argc, argv, &i, "--shim", &o.shim) ||
		    vs_opt_str(argc, argv, &i, "--child", &o.child))
			continue;
		if (vs_opt_flag(argv, i, "--pool")) {
			o.pool = 1;
			continue;
		}
		vs_usage_error("unknown argument %s", argv[i]);
	}
	if (o.iters == 0 || o.mib == 0 || o.mib > 8192 || o.reps == 0)
		vs_usage_error("--iters, --reps > 0, 0 < --mib <= 8192");
	if (o.child != NULL)
		return child(&o);
	if (o.shim == NULL)
		o.shim = default_shim();
	if (access(o.shim, R_OK) != 0) {
		fprintf(stderr, "bench_async_alloc: no shim at %s (--shim): %s\n",
			o.shim, strerror(errno));
		return VS_EXIT_FAIL;
	}
	setenv("VSHARE_MEM_LIMIT", getenv("VSHARE_MEM_LIMIT") ?
	       getenv("VSHARE_MEM_LIMIT") : "4G", 1);
	setenv("VSHARE_LOG_LEVEL", getenv("VSHARE_LOG_LEVEL") ?
	       getenv("VSHARE_LOG_LEVEL") : "error", 1);
	for (unsigned long long r = 0; r < o.reps; r++)
		for (int k = 0; k < 2; k++) {
			double t = run_child(&o, modes[k]);

			if (t < 0) {
				fprintf(stderr, "bench_async_alloc: the %s run "
					"failed\n", modes[k]);
				return 1;
			}
			if (best[k] < 0 || t < best[k])
				best[k] = t;
		}
	printf("{\"prog\": \"bench_async_alloc\", \"iters\": %llu, \"mib\": %llu, "
	       "\"pool\": %d, \"reps\": %llu, \"plain_s\": %.6f, \"shim_s\": %.6f, "
	       "\"ratio\": %.3f}\n", o.iters, o.mib, o.pool, o.reps, best[0],
	       best[1], best[1] / best[0]);
	return 0;
}
