/*
 * Oversubscription and swap-in, in three roles.
 *
 *   --role baseline (plain CUDA): a managed buffer of --bytes, timed
 *     prefetch to host, touch by page faults, prefetch to host again and
 *     prefetch to the GPU: the rates the shim's swap has to match.
 *   --role first / --role second (under the shim, against a capacity
 *     smaller than both buffers together, VSHARE_SWAP_OUT=eager):
 *     each allocates --bytes with cuMemAlloc, fills and touches it, and
 *     signals --ready. "second"'s first submission makes "first" (idle)
 *     swap out. Then "first" waits for --go: its next launch makes
 *     "second" (idle) swap out and "first" swap in by prefetch on grant.
 *     "first" reports that wait, and the touch kernel's time after the
 *     grant beside its time while resident (fast only if the data came
 *     back before the kernel ran). "second" stays attached until --exit.
 * Every role checks the buffer's contents at the end.
 */
#include "vsg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct buf {
	CUdeviceptr d;
	unsigned long long words;
	size_t bytes;
	unsigned touches; /* how many times vsg_touch ran over it */
};

static CUfunction k_touch, k_empty;
static CUstream st;
static CUevent e0, e1;

/* Launch the touch kernel and return its GPU time in ms. With wait_ns,
 * an empty kernel goes first and the host time of that launch call (which
 * blocks until this process holds the GPU and any swap-in is done) goes to
 * *wait_ns: an event recorded before a blocked launch would count the
 * wait as GPU time. */
