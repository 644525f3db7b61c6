/*
 * Copies between pageable host memory and converted memory, which the
 * shim stages through pinned buffers (src/libvshare/mem/mem_stage.c):
 * data bit for bit around the chunk size, the semantics of synchronous
 * and asynchronous copies, stream order, capture, threads, fork, and the
 * knob that turns it off.
 *
 * The test driver runs a queued copy from pageable memory when the stream
 * reaches it, reading the source then; so an asynchronous copy queued
 * behind a sleep shows whether the shim staged it: staged, the source was
 * read before the call returned.
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

#include "mem_stage.h"
#include "shim_prog.h"

#define MIN_SZ   STAGE_MIN
#define CHUNK    STAGE_CHUNK
/* A ring's buffers together, and a copy longer than that. */
#define RING     (STAGE_NBUF * CHUNK)
#define MAX_SZ   (RING + CHUNK + 7)
#define GUARD    64
/* A sleep queued before a copy whose data alone is checked. */
#define SHORT_US 200000ULL

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)((i * 131 + seed * 7 + (i >> 12)) & 0xff);
}

static void sleep_on(CUstream s, unsigned long long us)
{
	void *args[] = { &us };

	CK(cuLaunchKernel(kernel("vs_sleep"), 1, 1, 1, 1, 1, 1, 0, s, args,
			  NULL));
}

/* The device bytes around [off, off + n) still hold 0xEE. */
static void check_guards(CUdeviceptr d, size_t off, size_t n)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)d;

	for (size_t i = 0; i < off; i++)
		CHECK(p[i] == 0xEE);
	for (size_t i = off + n; i < off + n + GUARD; i++)
		CHECK(p[i] == 0xEE);
}

/* One size and offsets through every copy form, both directions. */
static void one_size(CUdeviceptr d, unsigned char *src, unsigned char *back,
		     CUstream s, size_t n, size_t doff, size_t soff,
		     unsigned seed)
{
	const unsigned char *dev = (const unsigned char *)(uintptr_t)d;

	for (int form = 0; form < 4; form++) {
		CK(cuMemsetD8(d, 0xEE, MAX_SZ + 2 * GUARD));
		CK(cuCtxSynchronize());
		pattern(src + soff, n, seed + (unsigned)form);
		memset(back, 0x11, n + soff);
		switch (form) {
		case 0:
			CK(cuMemcpyHtoD(d + doff, src + soff, n));
			CHECK(memcmp(dev + doff, src + soff, n) == 0);
			CK(cuMemcpyDtoH(back + soff, d + doff, n));
			break;
		case 1:
			CK(cuMemcpyHtoDAsync(d + doff, src + soff, n, s));
			CK(cuMemcpyDtoHAsync(back + soff, d + doff, n, s));
			CK(cuStreamSynchronize(s));
			break;
		case 2:
			CK(cuMemcpy(d + doff, (CUdeviceptr)(uintptr_t)(src + soff),
				    n));
			CHECK(memcmp(dev + doff, src + soff, n) == 0);
			CK(cuMemcpy((CUdeviceptr)(uintptr_t)(back + soff),
				    d + doff, n));
			break;
		default:
			CK(cuMemcpyAsync(d + doff,
					 (CUdeviceptr)(uintptr_t)(src + soff),
					 n, s));
			CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)(back + soff),
					 d + doff, n, s));
			CK(cuStreamSynchronize(s));
			break;
		}
		CHECK(memcmp(back + soff, src + soff, n) == 0);
		CHECK(memcmp(dev + doff, src + soff, n) == 0);
		check_guards(d, doff, n);
	}
}

