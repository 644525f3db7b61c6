/*
 * shim_prog's checks of the cache of converted stream-ordered memory
 * (src/libvshare/mem/mem_cache.c), seen from the program: which block an
 * allocation gets and when, what cuMemGetInfo counts, the data through
 * reuse, the limit, capture, fork and threads.
 */
#include <cuda.h>
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

#define MIB (1u << 20)

static size_t free_now(void)
{
	size_t f, t;

	CK(cuMemGetInfo(&f, &t));
	return f;
}

static void sleep_on(CUstream s, unsigned long long us)
{
	void *args[] = { &us };

	CK(cuLaunchKernel(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s, args,
			  NULL));
}

static void fill_on(CUstream s, CUdeviceptr p, float v, int n)
{
	void *args[] = { &p, &v, &n };

	CK(cuLaunchKernel(kernel("vs_fill"), 1, 1, 1, 256, 1, 1, 0, s, args,
			  NULL));
}

/* Every float of [p, p + n) equals v, bit for bit. */
static int all_equal(CUdeviceptr p, float v, int n, CUstream s)
{
	float *host = malloc((size_t)n * sizeof(float));
	int ok = host != NULL;

	CHECK(ok);
	CK(cuMemcpyDtoHAsync(host, p, (size_t)n * sizeof(float), s));
	CK(cuStreamSynchronize(s));
	for (int i = 0; ok && i < n; i++)
		ok = memcmp(&host[i], &v, sizeof(v)) == 0;
	free(host);
	return ok;
}

static CUmemoryPool default_pool(void)
{
	CUmemoryPool pool;

	CK(cuDeviceGetDefaultMemPool(&pool, 0));
	return pool;
}

/* A free on a stream that is still busy: the same stream gets the block
 * back at once, without waiting; another stream only once the stream
 * has passed the free. The block counts all along; data written after
 * the reuse is what the stream reads, bit for bit. */
static void same_and_other_stream(CUstream s1, CUstream s2, size_t f0)
{
	CUdeviceptr p, q, r;
	const int n = MIB / sizeof(float);
	struct hold h;

	CK(cuMemAllocAsync(&p, MIB, s1));
	CHECK(is_managed(p));
	CHECK(free_now() == f0 - MIB);
	fill_on(s1, p, 1.0f, n);
	hold_stream(&h, s1);
	fill_on(s1, p, 2.0f, n);
	CK(cuMemFreeAsync(p, s1));
	CK(cuMemAllocAsync(&q, MIB, s1));
	CHECK(q == p);
	CHECK(free_now() == f0 - MIB);        /* counted once */
	fill_on(s1, q, 3.0f, n);
	CK(cuMemFreeAsync(q, s1));
	/* s1 is still held: s2 must not get that block. */
	CK(cuMemAllocAsync(&r, MIB, s2));
	CHECK(r != p);
	CHECK(free_now() == f0 - 2 * MIB);
	CK(cuMemFreeAsync(r, s2));
	/* Nothing waited for s1: it was still held. */
	CHECK(hold_release(&h, s1));
	CHECK(alive(p));
	/* The free has passed: s2 may take s1's block, oldest ones first
	 * are not promised, but both are in the cache. */
	CK(cuMemAllocAsync(&q, MIB, s2));
	CHECK(q == r || q == p);
	CK(cuMemAllocAsync(&r, MIB, s2));
	CHECK((q == p && r != p) || (q != p && r == p));
	CHECK(free_now() == f0 - 2 * MIB);
	/* The last write before the free, then the new owner's. */
	CHECK(all_equal(p, 3.0f, n, s2));
	fill_on(s2, p, 4.0f, n);
	CHECK(all_equal(p, 4.0f, n, s2));
	CK(cuMemFreeAsync(q, s2));
	CK(cuMemFreeAsync(r, s2));
	CK(cuStreamSynchronize(s2));
}

/* Pools keep their blocks apart; cuMemPoolTrimTo frees a pool's cached
 * memory (the default pool's includes cuMemAllocAsync's). */
