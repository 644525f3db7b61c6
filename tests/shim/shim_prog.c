/*
 * The shim's integration checks, run as `shim_prog <check>` with
 * libvshare.so preloaded into a program linked against the CUDA test
 * driver. Built twice: plain, and with CUDA_API_PER_THREAD_DEFAULT_STREAM
 * (the direct calls then bind the _ptds/_ptsz variants).
 * Exit status 0 = pass; a failure prints the line and the CUDA error.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim_prog.h"

/* Every hooked variant, from the shim's own list. */
const struct hooked hooked[] = {
#define H(kind, sym, base, since, pt, stream, params, args) \
	{ #sym, #base, #kind, since, pt },
#include "hooks.def"
#undef H
};
const int n_hooked = sizeof(hooked) / sizeof(hooked[0]);

void fail_at(const char *file, int line, const char *what, int code)
{
	fprintf(stderr, "FAIL %s:%d: %s (%d)\n", file, line, what, code);
	exit(1);
}

/* Whether p is a function of libvshare.so; its name in *name. */
int in_shim(const void *p, const char **name)
{
	Dl_info info;

	if (p == NULL || !dladdr(p, &info) || info.dli_fname == NULL)
		return 0;
	if (name != NULL)
		*name = info.dli_sname;
	return strstr(info.dli_fname, "libvshare") != NULL;
}

CUcontext setup_ctx(void)
{
	CUcontext c;
	CUdevice d;

	CK(cuInit(0));
	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&c, d));
	CK(cuCtxSetCurrent(c));
	return c;
}

CUfunction kernel(const char *name)
{
	static CUmodule m;
	CUfunction f;

	if (m == NULL)
		CK(cuModuleLoadData(&m, "// any image"));
	CK(cuModuleGetFunction(&f, m, name));
	return f;
}

