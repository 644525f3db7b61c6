/*
 * Copies between pageable host memory and converted memory, staged
 * through pinned buffers. Beside another process's kernels, every copy
 * that touches managed memory waits for this context's turn on the GPU
 * (about 1.7 ms on the H100), where a copy between pinned and device
 * memory runs on a copy engine at once; the driver's own path from
 * pageable memory into managed memory waits for a turn per internal
 * chunk (19 ms for 16 MiB, gpu/copy_probe.c, docs/benchmarks.md). So
 * such a copy is done as the driver does it for device memory, waiting
 * once: chunks of the source are copied by the CPU (with the helper
 * threads of util/pcopy.c) into pinned buffers, and each buffer is copied
 * asynchronously to the destination on the caller's stream, with an event
 * recorded after it; a ring holds STAGE_NBUF chunks, so a copy that fits
 * never waits for a buffer, and a longer one reuses a buffer once its
 * event has completed.
 *
 * Semantics stay CUDA's: an asynchronous host-to-device copy returns once
 * the whole source has been read (the caller may overwrite it at once),
 * with the DMA still queued in stream order; a synchronous one returns
 * when the copy is done; a device-to-host copy into pageable memory
 * returns when the data is in place, as the driver's does. Nothing is
 * staged inside a capture (the graph would keep the shim's buffer), below
 * STAGE_MIN, for memory the registry does not count as managed, for a
 * source or destination the driver knows (pinned, registered, device),
 * for a stream of another context, or when no buffers can be had: those
 * copies go to the driver unchanged.
 *
 * Buffers come in rings of up to STAGE_NBUF, per context, allocated as
 * copies need them; a thread takes a ring for the length of one copy, so
 * threads never wait for each other here (one that finds every ring of
 * its context taken passes through).
 *
 * A staged copy runs in one scope of the one path (cu_query.h): a capture
 * that another thread begins meanwhile allows its waits and pinned
 * allocations (relaxed), and a thread cancelled in a wait cannot keep
 * its ring for good (cancellation off). A context's rings go with it
 * (mem_state.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atomics.h"
#include "cu_query.h"
#include "gate.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_reg.h"
#include "mem_stage.h"
#include "pcopy.h"

/* Rings a context may have (threads copying at once), and in all. */
#define STAGE_RINGS_CTX 4
#define STAGE_RINGS_MAX 32

struct stage_buf {
	void *host;
	CUevent ev;
	int pending;            /* ev recorded after this buffer's copy */
};

struct stage_ring {
	const void *ctx;
	CUstream stream;        /* of its last copy: its buffers' events */
	pthread_t thread;       /* that copied: CU_STREAM_PER_THREAD is its own */
	int dev;
	int busy;               /* a thread is copying through it */
	int dead;               /* its context went meanwhile: the owner frees it */
	int nbuf;               /* buffers allocated */
	struct stage_buf b[STAGE_NBUF];
};

static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stage_ring *rings[STAGE_RINGS_MAX];
static int n_rings;
static struct mem_stage_stats stats;

enum ptr_kind { PTR_OTHER, PTR_PAGEABLE, PTR_CONVERTED };

/* What a copy's side [p, p + n) is: pageable host memory (unknown to the
 * driver), managed memory the registry counts (the whole range inside one
 * allocation: the driver refuses a copy past its end, and writes
 * nothing), or anything else. One driver call. */
static enum ptr_kind ptr_kind(CUdeviceptr p, size_t n)
{
	CUpointer_attribute attrs[3] = { CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
					 CU_POINTER_ATTRIBUTE_IS_MANAGED,
					 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR };
	unsigned int type = 0, managed = 0;
	CUdeviceptr start = 0;
	void *data[3] = { &type, &managed, &start };
	struct mreg_entry e;

	if (p == 0 ||
	    CUQ_QUERY(cuPointerGetAttributes, (3, attrs, data, p)) != CUDA_SUCCESS)
		return PTR_OTHER;
	if (type == 0 && !managed)
		return PTR_PAGEABLE;
	if (managed && start != 0 && mreg_lookup(MREG_PTR, start, &e) == 0 &&
	    e.kind == MREG_MANAGED && p - start <= e.size &&
	    n <= e.size - (p - start))
		return PTR_CONVERTED;
	return PTR_OTHER;
}

/* The context the copy runs in, if the shim may stage it there: the
 * current one, and the stream's (a special handle is the current
 * context's); none while a capture is active. */