static void pools_and_trim(CUstream s, size_t f0)
{
	CUmemPoolProps props;
	CUmemoryPool pool;
	CUdeviceptr p, q, r;

	memset(&props, 0, sizeof(props));
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	CK(cuMemPoolCreate(&pool, &props));
	CK(cuMemAllocFromPoolAsync(&p, MIB, pool, s));
	CHECK(is_managed(p));
	CK(cuMemFreeAsync(p, s));
	CK(cuMemAllocAsync(&q, MIB, s));      /* another pool */
	CHECK(q != p);
	CK(cuMemFreeAsync(q, s));
	CK(cuStreamSynchronize(s));
	CHECK(free_now() <= f0 - 2 * MIB);
	CK(cuMemAllocFromPoolAsync(&r, MIB, pool, s));
	CHECK(r == p);
	CK(cuMemFreeAsync(r, s));
	CK(cuStreamSynchronize(s));
	/* Trimming the created pool leaves the default pool's block. */
	CK(cuMemPoolTrimTo(pool, 0));
	CHECK(!alive(p) && alive(q));
	CHECK(free_now() == f0 - 2 * MIB + MIB);
	CK(cuMemPoolTrimTo(default_pool(), 0));
	CHECK(!alive(q));
	CHECK(free_now() == f0);
	CK(cuMemPoolDestroy(pool));
}

/* A block cached on a stream that then captures is not handed to the
 * capture: the allocation stays the driver's (a graph memory node, owned
 * by the graph), and the block is still there afterwards. */
static void capture_untouched(CUstream s)
{
	CUdeviceptr p, q = 0;
	CUgraph g = NULL;

	CK(cuMemAllocAsync(&p, MIB, s));
	CK(cuMemFreeAsync(p, s));
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CHECK(cuMemAllocAsync(&q, MIB, s) != CUDA_SUCCESS ||
	      (q != p && !is_managed(q)));
	if (cuStreamEndCapture(s, &g) == CUDA_SUCCESS && g != NULL)
		CK(cuGraphDestroy(g));
	CK(cuMemAllocAsync(&q, MIB, s));
	CHECK(q == p);
	CK(cuMemFreeAsync(q, s));
	CK(cuStreamSynchronize(s));
}

/* A fork child with blocks cached in the parent neither hangs nor
 * disturbs the parent's cache. */
static void fork_child(CUstream s, CUmemoryPool pool)
{
	CUdeviceptr p, q;
	pid_t pid;
	int st = 0;

	CK(cuMemAllocAsync(&p, MIB, s));
	CK(cuMemFreeAsync(p, s));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (cuMemAllocAsync(&q, MIB, s) == CUDA_SUCCESS)
			(void)cuMemFreeAsync(q, s);
		(void)cuMemPoolTrimTo(pool, 0);
		_exit(0);
	}
	for (int i = 0; i < 500 && waitpid(pid, &st, WNOHANG) != pid; i++)
		usleep(10000);
	if (kill(pid, 0) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		CHECK(!"the fork child hung");
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CK(cuMemAllocAsync(&q, MIB, s));
	CHECK(q == p);
	CK(cuMemFreeAsync(q, s));
}

int check_async_cache(void)
{
	CUstream s1, s2;
	size_t f0;

	setup_ctx();
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	f0 = free_now();
	same_and_other_stream(s1, s2, f0);
	CK(cuMemPoolTrimTo(default_pool(), 0));
	CHECK(free_now() == f0);
	pools_and_trim(s1, f0);
	capture_untouched(s1);
	fork_child(s1, default_pool());
	/* The default stream (legacy, or the thread's own in the
	 * per-thread build) caches too. */
	{
		CUdeviceptr p, q;

		CK(cuMemAllocAsync(&p, 4096, NULL));
		CK(cuMemFreeAsync(p, NULL));
		CK(cuMemAllocAsync(&q, 4096, NULL));
		CHECK(q == p);
		CK(cuMemFreeAsync(q, NULL));
	}
	CK(cuCtxSynchronize());
	CK(cuMemPoolTrimTo(default_pool(), 0));
	CHECK(free_now() == f0);
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
	return 0;
}

