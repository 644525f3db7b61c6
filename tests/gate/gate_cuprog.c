/*
 * A CUDA driver-API program for the end-to-end tests: run under
 * LD_PRELOAD=libvshare.so on the CUDA test driver. It reaches the driver
 * through dlopen/dlsym, as runtimes do, so every call goes through the
 * shim's hooks. Kernels are the test driver's built-in vs_sleep (and
 * vs_sleep_ts after a growth, so the log tells the phases apart).
 *   gate_cuprog [-n KERNELS] [-k KERNEL_US] [-g GAP_MS] [-m ALLOC_MB]
 *               [-M GROW_MB] [-P PAUSE_MS] [-d DEVICE] [-w WAIT]
 *               [-E END_MS] [-c] [-a] [-F] [-Q]
 * -w: how the program waits for each kernel: ctx (cuCtxSynchronize, the
 *     default), ctx2 (cuCtxSynchronize_v2 of the current context), stream
 *     (cuStreamSynchronize), event (an event recorded behind it,
 *     cuEventSynchronize) or query (cuStreamQuery every 10 ms until done);
 * -E: sleep END_MS after the kernels, before the end (the GPU still held);
 * -c: also capture three kernels into a graph and launch it;
 * -a: check results with vs_add after the kernels;
 * -Q: launch the kernels back to back on one stream, an event after each,
 *     with no wait between them, and print "queued max N": the most
 *     kernels launched and not yet done, after each launch past the
 *     first KERNELS/4 (how far the program ran ahead of its GPU);
 * -F: after the kernels, write and read back the first allocation
 *     ("buf ok") and try one more of ALLOC_MB ("late alloc RESULT"):
 *     what a memory limit lowered meanwhile does to old and new memory.
 * Prints "first NS" (CLOCK_MONOTONIC) just before its first launch.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#define FN(name) static __typeof__(&name) p_##name
FN(cuInit); FN(cuDeviceGet); FN(cuDevicePrimaryCtxRetain); FN(cuCtxSetCurrent);
FN(cuModuleLoadData); FN(cuModuleGetFunction); FN(cuMemAlloc_v2);
FN(cuMemFree_v2); FN(cuMemsetD8_v2); FN(cuLaunchKernel); FN(cuCtxSynchronize);
FN(cuMemcpyHtoD_v2); FN(cuMemcpyDtoH_v2); FN(cuStreamCreate);
FN(cuStreamBeginCapture_v2); FN(cuStreamEndCapture);
FN(cuGraphInstantiateWithFlags); FN(cuGraphLaunch); FN(cuStreamSynchronize);
FN(cuEventCreate); FN(cuEventRecord); FN(cuEventQuery);
FN(cuCtxSynchronize_v2); FN(cuEventSynchronize); FN(cuStreamQuery);

static int load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (h == NULL) {
		fprintf(stderr, "dlopen libcuda.so.1: %s\n", dlerror());
		return -1;
	}
#define LOAD(name) if (!(*(void **)&p_##name = dlsym(h, #name))) { \
	fprintf(stderr, "no %s\n", #name); return -1; }
	LOAD(cuInit); LOAD(cuDeviceGet); LOAD(cuDevicePrimaryCtxRetain);
	LOAD(cuCtxSetCurrent); LOAD(cuModuleLoadData); LOAD(cuModuleGetFunction);
	LOAD(cuMemAlloc_v2); LOAD(cuMemFree_v2); LOAD(cuMemsetD8_v2);
	LOAD(cuLaunchKernel); LOAD(cuCtxSynchronize); LOAD(cuMemcpyHtoD_v2);
	LOAD(cuMemcpyDtoH_v2); LOAD(cuStreamCreate); LOAD(cuStreamBeginCapture_v2);
	LOAD(cuStreamEndCapture); LOAD(cuGraphInstantiateWithFlags);
	LOAD(cuGraphLaunch); LOAD(cuStreamSynchronize); LOAD(cuEventCreate);
	LOAD(cuEventRecord); LOAD(cuEventQuery); LOAD(cuCtxSynchronize_v2);
	LOAD(cuEventSynchronize); LOAD(cuStreamQuery);
	return 0;
}

#define CK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
	fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
		(int)r_); exit(1); } } while (0)

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static CUmodule mod;

static void launch(const char *name, unsigned long long us, CUstream s)
{
	CUfunction f;
	void *out = NULL;
	void *params[] = { &us, &out };

	CK(p_cuModuleGetFunction(&f, mod, name));
	CK(p_cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
}

static void graph(void)
{
	CUstream s;
	CUgraph g;
	CUgraphExec ge;

	CK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(p_cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 3; i++)
		launch("vs_sleep", 1000, s);
	CK(p_cuStreamEndCapture(s, &g));
	CK(p_cuGraphInstantiateWithFlags(&ge, g, 0));
	CK(p_cuGraphLaunch(ge, s));
	CK(p_cuStreamSynchronize(s));
}

/* -Q: how far ahead of the GPU the launches run. Kernels finish in order
 * on the stream, so the kernels still queued are those after the last
 * event that has passed. */