static const void *stage_ctx(size_t n, CUstream stream)
{
	const void *ctx;
	CUcontext c;

	if (!mem_conf.stage_copies || n < STAGE_MIN || gate_capturing())
		return NULL;
	ctx = cuq_current_context();
	if (ctx == NULL)
		return NULL;
	if (stream != NULL && stream != CU_STREAM_LEGACY &&
	    stream != CU_STREAM_PER_THREAD &&
	    (CUQ_QUERY(cuStreamGetCtx, (stream, &c)) != CUDA_SUCCESS ||
	     c != ctx))
		return NULL;
	/* A capture begun before the shim counted it. */
	if (cuq_stream_capturing(stream))
		return NULL;
	return ctx;
}

static void ring_free(struct stage_ring *r)
{
	for (int i = 0; i < r->nbuf; i++) {
		if (r->b[i].pending)
			(void)CUQ(cuEventSynchronize, (r->b[i].ev));
		(void)CUQ(cuEventDestroy_v2, (r->b[i].ev));
		(void)CUQ(cuMemFreeHost, (r->b[i].host));
	}
	free(r);
}

/* One more buffer for a ring that has fewer than STAGE_NBUF (pinning
 * memory takes the driver a while: never under stage_lock); 1 if it
 * grew. */
static int ring_grow(struct stage_ring *r)
{
	struct stage_buf *b = &r->b[r->nbuf];

	if (r->nbuf >= STAGE_NBUF ||
	    CUQ(cuMemHostAlloc, (&b->host, STAGE_CHUNK, 0)) != CUDA_SUCCESS)
		return 0;
	if (CUQ(cuEventCreate, (&b->ev, CU_EVENT_DISABLE_TIMING)) !=
	    CUDA_SUCCESS) {
		(void)CUQ(cuMemFreeHost, (b->host));
		return 0;
	}
	b->pending = 0;
	r->nbuf++;
	return 1;
}

/* Give a ring back; 1 if it was freed (its context went meanwhile). */
static int ring_give(struct stage_ring *r)
{
	int dead;

	pthread_mutex_lock(&stage_lock);
	r->busy = 0;
	dead = r->dead;
	pthread_mutex_unlock(&stage_lock);
	if (dead)
		ring_free(r);
	return dead;
}

/* Whether the ring's last copy was on the same stream as a copy on
 * stream by this thread: the per-thread default stream has one handle
 * and is another stream in each thread. */
static int same_stream(const struct stage_ring *r, CUstream stream)
{
	return r->stream == stream && (stream != CU_STREAM_PER_THREAD ||
				       pthread_equal(r->thread, pthread_self()));
}

/* Whether a copy on stream may use r without waiting for another
 * stream's work: its last copy was on stream, or every buffer's copy is
 * done. */
static int ring_settled(struct stage_ring *r, CUstream stream)
{
	if (same_stream(r, stream))
		return 1;
	for (int i = 0; i < r->nbuf; i++) {
		if (!r->b[i].pending)
			continue;
		if (CUQ(cuEventQuery, (r->b[i].ev)) != CUDA_SUCCESS)
			return 0;
		r->b[i].pending = 0;
	}
	return 1;
}

/* Lock held. A free ring of ctx that is not in tried: one whose last
 * copy was on stream first; else a new one while ctx may have more. */
static struct stage_ring *ring_pick(const void *ctx, int dev, CUstream stream,
				    struct stage_ring *const *tried, int ntried)
{
	struct stage_ring *r = NULL;
	int mine = 0;

	for (int i = 0; i < n_rings; i++) {
		struct stage_ring *c = rings[i];
		int skip = c->busy;

		if (c->ctx != ctx)
			continue;
		mine++;
		for (int j = 0; j < ntried && !skip; j++)
			skip = tried[j] == c;
		if (skip)
			continue;
		if (same_stream(c, stream))
			return c;
		if (r == NULL)
			r = c;
	}
	if (r == NULL && mine < STAGE_RINGS_CTX && n_rings < STAGE_RINGS_MAX &&
	    (r = calloc(1, sizeof(*r))) != NULL) {
		r->ctx = ctx;
		r->stream = stream;
		r->thread = pthread_self();
		r->dev = dev;
		rings[n_rings++] = r;
		A_STORE(&stats.rings, (uint64_t)n_rings);
	}
	return r;
}

/* A ring of ctx for a copy on stream, with at least one buffer; NULL if
 * none. A ring whose buffers another stream's copies still use is passed
 * over: waiting for them would make this copy wait for that stream's
 * work (and hang, should that stream wait for this thread). */
static struct stage_ring *ring_take(const void *ctx, CUstream stream)
{
	struct stage_ring *tried[STAGE_RINGS_CTX], *r;
	int ntried = 0, dev = cuq_current_device();