/* VSHARE_MEM_LIMIT=8M, VSHARE_ASYNC_CACHE=6M: cached blocks count, and
 * are given back rather than an allocation failing; one still busy on
 * its stream is waited for. A block larger than the cap is not kept. */
int check_async_cache_limit(void)
{
	CUstream s;
	CUdeviceptr p, q, r;
	size_t f0;

	setup_ctx();
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	f0 = free_now();
	CHECK(f0 == 8 * MIB);
	CK(cuMemAllocAsync(&p, 6 * MIB, s));
	CK(cuMemFreeAsync(p, s));
	CK(cuStreamSynchronize(s));
	CHECK(alive(p) && free_now() == 2 * MIB);
	/* Synchronous memory: the cached block goes. */
	CK(cuMemAlloc(&q, 4 * MIB));
	CHECK(!alive(p));
	CHECK(free_now() == 4 * MIB);
	CK(cuMemFree(q));
	/* Stream-ordered, another size class, the cached block still busy
	 * on its stream: waited for, then freed. */
	CK(cuMemAllocAsync(&p, 6 * MIB, s));
	sleep_on(s, 200000);
	CK(cuMemFreeAsync(p, s));
	CK(cuMemAllocAsync(&r, 3 * MIB, s));
	CHECK(!alive(p));
	CHECK(free_now() == 5 * MIB);
	CK(cuMemFreeAsync(r, s));
	CK(cuStreamSynchronize(s));
	/* More than the limit stays refused. */
	CHECK(cuMemAllocAsync(&q, 9 * MIB, s) == CUDA_ERROR_OUT_OF_MEMORY);
	/* Past the cap: freed once the stream has passed the free. */
	CK(cuMemPoolTrimTo(default_pool(), 0));
	CHECK(free_now() == 8 * MIB);
	CK(cuMemAllocAsync(&p, 7 * MIB, s));
	CK(cuMemFreeAsync(p, s));
	CK(cuStreamSynchronize(s));
	CHECK(free_now() == 8 * MIB && !alive(p));
	CK(cuStreamDestroy(s));
	return 0;
}

/* Threads, each on its own stream (and the per-thread default stream in
 * the per-thread build), allocate, fill, check and free in a loop while
 * another trims; every block holds what its owner wrote. */
#define CT_THREADS 4
#define CT_ROUNDS 150

static CUcontext ct_ctx;
static int ct_stop;

static void *cache_worker(void *arg)
{
	int id = (int)(intptr_t)arg, n = 2048;
	float *host = malloc((size_t)n * sizeof(float));
	CUstream s = NULL;

	CHECK(host != NULL);
	CK(cuCtxSetCurrent(ct_ctx));
	if (id % 2 == 0)
		CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < CT_ROUNDS; i++) {
		CUdeviceptr p;
		size_t bytes = (size_t)n * sizeof(float) * (1 + i % 3);
		float v = (float)(id * 1000 + i);

		/* Freed with the work still queued: whoever gets the block
		 * next must not overwrite it before the copy. */
		CK(cuMemAllocAsync(&p, bytes, s));
		if (i % 7 == 0)
			sleep_on(s, 300);
		fill_on(s, p, v, n);
		if (i % 5 == 0)
			sleep_on(s, 200);
		CK(cuMemcpyDtoHAsync(host, p, (size_t)n * sizeof(float), s));
		CK(cuMemFreeAsync(p, s));
		CK(cuStreamSynchronize(s));
		for (int k = 0; k < n; k++)
			CHECK(memcmp(&host[k], &v, sizeof(v)) == 0);
	}
	if (s != NULL)
		CK(cuStreamDestroy(s));
	free(host);
	return NULL;
}

static void *cache_trimmer(void *arg)
{
	CUmemoryPool pool = arg;

	CK(cuCtxSetCurrent(ct_ctx));
	while (!__atomic_load_n(&ct_stop, __ATOMIC_RELAXED)) {
		CK(cuMemPoolTrimTo(pool, 0));
		usleep(500);
	}
	return NULL;
}