int is_managed(CUdeviceptr p)
{
	unsigned int v = 0;

	CK(cuPointerGetAttribute(&v, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	return v != 0;
}

/* Whether p is still allocated. */
int alive(CUdeviceptr p)
{
	size_t sz = 0;

	return cuPointerGetAttribute(&sz, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p) ==
		       CUDA_SUCCESS && sz > 0;
}

static size_t mem_free_now(void)
{
	size_t f, t;

	CK(cuMemGetInfo(&f, &t));
	return f;
}

/* Launch vs_fill through whatever launch function pointer and check. */
void fill_and_check(launch_fn launch, CUstream s, float v)
{
	CUdeviceptr p;
	float host[64];
	int n = 64;
	void *args[] = { &p, &v, &n };

	CK(cuMemAlloc(&p, sizeof(host)));
	CHECK(is_managed(p));
	CK(launch(kernel("vs_fill"), 1, 1, 1, 64, 1, 1, 0, s, args, NULL));
	CK(cuStreamSynchronize(s));
	CK(cuMemcpyDtoH(host, p, sizeof(host)));
	for (int i = 0; i < n; i++)
		CHECK(host[i] == v);
	CK(cuMemFree(p));
}

static void *hold_watchdog(void *arg)
{
	struct hold *h = arg;
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += HOLD_WATCHDOG_S;
	pthread_mutex_lock(&h->m);
	while (!h->released &&
	       pthread_cond_timedwait(&h->cv, &h->m, &until) == 0)
		;
	if (!h->released) {
		h->fired = 1;
		__atomic_store_n((uint32_t *)(uintptr_t)h->word, 1,
				 __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&h->m);
	return NULL;
}

void hold_stream(struct hold *h, CUstream s)
{
	void *word;

	/* Pinned host memory: the shim does not count it, so the checks of
	 * the footprint around a hold stay exact. */
	memset(h, 0, sizeof(*h));
	CK(cuMemAllocHost(&word, sizeof(uint32_t)));
	*(volatile uint32_t *)word = 0;
	h->word = (CUdeviceptr)(uintptr_t)word;
	pthread_mutex_init(&h->m, NULL);
	pthread_cond_init(&h->cv, NULL);
	CK(cuStreamWaitValue32(s, h->word, 1, CU_STREAM_WAIT_VALUE_GEQ));
	CHECK(pthread_create(&h->watchdog, NULL, hold_watchdog, h) == 0);
}

int hold_let_go(struct hold *h)
{
	int held;

	pthread_mutex_lock(&h->m);
	if (!h->released)
		h->held_at_release = !h->fired;
	held = h->held_at_release;
	h->released = 1;
	__atomic_store_n((uint32_t *)(uintptr_t)h->word, 1, __ATOMIC_RELEASE);
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->m);
	return held;
}

int hold_release(struct hold *h, CUstream s)
{
	int held = hold_let_go(h);

	pthread_join(h->watchdog, NULL);
	pthread_mutex_destroy(&h->m);
	pthread_cond_destroy(&h->cv);
	CK(cuStreamSynchronize(s));
	CK(cuMemFreeHost((void *)(uintptr_t)h->word));
	return held;
}

/* Programs linked against libcuda reach the hooks directly. */
static int check_direct(void)
{
	CUstream s;
	CUdeviceptr p;
	size_t pitch;
	char buf[100];
	const char *name;

	setup_ctx();
	CHECK(in_shim((void *)cuMemAlloc, &name));
	CHECK(in_shim((void *)cuLaunchKernel, &name));
	printf("cuLaunchKernel binds %s\n", name);
	CHECK(in_shim((void *)cuMemcpyHtoD, &name));
	printf("cuMemcpyHtoD binds %s\n", name);
	CHECK(in_shim((void *)cuMemsetD8, NULL));
	CHECK(in_shim((void *)cuMemcpyAsync, NULL));
	CHECK(in_shim((void *)cuGraphLaunch, NULL));
#ifndef CUDA_API_PER_THREAD_DEFAULT_STREAM
	/* (cuda.h makes it an inline wrapper in per-thread builds) */
	CHECK(in_shim((void *)cuGetProcAddress, NULL));
#endif
	CK(cuStreamCreate(&s, 0));
	fill_and_check(cuLaunchKernel, s, 3.0f);
	fill_and_check(cuLaunchKernel, NULL, 4.0f);
	CK(cuMemAllocPitch(&p, &pitch, 100, 10, 4));
	CHECK(pitch >= 100 && pitch % 512 == 0);
	CHECK(is_managed(p));
	CK(cuMemsetD8(p, 7, 100));
	CK(cuMemcpyDtoH(buf, p, 100));
	CHECK(buf[0] == 7 && buf[99] == 7);
	CK(cuMemFree(p));
	CK(cuStreamDestroy(s));
	return 0;
}

/* fork of a process with CUDA initialized: the child neither deadlocks
 * nor sees the parent's shim state, while another thread of the parent
 * keeps taking the shim's locks. */
static int churn_stop;

static void *churn(void *arg)
{
	CUcontext c = arg;

	CK(cuCtxSetCurrent(c));
	while (!__atomic_load_n(&churn_stop, __ATOMIC_RELAXED)) {
		CUdeviceptr p;
		size_t f, t;

		CK(cuMemAlloc(&p, 4096));
		CK(cuMemGetInfo(&f, &t));
		CK(cuMemFree(p));
	}
	return NULL;
}

static int child_body(CUdeviceptr parent_ptr, CUfunction fn)
{
	CUdeviceptr p;
	size_t f, t;

	/* Like the real driver, the test driver refuses CUDA in the child;
	 * the shim must answer, not hang. */
	if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS)
		cuMemFree(p);
	(void)cuMemGetInfo(&f, &t);
	(void)cuMemFree(parent_ptr);
	(void)cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
	return 0;
}

static int wait_child(pid_t pid, int timeout_ms)
{
	int st;

	for (int waited = 0; waited < timeout_ms; waited += 10) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static int check_fork(void)
{
	CUcontext c = setup_ctx();
	CUfunction f = kernel("vs_sleep");
	CUdeviceptr p;
	pthread_t t;

	CK(cuMemAlloc(&p, 1 << 20));
	CHECK(pthread_create(&t, NULL, churn, c) == 0);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		int rc;

		CHECK(pid >= 0);
		if (pid == 0)
			_exit(child_body(p, f));
		rc = wait_child(pid, 5000);
		if (rc != 0) {
			fprintf(stderr, "child %d: %s\n", i,
				rc < 0 ? "hung" : "failed");
			return 1;
		}
	}
	__atomic_store_n(&churn_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	/* The parent is unaffected. */
	CHECK(is_managed(p));
	CK(cuMemFree(p));
	fill_and_check(cuLaunchKernel, NULL, 5.0f);
	return 0;
}

/* The memory view and the per-process limit, both EXPECT_TOTAL bytes:
 * the device's memory by default, or VSHARE_MEM_LIMIT. */
static int check_meminfo(void)
{
	const char *e = getenv("EXPECT_TOTAL");
	uint64_t limit = e != NULL ? strtoull(e, NULL, 10) : 0;
	size_t f, t, f2;
	CUdeviceptr p, q;

	setup_ctx();
	CK(cuMemGetInfo(&f, &t));
	printf("total %zu free %zu\n", t, f);
	CHECK(t == limit);
	CHECK(f == t);
	CK(cuMemAlloc(&p, 16 << 20));
	CK(cuMemGetInfo(&f2, &t));
	CHECK(f2 == f - (16 << 20));
	/* Past the limit: out of memory, and nothing changes. */
	CHECK(cuMemAlloc(&q, limit) == CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(mem_free_now() == f2);
	CK(cuMemFree(p));
	CHECK(mem_free_now() == f);
	/* Up to the limit exactly is fine. */
	CK(cuMemAlloc(&q, limit));
	CHECK(mem_free_now() == 0);
	CHECK(cuMemAlloc(&p, 1) == CUDA_ERROR_OUT_OF_MEMORY);
	CK(cuMemFree(q));

	/* Managed memory the program asks for itself may oversubscribe the
	 * GPU; only an explicit VSHARE_MEM_LIMIT bounds it. */
	if (getenv("VSHARE_MEM_LIMIT") != NULL) {
		CHECK(cuMemAllocManaged(&q, limit + 4096, CU_MEM_ATTACH_GLOBAL) ==
		      CUDA_ERROR_OUT_OF_MEMORY);
	} else {
		CK(cuMemAllocManaged(&q, limit + 4096, CU_MEM_ATTACH_GLOBAL));
		CHECK(is_managed(q));
		CHECK(mem_free_now() == 0);
		CK(cuMemFree(q));
	}
	CHECK(mem_free_now() == f);
	return 0;
}

/* VSHARE_CAPACITY=32M on a larger device: the view shrinks to it, the
 * limit stays the device's memory. */
static int check_capacity(void)
{
	size_t f, t;
	CUdeviceptr p;

	setup_ctx();
	CK(cuMemGetInfo(&f, &t));
	CHECK(t == 32u << 20 && f == t);
	CK(cuMemAlloc(&p, 48u << 20));
	CHECK(mem_free_now() == 0);
	CK(cuMemFree(p));
	CHECK(mem_free_now() == t);
	return 0;
}

/* VSHARE_ALLOW_SINGLE_OVERSUB=1: one process may pass the GPU's memory. */
static int check_oversub(void)
{
	size_t f, t;
	CUdeviceptr p;

	setup_ctx();
	CK(cuMemGetInfo(&f, &t));
	CK(cuMemAlloc(&p, t + (t / 2)));
	CHECK(is_managed(p));
	CHECK(mem_free_now() == 0);
	CK(cuMemFree(p));
	CHECK(mem_free_now() == t);
	return 0;
}

/* VSHARE_CONVERT=0: memory stays device memory, but still counts. */
static int check_convert_off(void)
{
	CUdeviceptr p;
	size_t f = 0, pitch = 0;

	setup_ctx();
	f = mem_free_now();
	CK(cuMemAlloc(&p, 1 << 20));
	CHECK(!is_managed(p));
	CHECK(mem_free_now() <= f - (1 << 20));
	CK(cuMemFree(p));
	CHECK(mem_free_now() == f);
	CK(cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
	CHECK(!is_managed(p));
	CHECK(mem_free_now() <= f - pitch * 10);
	CK(cuMemFree(p));
	CHECK(mem_free_now() == f);
	return 0;
}

/* VMM memory passes through and counts as pinned footprint. */
static int check_vmm(void)
{
	CUmemAllocationProp prop;
	CUmemGenericAllocationHandle h;
	size_t gran = 0, f;

	setup_ctx();
	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gran, &prop,
					 CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	f = mem_free_now();
	CK(cuMemCreate(&h, gran * 4, &prop, 0));
	CHECK(mem_free_now() == f - gran * 4);
	CK(cuMemRelease(h));
	CHECK(mem_free_now() == f);
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} checks[] = {
	{ "direct", check_direct },
	{ "dlsym", check_dlsym },
	{ "procaddr", check_procaddr },
	{ "procaddr_legacy", check_procaddr_legacy },
	{ "async_free", check_async_free },
	{ "async_cache", check_async_cache },
	{ "async_cache_limit", check_async_cache_limit },
	{ "async_cache_threads", check_async_cache_threads },
	{ "async_chain", check_async_chain },
	{ "async_capture", check_async_capture },
	{ "capture", check_capture },
	{ "gated", check_gated },
	{ "fork", check_fork },
	{ "meminfo", check_meminfo },
	{ "capacity", check_capacity },
	{ "oversub", check_oversub },
	{ "convert_off", check_convert_off },
	{ "vmm", check_vmm },
	{ "stage", check_stage },
	{ "stage_off", check_stage_off },
	{ "stage_fork", check_stage_fork },
	{ "start_fail", check_start_fail },
};

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s <check>\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (strcmp(argv[1], checks[i].name) == 0)
			return checks[i].fn();
	fprintf(stderr, "unknown check %s\n", argv[1]);
	return 2;
}