	for (;;) {
		pthread_mutex_lock(&stage_lock);
		r = ring_pick(ctx, dev, stream, tried, ntried);
		if (r != NULL)
			r->busy = 1;
		pthread_mutex_unlock(&stage_lock);
		if (r == NULL)
			return NULL;
		if (ring_settled(r, stream))
			break;
		/* A freed ring left the list: it cannot be picked again. */
		if (ring_give(r))
			continue;
		if (ntried == STAGE_RINGS_CTX)
			return NULL;
		tried[ntried++] = r;
	}
	r->stream = stream;
	r->thread = pthread_self();
	if (r->nbuf == 0 && !ring_grow(r)) {
		log_once(LOG_LVL_WARN, "no pinned staging buffers: copies "
			 "from pageable memory go to the driver unstaged");
		ring_give(r);
		return NULL;
	}
	return r;
}

/* Buffers for a copy of n bytes: as many chunks as it has, up to
 * STAGE_NBUF, or what could be had. */
static void ring_fit(struct stage_ring *r, size_t n)
{
	size_t chunks = (n + STAGE_CHUNK - 1) / STAGE_CHUNK;

	while ((size_t)r->nbuf < chunks && ring_grow(r))
		;
}

/* Wait until a buffer's last copy is done. */
static CUresult buf_wait(struct stage_buf *b)
{
	CUresult rc = CUDA_SUCCESS;

	if (b->pending)
		rc = CUQ(cuEventSynchronize, (b->ev));
	/* A buffer whose wait failed may still be read by its copy. */
	if (rc == CUDA_SUCCESS)
		b->pending = 0;
	return rc;
}

/* Mark a buffer in use until what stream has queued is done. */
static CUresult buf_mark(struct stage_buf *b, CUstream stream)
{
	if (CUQ(cuEventRecord, (b->ev, stream)) == CUDA_SUCCESS) {
		b->pending = 1;
		return CUDA_SUCCESS;
	}
	/* No event: the buffer is free once the stream is. */
	return CUQ(cuStreamSynchronize, (stream));
}

static CUresult htod(struct stage_ring *r, CUdeviceptr dst, const char *src,
		     size_t n, CUstream stream, int sync)
{
	CUresult rc = CUDA_SUCCESS;
	int i = 0, last = 0;

	for (size_t off = 0; off < n && rc == CUDA_SUCCESS;
	     off += STAGE_CHUNK, i = (i + 1) % r->nbuf) {
		size_t len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;
		struct stage_buf *b = &r->b[i];

		if ((rc = buf_wait(b)) != CUDA_SUCCESS)
			break;
		pcopy(b->host, src + off, len);
		rc = CUQ(cuMemcpyHtoDAsync_v2, (dst + off, b->host, len, stream));
		if (rc == CUDA_SUCCESS)
			rc = buf_mark(b, stream);
		last = i;
	}
	if (rc == CUDA_SUCCESS && sync)
		rc = buf_wait(&r->b[last]);
	return rc;
}

/* Always synchronous: the data must be in the caller's memory on return,
 * as with the driver's own copy into pageable memory. Up to nbuf chunks
 * are queued ahead of the one the CPU copies out. */
static CUresult dtoh(struct stage_ring *r, char *dst, CUdeviceptr src,
		     size_t n, CUstream stream)
{
	size_t chunks = (n + STAGE_CHUNK - 1) / STAGE_CHUNK;
	size_t issued = 0, done = 0;
	CUresult rc = CUDA_SUCCESS;

	while (done < chunks && rc == CUDA_SUCCESS) {
		for (; issued < chunks && issued - done < (size_t)r->nbuf &&
		       rc == CUDA_SUCCESS; issued++) {
			struct stage_buf *b = &r->b[issued % r->nbuf];
			size_t off = issued * STAGE_CHUNK;
			size_t len = n - off < STAGE_CHUNK ? n - off
							   : STAGE_CHUNK;

			if ((rc = buf_wait(b)) != CUDA_SUCCESS)
				break;
			rc = CUQ(cuMemcpyDtoHAsync_v2,
				 (b->host, src + off, len, stream));
			if (rc == CUDA_SUCCESS)
				rc = buf_mark(b, stream);
		}
		if (rc != CUDA_SUCCESS)
			break;
		struct stage_buf *b = &r->b[done % r->nbuf];
		size_t off = done * STAGE_CHUNK;
		size_t len = n - off < STAGE_CHUNK ? n - off : STAGE_CHUNK;

		if ((rc = buf_wait(b)) != CUDA_SUCCESS)
			break;
		pcopy(dst + off, b->host, len);
		done++;
	}
	return rc;
}