int check_async_cache_threads(void)
{
	pthread_t t[CT_THREADS], trim;
	size_t f0;

	ct_ctx = setup_ctx();
	/* The module once, before the threads (kernel() loads it lazily). */
	(void)kernel("vs_sleep");
	(void)kernel("vs_fill");
	f0 = free_now();
	CHECK(pthread_create(&trim, NULL, cache_trimmer, default_pool()) == 0);
	for (int i = 0; i < CT_THREADS; i++)
		CHECK(pthread_create(&t[i], NULL, cache_worker,
				     (void *)(intptr_t)i) == 0);
	for (int i = 0; i < CT_THREADS; i++)
		pthread_join(t[i], NULL);
	__atomic_store_n(&ct_stop, 1, __ATOMIC_RELAXED);
	pthread_join(trim, NULL);
	CK(cuCtxSynchronize());
	CK(cuMemPoolTrimTo(default_pool(), 0));
	CHECK(free_now() == f0);
	return 0;
}

/* A jitted loop's pattern, x = f(x): each step allocates its output on
 * one of two streams (which take turns, ordered by events), computes it
 * from the last output and frees the last output behind the kernel,
 * every other step on the other stream once that stream waited for the
 * kernel. Each step also fills a scratch block of the same size on its
 * stream, and another on a third stream that waits for nothing, and
 * frees both: if a block went to a new owner before the work queued
 * ahead of its free had run, a scratch fill would overwrite an input
 * that work still reads. The host runs ahead of the streams (a sleep
 * every few steps), so frees pile up. Run without the cache (every free
 * deferred) and with it. */
int check_async_chain(void)
{
	enum { N = 1 << 14, STEPS = 300 };
	size_t bytes = N * sizeof(float);
	CUstream s[3];
	CUevent ev[STEPS];
	CUdeviceptr ones, x, y, z, z3;
	int n = N;

	setup_ctx();
	CK(cuStreamCreate(&s[0], CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s[1], CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s[2], CU_STREAM_NON_BLOCKING));
	for (int k = 0; k < STEPS; k++)
		CK(cuEventCreate(&ev[k], CU_EVENT_DISABLE_TIMING));
	CK(cuMemAlloc(&ones, bytes));
	fill_on(s[0], ones, 1.0f, n);
	CK(cuMemAllocAsync(&x, bytes, s[0]));
	fill_on(s[0], x, 0.0f, n);
	CK(cuEventRecord(ev[0], s[0]));
	for (int k = 1; k < STEPS; k++) {
		CUstream cur = s[k % 2], other = s[(k + 1) % 2];
		void *args[] = { &x, &ones, &y, &n };

		/* This step comes after the last, which ran on the other. */
		CK(cuStreamWaitEvent(cur, ev[k - 1], 0));
		if (k % 7 == 0)
			sleep_on(cur, 2000);
		CK(cuMemAllocAsync(&z, bytes, cur));
		CK(cuMemAllocAsync(&y, bytes, cur));
		fill_on(cur, z, 1e6f, n);
		CK(cuLaunchKernel(kernel("vs_add"), 1, 1, 1, 256, 1, 1, 0, cur,
				  args, NULL));
		CK(cuMemFreeAsync(z, cur));
		CK(cuMemAllocAsync(&z3, bytes, s[2]));
		fill_on(s[2], z3, -1e6f, n);
		CK(cuMemFreeAsync(z3, s[2]));
		CK(cuEventRecord(ev[k], cur));
		if (k % 2) {
			CK(cuMemFreeAsync(x, cur));
		} else {
			CK(cuStreamWaitEvent(other, ev[k], 0));
			CK(cuMemFreeAsync(x, other));
		}
		x = y;
	}
	CHECK(all_equal(x, (float)(STEPS - 1), n, s[(STEPS - 1) % 2]));
	CK(cuMemFreeAsync(x, s[0]));
	CK(cuCtxSynchronize());
	CK(cuMemFree(ones));
	for (int k = 0; k < STEPS; k++)
		CK(cuEventDestroy(ev[k]));
	CK(cuStreamDestroy(s[0]));
	CK(cuStreamDestroy(s[1]));
	CK(cuStreamDestroy(s[2]));
	return 0;
}