static void queue_depth(long n, unsigned long long us)
{
	CUstream s;
	CUevent *ev = calloc((size_t)n, sizeof(*ev));
	long done = 0, most = 0;

	if (ev == NULL)
		exit(1);
	CK(p_cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (long i = 0; i < n; i++) {
		CK(p_cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
		launch("vs_sleep", us, s);
		CK(p_cuEventRecord(ev[i], s));
		while (done <= i && p_cuEventQuery(ev[done]) == CUDA_SUCCESS)
			done++;
		if (i >= n / 4 && i + 1 - done > most)
			most = i + 1 - done;
	}
	CK(p_cuStreamSynchronize(s));
	printf("queued max %ld\n", most);
	free(ev);
}

/* -w: wait for the work launched on the legacy stream. */
static void wait_for(const char *how)
{
	static CUevent ev;
	CUresult r;

	if (strcmp(how, "ctx") == 0) {
		CK(p_cuCtxSynchronize());
	} else if (strcmp(how, "ctx2") == 0) {
		CK(p_cuCtxSynchronize_v2(NULL));
	} else if (strcmp(how, "stream") == 0) {
		CK(p_cuStreamSynchronize(NULL));
	} else if (strcmp(how, "event") == 0) {
		if (ev == NULL)
			CK(p_cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
		CK(p_cuEventRecord(ev, NULL));
		CK(p_cuEventSynchronize(ev));
	} else if (strcmp(how, "query") == 0) {
		while ((r = p_cuStreamQuery(NULL)) == CUDA_ERROR_NOT_READY)
			sleep_ms(10);
		CK(r);
	} else {
		fprintf(stderr, "-w %s: ctx, ctx2, stream, event or query\n", how);
		exit(2);
	}
}

static void add_check(void)
{
	enum { N = 1024 };
	static float a[N], b[N], c[N];
	CUdeviceptr da, db, dc;
	CUfunction f;
	int n = N;
	void *params[] = { &da, &db, &dc, &n };

	for (int i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = 2.0f * (float)i;
	}
	CK(p_cuMemAlloc_v2(&da, sizeof(a)));
	CK(p_cuMemAlloc_v2(&db, sizeof(b)));
	CK(p_cuMemAlloc_v2(&dc, sizeof(c)));
	CK(p_cuMemcpyHtoD_v2(da, a, sizeof(a)));
	CK(p_cuMemcpyHtoD_v2(db, b, sizeof(b)));
	CK(p_cuModuleGetFunction(&f, mod, "vs_add"));
	CK(p_cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
	CK(p_cuMemcpyDtoH_v2(c, dc, sizeof(c)));
	for (int i = 0; i < N; i++)
		if (c[i] != 3.0f * (float)i) {
			fprintf(stderr, "vs_add: c[%d] = %f\n", i, (double)c[i]);
			exit(1);
		}
	printf("add ok\n");
}

static void late_check(CUdeviceptr buf, long mb)
{
	unsigned char b[16] = { 0 };
	CUdeviceptr extra = 0;
	CUresult r;

	if (buf) {
		CK(p_cuMemsetD8_v2(buf, 0x5a, sizeof(b)));
		CK(p_cuMemcpyDtoH_v2(b, buf, sizeof(b)));
		printf("buf %s\n", b[0] == 0x5a && b[15] == 0x5a ? "ok" : "bad");
	}
	r = p_cuMemAlloc_v2(&extra, (size_t)mb << 20);
	printf("late alloc %d\n", (int)r);
	if (r == CUDA_SUCCESS)
		CK(p_cuMemFree_v2(extra));
}

int main(int argc, char **argv)
{
	long n = 10, us = 10000, gap = 0, alloc = 0, grow = -1, pause = 0, before = 0;
	long end = 0;
	const char *how = "ctx";
	int opt, capture = 0, add = 0, ordinal = 0, late = 0, queue = 0;
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr buf = 0, big = 0;

	while ((opt = getopt(argc, argv, "n:k:g:m:M:P:W:d:w:E:caFQ")) != -1) {
		switch (opt) {
		case 'n': n = atol(optarg); break;
		case 'k': us = atol(optarg); break;
		case 'g': gap = atol(optarg); break;
		case 'm': alloc = atol(optarg); break;
		case 'M': grow = atol(optarg); break;
		case 'P': pause = atol(optarg); break;
		case 'W': before = atol(optarg); break;
		case 'd': ordinal = atoi(optarg); break;
		case 'w': how = optarg; break;
		case 'E': end = atol(optarg); break;
		case 'c': capture = 1; break;
		case 'a': add = 1; break;
		case 'F': late = 1; break;
		case 'Q': queue = 1; break;
		default: return 2;
		}
	}
	if (load() != 0)
		return 1;
	CK(p_cuInit(0));
	CK(p_cuDeviceGet(&dev, ordinal));
	CK(p_cuDevicePrimaryCtxRetain(&ctx, dev));
	CK(p_cuCtxSetCurrent(ctx));
	CK(p_cuModuleLoadData(&mod, "vshare test kernels"));
	if (alloc > 0)
		CK(p_cuMemAlloc_v2(&buf, (size_t)alloc << 20));
	sleep_ms(before);
	printf("first %llu\n", now_ns());
	fflush(stdout);
	if (queue) {
		queue_depth(n, (unsigned long long)us);
		n = 0;
	}
	for (long i = 0; i < n; i++) {
		if (i == n / 2 && grow > 0)
			CK(p_cuMemAlloc_v2(&big, (size_t)grow << 20));
		if (i == n / 2)
			sleep_ms(pause);
		launch(grow > 0 && i >= n / 2 ? "vs_sleep_ts" : "vs_sleep",
		       (unsigned long long)us, NULL);
		wait_for(how);
		if (gap)
			sleep_ms(gap);
	}
	if (capture)
		graph();
	if (add)
		add_check();
	if (late)
		late_check(buf, alloc);
	sleep_ms(end);
	if (buf)
		CK(p_cuMemFree_v2(buf));
	if (big)
		CK(p_cuMemFree_v2(big));
	return 0;
}