static double touch_ms(struct buf *b, uint64_t *wait_ns)
{
	void *args[] = { &b->d, &b->words };
	float ms = 0;

	if (wait_ns) {
		uint64_t t = vsg_now_ns();

		VSG_CK(cuLaunchKernel(k_empty, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
		*wait_ns = vsg_now_ns() - t;
	}
	VSG_CK(cuEventRecord(e0, st));
	VSG_CK(cuLaunchKernel(k_touch, 528, 1, 1, 1024, 1, 1, 0, st, args, NULL));
	VSG_CK(cuEventRecord(e1, st));
	VSG_CK(cuEventSynchronize(e1));
	VSG_CK(cuEventElapsedTime(&ms, e0, e1));
	b->touches++;
	return ms;
}

/* Spot-check the words: each is its index pattern plus the touch count. */
static int verify(struct buf *b)
{
	enum { CHUNK = 1 << 16 };
	unsigned int *h = malloc(CHUNK * sizeof(unsigned int));
	int bad = 0;

	for (unsigned long long off = 0; off + CHUNK <= b->words; off += b->words / 16) {
		VSG_CK(cuMemcpyDtoH(h, b->d + off * 4, CHUNK * 4));
		for (unsigned i = 0; i < CHUNK; i++)
			if (h[i] != (unsigned)((off + i) * 2654435761ull) + b->touches)
				bad++;
	}
	free(h);
	return bad;
}

static void fill(struct buf *b)
{
	enum { CHUNK = 1 << 22 };
	unsigned int *h = malloc(CHUNK * sizeof(unsigned int));

	for (unsigned long long off = 0; off < b->words; off += CHUNK) {
		unsigned long long n = b->words - off < CHUNK ? b->words - off : CHUNK;

		for (unsigned long long i = 0; i < n; i++)
			h[i] = (unsigned)((off + i) * 2654435761ull);
		VSG_CK(cuMemcpyHtoD(b->d + off * 4, h, n * 4));
	}
	free(h);
}

static double prefetch_gbs(struct buf *b, int to_host)
{
	CUmemLocation loc;
	float ms = 0;

	memset(&loc, 0, sizeof(loc));
	loc.type = to_host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
	loc.id = 0;
	VSG_CK(cuEventRecord(e0, st));
	VSG_CK(cuMemPrefetchAsync(b->d, b->bytes, loc, 0, st));
	VSG_CK(cuEventRecord(e1, st));
	VSG_CK(cuEventSynchronize(e1));
	VSG_CK(cuEventElapsedTime(&ms, e0, e1));
	return (double)b->bytes / (ms * 1e6);
}

/* The same prefetch cut into 64 MiB chunks over four streams, as the
 * shim's bulk swap does by default (VSHARE_SWAP_STREAMS). */
static double prefetch_gbs_chunked(struct buf *b, int to_host)
{
	enum { NS = 4 };
	const size_t chunk = 64u << 20;
	CUstream s[NS];
	CUmemLocation loc;
	uint64_t t0;
	int k = 0;

	memset(&loc, 0, sizeof(loc));
	loc.type = to_host ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
	loc.id = 0;
	for (int i = 0; i < NS; i++)
		VSG_CK(cuStreamCreate(&s[i], CU_STREAM_NON_BLOCKING));
	t0 = vsg_now_ns();
	for (size_t off = 0; off < b->bytes; off += chunk, k = (k + 1) % NS)
		VSG_CK(cuMemPrefetchAsync(b->d + off, b->bytes - off < chunk ?
					  b->bytes - off : chunk, loc, 0, s[k]));
	for (int i = 0; i < NS; i++)
		VSG_CK(cuStreamSynchronize(s[i]));
	t0 = vsg_now_ns() - t0;
	for (int i = 0; i < NS; i++)
		VSG_CK(cuStreamDestroy(s[i]));
	return (double)b->bytes / (double)t0;
}

static int baseline(struct buf *b)
{
	VSG_CK(cuMemAllocManaged(&b->d, b->bytes, CU_MEM_ATTACH_GLOBAL));
	fill(b);
	touch_ms(b, NULL);
	double resident = touch_ms(b, NULL);
	double d2h = prefetch_gbs(b, 1);
	double fault_ms = touch_ms(b, NULL);
	prefetch_gbs(b, 1);
	double h2d = prefetch_gbs(b, 0);
	double d2h_chunked = prefetch_gbs_chunked(b, 1);
	double h2d_chunked = prefetch_gbs_chunked(b, 0);
	int bad = verify(b);

	/* The swap-out of a program's first release moves pages that never
	 * had host memory behind them: the kernel allocates and zeroes it as
	 * they arrive, which the prefetches above (host memory already there
	 * from the first) do not pay. The same chunked prefetch on a fresh
	 * buffer, filled and made resident as "first" does, is its plain
	 * equivalent. */
	VSG_CK(cuMemFree(b->d));
	VSG_CK(cuMemAllocManaged(&b->d, b->bytes, CU_MEM_ATTACH_GLOBAL));
	b->touches = 0;
	fill(b);
	touch_ms(b, NULL);
	touch_ms(b, NULL);
	double d2h_cold = prefetch_gbs_chunked(b, 1);
	bad += verify(b);

	printf("{\"prog\": \"swap\", \"role\": \"baseline\", \"bytes\": %zu, "
	       "\"resident_touch_ms\": %.3f, \"prefetch_d2h_gbs\": %.2f, "
	       "\"fault_touch_ms\": %.3f, \"fault_gbs\": %.2f, "
	       "\"prefetch_h2d_gbs\": %.2f, \"prefetch_d2h_chunked_gbs\": %.2f, "
	       "\"prefetch_h2d_chunked_gbs\": %.2f, "
	       "\"prefetch_d2h_chunked_cold_gbs\": %.2f, \"bad\": %d}\n", b->bytes,
	       resident, d2h, fault_ms, (double)b->bytes / (fault_ms * 1e6), h2d,
	       d2h_chunked, h2d_chunked, d2h_cold, bad);
	return bad;
}

static int shared_role(struct buf *b, int first, int argc, char **argv)
{
	const char *ready = vsg_arg(argc, argv, "--ready", "ready");
	const char *go = vsg_arg(argc, argv, "--go", "go");
	const char *exit_f = vsg_arg(argc, argv, "--exit", "exit");
	uint64_t wait_ns = 0, handoff_ns;

	VSG_CK(cuMemAlloc(&b->d, b->bytes));
	int managed = vsg_is_managed(b->d);
	uint64_t t0 = vsg_now_ns();
	/* The first submission takes the GPU: for "second", from "first",
	 * which swaps out before it lets go. Timed alone (an empty kernel),
	 * then the fill. */
	handoff_ns = vsg_now_ns();
	VSG_CK(cuLaunchKernel(k_empty, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL));
	handoff_ns = vsg_now_ns() - handoff_ns;
	fill(b);
	uint64_t t_fill = vsg_now_ns() - t0;
	touch_ms(b, NULL);
	double resident = touch_ms(b, NULL);
	vsg_touch_file(ready);
	if (!first) {
		vsg_wait_file(exit_f, 120000);
		int bad = verify(b);
		printf("{\"prog\": \"swap\", \"role\": \"second\", \"managed\": %d, "
		       "\"fill_ms\": %.3f, \"handoff_ms\": %.3f, "
		       "\"resident_touch_ms\": %.3f, \"bad\": %d}\n",
		       managed, t_fill / 1e6, handoff_ns / 1e6, resident, bad);
		return bad;
	}
	if (vsg_wait_file(go, 120000) != 0) {
		fprintf(stderr, "swap: no go signal\n");
		return 1;
	}
	uint64_t t_call = vsg_now_ns();
	double after = touch_ms(b, &wait_ns);
	uint64_t t_done = vsg_now_ns();
	double again = touch_ms(b, NULL);
	int bad = verify(b);
	printf("{\"prog\": \"swap\", \"role\": \"first\", \"managed\": %d, "
	       "\"bytes\": %zu, \"resident_touch_ms\": %.3f, \"wait_ms\": %.3f, "
	       "\"touch_after_grant_ms\": %.3f, \"touch_again_ms\": %.3f, "
	       "\"call_to_done_ms\": %.3f, \"bad\": %d}\n", managed, b->bytes,
	       resident, wait_ns / 1e6, after, again, (t_done - t_call) / 1e6, bad);
	return bad;
}

int main(int argc, char **argv)
{
	const char *role = vsg_arg(argc, argv, "--role", "baseline");
	struct buf b;
	int bad;

	memset(&b, 0, sizeof(b));
	b.bytes = vsg_arg_u64(argc, argv, "--bytes", 1ull << 30) & ~4095ull;
	b.words = b.bytes / 4;
	vsg_ctx_open();
	CUmodule mod = vsg_module_load();
	k_touch = vsg_function(mod, "vsg_touch");
	k_empty = vsg_function(mod, "vsg_empty");
	VSG_CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuEventCreate(&e0, CU_EVENT_DEFAULT));
	VSG_CK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
	if (strcmp(role, "baseline") == 0)
		bad = baseline(&b);
	else
		bad = shared_role(&b, strcmp(role, "first") == 0, argc, argv);
	VSG_CK(cuMemFree(b.d));
	vsg_ctx_close();
	return bad ? 1 : 0;
}