/* Stream-ordered memory on other streams while a capture is active in
 * global mode (PyTorch's default): what the shim does behind those calls
 * (event queries, the managed allocation, deferred frees: its own calls,
 * relaxed) must not invalidate the capture, and a block whose free the
 * GPU has not passed must not be handed out meanwhile. The driver itself
 * would refuse these calls from a thread in global mode
 * (tests/driver/capture_rule.txt); the shim serves them, adding no
 * failure. Run with the cache and without (VSHARE_ASYNC_CACHE=0). */
static int cache_off(void)
{
	const char *v = getenv("VSHARE_ASYNC_CACHE");

	return v != NULL && strcmp(v, "0") == 0;
}

struct side_alloc {
	CUcontext ctx;
	CUstream s;
	CUdeviceptr got;
	CUresult alloc, free, info;
};

static void *alloc_beside_capture(void *arg)
{
	struct side_alloc *a = arg;
	size_t f, t;

	CK(cuCtxSetCurrent(a->ctx));
	a->alloc = cuMemAllocAsync(&a->got, MIB, a->s);
	if (a->alloc == CUDA_SUCCESS) {
		fill_on(a->s, a->got, 5.0f, MIB / sizeof(float));
		a->free = cuMemFreeAsync(a->got, a->s);
	}
	a->info = cuMemGetInfo(&f, &t);
	return NULL;
}

int check_async_capture(void)
{
	const int n = MIB / sizeof(float);
	struct side_alloc side = { 0 };
	CUstream s1, s2, sc;
	CUdeviceptr p, q, g;
	CUgraph graph;
	CUgraphExec exec;
	struct hold h;
	pthread_t t;
	size_t f0;

	side.ctx = setup_ctx();
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&sc, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&g, MIB));
	f0 = free_now();
	/* A free the GPU has not passed: s1 is held. */
	CK(cuMemAllocAsync(&p, MIB, s1));
	fill_on(s1, p, 1.0f, n);
	hold_stream(&h, s1);
	fill_on(s1, p, 2.0f, n);
	CK(cuMemFreeAsync(p, s1));

	CK(cuStreamBeginCapture(sc, CU_STREAM_CAPTURE_MODE_GLOBAL));
	fill_on(sc, g, 7.0f, n);
	/* Another thread, and the capturing one, on streams that do not
	 * capture. */
	side.s = s2;
	CHECK(pthread_create(&t, NULL, alloc_beside_capture, &side) == 0);
	pthread_join(t, NULL);
	CK(side.alloc);
	CK(side.free);
	CK(side.info);
	CHECK(side.got != p);
	CK(cuMemAllocAsync(&q, MIB, s2));
	CHECK(q != p);
	CHECK(is_managed(q));
	fill_on(s2, q, 6.0f, n);
	CK(cuStreamEndCapture(sc, &graph));

	CK(cuGraphInstantiate(&exec, graph, 0));
	CK(cuGraphLaunch(exec, sc));
	CHECK(all_equal(g, 7.0f, n, sc));
	CHECK(all_equal(q, 6.0f, n, s2));
	CHECK(hold_release(&h, s1));
	CK(cuMemFreeAsync(q, s2));
	CK(cuStreamSynchronize(s2));
	/* Once the capture is over, the frees it held back go through, and
	 * p's block is free for any stream. */
	if (cache_off()) {
		CHECK(free_now() == f0);
		CHECK(!alive(p));
	} else {
		/* p's block and the side thread's (which q may have been
		 * served again on s2) kept, each counted once. */
		CHECK(free_now() == f0 - (q == side.got ? 2 : 3) * MIB);
	}
	CK(cuGraphExecDestroy(exec));
	CK(cuGraphDestroy(graph));
	CK(cuMemFree(g));
	CK(cuStreamSynchronize(s1));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
	CK(cuStreamDestroy(sc));
	return 0;
}