static void check_data(CUstream s)
{
	static const size_t sizes[] = { 0, 1, MIN_SZ - 1, MIN_SZ, CHUNK - 1,
					CHUNK, CHUNK + 1, 3 * CHUNK + 12345,
					MAX_SZ };
	unsigned char *src = malloc(MAX_SZ + GUARD), *back = malloc(MAX_SZ + GUARD);
	CUdeviceptr d;

	CHECK(src != NULL && back != NULL);
	CK(cuMemAlloc(&d, MAX_SZ + 2 * GUARD));
	CHECK(is_managed(d));
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int o = 0; o < 3; o++)
			one_size(d, src, back, s, sizes[i],
				 o == 1 ? 3 : 0, o == 2 ? 5 : 0,
				 (unsigned)(i * 3 + (size_t)o));
	CK(cuMemFree(d));
	free(src);
	free(back);
}

/* An asynchronous copy queued behind a hold of its stream (held: the
 * stream waits until the copy has returned; else behind a short sleep,
 * for copies longer than the ring, which must wait for their stream to
 * reuse a buffer); the source overwritten as soon as the call returns.
 * Returns whether the old data arrived; *early: whether the call
 * returned while the stream was still held. */
static int async_old_data(CUstream s, size_t n, int held, int *early)
{
	unsigned char *src = malloc(n), *want = malloc(n);
	struct hold h;
	CUdeviceptr d;
	int old;

	CHECK(src != NULL && want != NULL);
	CK(cuMemAlloc(&d, n));
	pattern(src, n, 42);
	memcpy(want, src, n);
	if (held)
		hold_stream(&h, s);
	else
		sleep_on(s, SHORT_US);
	CK(cuMemcpyHtoDAsync(d, src, n, s));
	memset(src, 0x55, n);
	*early = held ? hold_release(&h, s) : 0;
	CK(cuStreamSynchronize(s));
	old = memcmp((void *)(uintptr_t)d, want, n) == 0;
	if (!old)
		CHECK(((unsigned char *)(uintptr_t)d)[0] == 0x55);
	CK(cuMemFree(d));
	free(src);
	free(want);
	return old;
}

/* A kernel before the copy on the same stream runs before it, one after
 * sees its data. */
static void check_order(CUstream s)
{
	int n = (int)(3 * CHUNK / sizeof(float)), half = n / 2;
	float one = 1.0f, *twos = malloc((size_t)half * sizeof(float));
	float *out = malloc((size_t)n * sizeof(float));
	CUdeviceptr a, c;
	void *fill[] = { &a, &one, &n };
	void *add[] = { &a, &a, &c, &n };

	CHECK(twos != NULL && out != NULL);
	for (int i = 0; i < half; i++)
		twos[i] = 2.0f;
	CK(cuMemAlloc(&a, (size_t)n * sizeof(float)));
	CK(cuMemAlloc(&c, (size_t)n * sizeof(float)));
	sleep_on(s, 50000);
	CK(cuLaunchKernel(kernel("vs_fill"), 1, 1, 1, 1, 1, 1, 0, s, fill,
			  NULL));
	CK(cuMemcpyHtoDAsync(a, twos, (size_t)half * sizeof(float), s));
	CK(cuLaunchKernel(kernel("vs_add"), 1, 1, 1, 1, 1, 1, 0, s, add,
			  NULL));
	CK(cuMemcpyDtoHAsync(out, c, (size_t)n * sizeof(float), s));
	CK(cuStreamSynchronize(s));
	for (int i = 0; i < n; i++)
		CHECK(out[i] == (i < half ? 4.0f : 2.0f));
	CK(cuMemFree(a));
	CK(cuMemFree(c));
	free(twos);
	free(out);
}

/* A copy captured into a graph is not staged: the graph reads the source
 * when it runs. */
static void check_capture_pass(void)
{
	size_t n = 3 * CHUNK;
	unsigned char *src = malloc(n);
	CUdeviceptr d;
	CUstream s;
	CUgraph g;
	CUgraphExec ge;

	CHECK(src != NULL);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, n));
	memset(src, 0x22, n);
	CK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	CK(cuMemcpyHtoDAsync(d, src, n, s));
	CK(cuStreamEndCapture(s, &g));
	CK(cuGraphInstantiate(&ge, g, 0));
	memset(src, 0x33, n);
	CK(cuGraphLaunch(ge, s));
	CK(cuStreamSynchronize(s));
	for (size_t i = 0; i < n; i += 4093)
		CHECK(((unsigned char *)(uintptr_t)d)[i] == 0x33);
	CK(cuGraphExecDestroy(ge));
	CK(cuGraphDestroy(g));
	CK(cuMemFree(d));
	CK(cuStreamDestroy(s));
	free(src);
}