static CUresult staged(const void *ctx, int to_dev, CUdeviceptr dptr,
		       void *host, size_t n, CUstream stream, int sync)
{
	struct stage_ring *r;
	struct cuq_scope sc;
	CUresult rc = MEM_PASS;

	if (REAL(cuMemcpyHtoDAsync_v2) == NULL ||
	    REAL(cuMemcpyDtoHAsync_v2) == NULL ||
	    cuq_enter(&sc, 0, NULL) != 0)
		return MEM_PASS;
	/* A synchronous copy from pageable memory reads its source once the
	 * stream's earlier work is done (a host function or a kernel may
	 * still write it): the driver synchronizes the stream first. */
	if (to_dev && sync && CUQ(cuStreamSynchronize, (stream)) != CUDA_SUCCESS) {
		cuq_leave(&sc);
		return MEM_PASS;
	}
	r = ring_take(ctx, stream);
	if (r != NULL) {
		ring_fit(r, n);
		rc = to_dev ? htod(r, dptr, host, n, stream, sync)
			    : dtoh(r, host, dptr, n, stream);
		ring_give(r);
	}
	cuq_leave(&sc);
	if (r == NULL)
		return MEM_PASS;
	__atomic_add_fetch(to_dev ? &stats.htod : &stats.dtoh, 1,
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&stats.bytes, n, __ATOMIC_RELAXED);
	return rc;
}

CUresult mem_copy_htod(CUdeviceptr dst, const void *src, size_t n,
		       CUstream stream, int sync)
{
	const void *ctx = stage_ctx(n, stream);

	if (ctx == NULL || src == NULL || ptr_kind(dst, n) != PTR_CONVERTED ||
	    ptr_kind((CUdeviceptr)(uintptr_t)src, n) != PTR_PAGEABLE)
		return MEM_PASS;
	return staged(ctx, 1, dst, (void *)(uintptr_t)src, n, stream, sync);
}

CUresult mem_copy_dtoh(void *dst, CUdeviceptr src, size_t n,
		       CUstream stream, int sync)
{
	const void *ctx = stage_ctx(n, stream);

	if (ctx == NULL || dst == NULL || ptr_kind(src, n) != PTR_CONVERTED ||
	    ptr_kind((CUdeviceptr)(uintptr_t)dst, n) != PTR_PAGEABLE)
		return MEM_PASS;
	return staged(ctx, 0, src, dst, n, stream, sync);
}

CUresult mem_copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n,
		      CUstream stream, int sync)
{
	const void *ctx = stage_ctx(n, stream);
	enum ptr_kind d;

	if (ctx == NULL)
		return MEM_PASS;
	d = ptr_kind(dst, n);
	if (d == PTR_CONVERTED && ptr_kind(src, n) == PTR_PAGEABLE)
		return staged(ctx, 1, dst, (void *)(uintptr_t)src, n, stream,
			      sync);
	if (d == PTR_PAGEABLE && ptr_kind(src, n) == PTR_CONVERTED)
		return staged(ctx, 0, src, (void *)(uintptr_t)dst, n, stream,
			      sync);
	return MEM_PASS;
}

void mem_stage_stats(struct mem_stage_stats *out)
{
	out->htod = A_LOAD(&stats.htod);
	out->dtoh = A_LOAD(&stats.dtoh);
	out->bytes = A_LOAD(&stats.bytes);
	out->rings = A_LOAD(&stats.rings);
}

void mem_stage_drop_ctx(const void *ctx, int dev)
{
	struct stage_ring *gone[STAGE_RINGS_MAX];
	int n = 0, kept = 0;

	pthread_mutex_lock(&stage_lock);
	for (int i = 0; i < n_rings; i++) {
		struct stage_ring *r = rings[i];

		if (ctx != NULL ? r->ctx != ctx : r->dev != dev) {
			rings[kept++] = r;
			continue;
		}
		/* A ring in use is freed by the thread that has it. */
		if (r->busy)
			r->dead = 1;
		else
			gone[n++] = r;
	}
	n_rings = kept;
	A_STORE(&stats.rings, (uint64_t)n_rings);
	pthread_mutex_unlock(&stage_lock);
	for (int i = 0; i < n; i++)
		ring_free(gone[i]);
}

void mem_stage_atfork_child(void)
{
	/* The parent's pinned buffers are not the child's to use or free;
	 * the rings' memory is left as it is. */
	pthread_mutex_init(&stage_lock, NULL);
	n_rings = 0;
	A_STORE(&stats.rings, 0);
}