struct worker {
	CUcontext ctx;
	int own_stream;
	unsigned seed;
};

static void *copy_worker(void *arg)
{
	struct worker *w = arg;
	size_t n = 3 * CHUNK + 777;
	unsigned char *src = malloc(n), *back = malloc(n);
	CUstream s = NULL;
	CUdeviceptr d;

	CHECK(src != NULL && back != NULL);
	CK(cuCtxSetCurrent(w->ctx));
	if (w->own_stream)
		CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&d, n));
	for (int i = 0; i < 20; i++) {
		pattern(src, n, w->seed + (unsigned)i);
		CK(cuMemcpyHtoDAsync(d, src, n, s));
		/* The source may be reused at once. */
		memset(src, 0x77, n);
		CK(cuMemcpyDtoHAsync(back, d, n, s));
		CK(cuStreamSynchronize(s));
		pattern(src, n, w->seed + (unsigned)i);
		CHECK(memcmp(back, src, n) == 0);
	}
	CK(cuMemFree(d));
	if (s != NULL)
		CK(cuStreamDestroy(s));
	free(src);
	free(back);
	return NULL;
}

static void check_threads(CUcontext c)
{
	struct worker w[4];
	pthread_t t[4];

	/* As many threads as a context has rings (STAGE_RINGS_CTX), so that
	 * every copy is staged: one that passed through would read its
	 * overwritten source late on the test driver. */
	for (int i = 0; i < 4; i++) {
		w[i] = (struct worker){ c, i != 0, (unsigned)i * 100 };
		CHECK(pthread_create(&t[i], NULL, copy_worker, &w[i]) == 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

/* A synchronous copy from pageable memory reads its source once the
 * stream's earlier work is done, as the driver's does: a host function
 * queued before it writes the source. */
struct host_write {
	unsigned char *p;
	size_t n;
	int v;
};

static void write_host(void *arg)
{
	struct host_write *w = arg;

	memset(w->p, w->v, w->n);
}

/* Lets the held stream go after a while, from another thread: the
 * synchronous copy waits for the stream meanwhile. */
static void *release_later(void *arg)
{
	usleep(200000);
	CHECK(hold_let_go(arg));
	return NULL;
}

static void check_sync_reads_late(void)
{
	size_t n = 3 * CHUNK;
	struct host_write w = { malloc(n), n, 0x77 };
	struct hold h;
	pthread_t t;
	CUdeviceptr d;

	CHECK(w.p != NULL);
	memset(w.p, 0x11, n);
	CK(cuMemAlloc(&d, n));
	hold_stream(&h, NULL);
	CK(cuLaunchHostFunc(NULL, write_host, &w));
	CHECK(pthread_create(&t, NULL, release_later, &h) == 0);
	CK(cuMemcpyHtoD(d, w.p, n));
	pthread_join(t, NULL);
	CHECK(hold_release(&h, NULL));
	for (size_t i = 0; i < n; i += 4093)
		CHECK(((unsigned char *)(uintptr_t)d)[i] == 0x77);
	CHECK(((unsigned char *)(uintptr_t)d)[n - 1] == 0x77);
	CK(cuMemFree(d));
	free(w.p);
}

/* A copy that runs past the end of its allocation is refused whole, as
 * the driver refuses it: nothing of it is written. */
static void check_past_end(void)
{
	size_t n = 2 * CHUNK;
	unsigned char *src = malloc(n);
	CUdeviceptr d;

	CHECK(src != NULL);
	memset(src, 0x5a, n);
	CK(cuMemAlloc(&d, n));
	memset((void *)(uintptr_t)d, 0xEE, n);
	CHECK(cuMemcpyHtoD(d + CHUNK, src, n) == CUDA_ERROR_INVALID_VALUE);
	for (size_t i = 0; i < n; i += 4093)
		CHECK(((unsigned char *)(uintptr_t)d)[i] == 0xEE);
	CHECK(((unsigned char *)(uintptr_t)d)[n - 1] == 0xEE);
	CK(cuMemFree(d));
	free(src);
}

/* An asynchronous copy on one stream returns while another stream, whose
 * own staged copy is still queued, is held: it does not wait for that
 * stream's buffers. Both arrive. */
static void check_streams_apart(void)
{
	size_t n = 2 * CHUNK;
	unsigned char *a = malloc(n), *b = malloc(n);
	CUdeviceptr da, db;
	CUstream s1, s2;
	struct hold h;

	CHECK(a != NULL && b != NULL);
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuMemAlloc(&da, n));
	CK(cuMemAlloc(&db, n));
	pattern(a, n, 1);
	pattern(b, n, 2);
	hold_stream(&h, s1);
	CK(cuMemcpyHtoDAsync(da, a, n, s1));
	CK(cuMemcpyHtoDAsync(db, b, n, s2));
	CK(cuStreamSynchronize(s2));
	CHECK(hold_release(&h, s1));
	CHECK(memcmp((void *)(uintptr_t)da, a, n) == 0);
	CHECK(memcmp((void *)(uintptr_t)db, b, n) == 0);
	CK(cuMemFree(da));
	CK(cuMemFree(db));
	CK(cuStreamDestroy(s1));
	CK(cuStreamDestroy(s2));
	free(a);
	free(b);
}

/* The per-thread default stream has one handle and is another stream in
 * each thread: a copy on one thread's does not wait for another thread's
 * staged copy still queued on its own (held). */
struct pt_side {
	CUcontext ctx;
	CUdeviceptr d;
	unsigned char *src;
	size_t n;
	int copied, held;
	int *done;
};

static void *pt_copier(void *arg)
{
	struct pt_side *p = arg;
	struct hold h;

	CK(cuCtxSetCurrent(p->ctx));
	hold_stream(&h, CU_STREAM_PER_THREAD);
	CK(cuMemcpyHtoDAsync(p->d, p->src, p->n, CU_STREAM_PER_THREAD));
	__atomic_store_n(&p->copied, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(p->done, __ATOMIC_ACQUIRE))
		usleep(1000);
	p->held = hold_release(&h, CU_STREAM_PER_THREAD);
	return NULL;
}

static void check_per_thread_apart(CUcontext c)
{
	size_t n = 2 * CHUNK;
	unsigned char *b = malloc(n);
	struct pt_side side = { c, 0, malloc(n), n, 0, 0, NULL };
	CUdeviceptr db;
	pthread_t t;
	int done = 0;

	CHECK(b != NULL && side.src != NULL);
	side.done = &done;
	CK(cuMemAlloc(&side.d, n));
	CK(cuMemAlloc(&db, n));
	pattern(side.src, n, 3);
	pattern(b, n, 4);
	CHECK(pthread_create(&t, NULL, pt_copier, &side) == 0);
	while (!__atomic_load_n(&side.copied, __ATOMIC_ACQUIRE))
		usleep(1000);
	CK(cuMemcpyHtoDAsync(db, b, n, CU_STREAM_PER_THREAD));
	CK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	CHECK(side.held);
	CHECK(memcmp((void *)(uintptr_t)side.d, side.src, n) == 0);
	CHECK(memcmp((void *)(uintptr_t)db, b, n) == 0);
	CK(cuMemFree(side.d));
	CK(cuMemFree(db));
	free(side.src);
	free(b);
}

int check_stage(void)
{
	CUcontext c = setup_ctx();
	CUstream s;
	int early;

	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	check_data(s);
	check_data(NULL);
	/* Staged: the source was consumed before the call returned, and
	 * a copy that fits the ring's buffers returned while its stream
	 * was still held. */
	CHECK(async_old_data(s, 3 * CHUNK + 1, 1, &early));
	CHECK(early);
	CHECK(async_old_data(s, RING, 1, &early));
	CHECK(early);
	CHECK(async_old_data(NULL, 2 * CHUNK, 1, &early));
	CHECK(early);
	/* Longer than the ring: buffers are reused after their copies. */
	CHECK(async_old_data(s, RING + CHUNK + 5, 0, &early));
	/* Below the threshold: the driver's own copy, which reads the
	 * source only when the stream gets there. */
	CHECK(!async_old_data(s, MIN_SZ - 1, 1, &early));
	CHECK(early);
	check_order(s);
	check_order(NULL);
	check_sync_reads_late();
	check_past_end();
	check_streams_apart();
	check_per_thread_apart(c);
	check_capture_pass();
	check_threads(c);
	CK(cuStreamDestroy(s));
	/* Buffers go with the context; a new one gets its own. */
	CK(cuDevicePrimaryCtxReset(0));
	c = setup_ctx();
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(async_old_data(s, CHUNK, 1, &early));
	CHECK(early);
	CK(cuStreamDestroy(s));
	return 0;
}

/* VSHARE_STAGE_COPIES=0: every copy goes to the driver as it is. */
int check_stage_off(void)
{
	CUstream s;
	int early;

	setup_ctx();
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	check_data(s);
	CHECK(!async_old_data(s, 3 * CHUNK + 1, 1, &early));
	CHECK(early);
	CK(cuStreamDestroy(s));
	return 0;
}

static int stop_copier;

static void *copier(void *arg)
{
	struct worker *w = arg;
	size_t n = 2 * CHUNK + 3;
	unsigned char *src = malloc(n), *back = malloc(n);
	CUdeviceptr d;

	CHECK(src != NULL && back != NULL);
	CK(cuCtxSetCurrent(w->ctx));
	CK(cuMemAlloc(&d, n));
	pattern(src, n, 9);
	while (!__atomic_load_n(&stop_copier, __ATOMIC_RELAXED)) {
		CK(cuMemcpyHtoD(d, src, n));
		CK(cuMemcpyDtoH(back, d, n));
		CHECK(memcmp(back, src, n) == 0);
	}
	CK(cuMemFree(d));
	free(src);
	free(back);
	return NULL;
}

/* Forks while another thread stages copies: the child neither hangs nor
 * uses the parent's buffers; the parent goes on. */
int check_stage_fork(void)
{
	struct worker w = { setup_ctx(), 0, 0 };
	size_t n = 2 * CHUNK;
	unsigned char *src = calloc(1, n);
	CUdeviceptr d;
	pthread_t t;

	CHECK(src != NULL);
	CK(cuMemAlloc(&d, n));
	CK(cuMemcpyHtoD(d, src, n));
	CHECK(pthread_create(&t, NULL, copier, &w) == 0);
	for (int i = 0; i < 10; i++) {
		pid_t pid = fork();
		int st;

		CHECK(pid >= 0);
		if (pid == 0) {
			/* CUDA is refused in the child; the shim answers. */
			(void)cuMemcpyHtoD(d, src, n);
			(void)cuMemcpyHtoDAsync(d, src, n, NULL);
			(void)cuMemcpyDtoH(src, d, n);
			_exit(0);
		}
		for (int waited = 0; waitpid(pid, &st, WNOHANG) != pid;
		     waited += 10) {
			if (waited > 5000) {
				kill(pid, SIGKILL);
				waitpid(pid, &st, 0);
				fprintf(stderr, "child %d hung\n", i);
				return 1;
			}
			usleep(10000);
		}
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	__atomic_store_n(&stop_copier, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	memset(src, 0x5a, n);
	CK(cuMemcpyHtoD(d, src, n));
	CHECK(((unsigned char *)(uintptr_t)d)[n - 1] == 0x5a);
	CK(cuMemFree(d));
	free(src);
	return 0;
}
