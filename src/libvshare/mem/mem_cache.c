/*
 * The cache of converted stream-ordered memory. cuMemFreeAsync cannot
 * give managed memory to the driver's pool, and freeing it (cuMemFree)
 * waits for the GPU, while a fresh cuMemAllocManaged block faults its
 * pages onto the GPU again: an allocate / compute / free loop paid both
 * on every pass. So a stream-ordered free keeps the block here, still
 * managed and still counted (it holds real memory), with an event
 * recorded on the stream at the point of the free, and a later
 * stream-ordered allocation of the same size class and pool takes it:
 *
 * - on the same stream (and context) at once: everything the stream ran
 *   before the free comes before what it runs after the allocation, as in
 *   the driver's own pools. A wait on the free's event is queued on the
 *   stream anyway (no host wait): a handle is not always one stream (the
 *   per-thread default stream of each thread is CU_STREAM_PER_THREAD, a
 *   destroyed stream's handle can come back).
 * - on another stream only once the event has completed, so the new
 *   owner cannot race work the old stream still has queued.
 *
 * Trimming frees blocks oldest first: past the cap (mem_cache_put), when
 * an allocation would pass the limit (mem_alloc.c), at cuMemPoolTrimTo,
 * and at the release of the GPU lock, a synchronization point where each
 * pool keeps its release threshold, as the driver's pools do.
 *
 * Every driver call here is the shim's own and runs through the one path
 * (cu_query.h: relaxed, cancellation off; trims only while no capture is
 * active); a context's blocks and events go with it (mem_state.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atomics.h"
#include "client.h"
#include "cu_query.h"
#include "log.h"
#include "mem_cache.h"
#include "mem_reg.h"

struct cblock {
	CUdeviceptr ptr;
	uint64_t size;
	uint64_t tag;
	CUstream stream;        /* of the free */
	const void *ctx;        /* current at the free: the event's context */
	const void *owner;      /* the registry's owner */
	CUevent ev;
	int dev;
	struct cblock *bprev, *bnext;   /* its bucket, newest first */
	struct cblock *older, *newer;   /* every block, by age */
};

#define CACHE_BUCKETS 256
/* Blocks of other streams whose event one take may query: bounds the
 * time spent under the lock when many frees are still pending. */
#define CACHE_SCAN_MAX 16
/* Idle events kept for later frees (creating one costs a driver call). */
#define CACHE_EVENTS_MAX 64
/* Pools of a device that one synchronization point looks at. */
#define CACHE_TAGS_MAX 16

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cblock *buckets[CACHE_BUCKETS];
static struct cblock *oldest, *newest;
static uint64_t dev_bytes[MREG_MAX_DEVS];
static uint64_t total_bytes, total_blocks;      /* read without the lock */
static struct mem_cache_stats stats;
/* Apart from stats: counted outside cache_lock. */
static uint64_t misses;
static struct {
	CUevent ev;
	const void *ctx;
} idle_ev[CACHE_EVENTS_MAX];
static int n_idle_ev;

uint64_t mem_cache_class(uint64_t size)
{
	uint64_t g = 512;

	if (size > 4096) {
		g = 1ull << (63 - __builtin_clzll(size) - 3);
		if (g > (2ull << 20))
			g = 2ull << 20;
	}
	if (size > UINT64_MAX - g)
		return 0;
	return (size + g - 1) / g * g;
}

static size_t bucket_of(int dev, uint64_t size)
{
	uint64_t h = (size ^ ((uint64_t)dev << 56)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 40) % CACHE_BUCKETS;
}

static int dev_ok(int dev)
{
	return dev >= 0 && dev < MREG_MAX_DEVS;
}

/* Lock held. */
static void link_locked(struct cblock *b)
{
	struct cblock **head = &buckets[bucket_of(b->dev, b->size)];

	b->bprev = NULL;
	b->bnext = *head;
	if (*head != NULL)
		(*head)->bprev = b;
	*head = b;
	b->older = newest;
	b->newer = NULL;
	if (newest != NULL)
		newest->newer = b;
	else
		oldest = b;
	newest = b;
	dev_bytes[b->dev] += b->size;
	A_STORE(&total_bytes, total_bytes + b->size);
	A_STORE(&total_blocks, total_blocks + 1);
}

/* Lock held. */
static void unlink_locked(struct cblock *b)
{
	if (b->bprev != NULL)
		b->bprev->bnext = b->bnext;
	else
		buckets[bucket_of(b->dev, b->size)] = b->bnext;
	if (b->bnext != NULL)
		b->bnext->bprev = b->bprev;
	if (b->older != NULL)
		b->older->newer = b->newer;
	else
		oldest = b->newer;
	if (b->newer != NULL)
		b->newer->older = b->older;
	else
		newest = b->older;
	dev_bytes[b->dev] -= b->size;
	A_STORE(&total_bytes, total_bytes - b->size);
	A_STORE(&total_blocks, total_blocks - 1);
}

/* Whether the GPU has passed the free (cuq_query_passed). */
static int passed(CUevent ev)
{
	return cuq_query_passed(CUQ(cuEventQuery, (ev)));
}

/* An event of context ctx: an idle one, or a new one (NULL if none). */
static CUevent event_get(const void *ctx)
{
	CUevent ev = NULL;

	pthread_mutex_lock(&cache_lock);
	for (int i = n_idle_ev - 1; i >= 0; i--) {
		if (idle_ev[i].ctx != ctx)
			continue;
		ev = idle_ev[i].ev;
		idle_ev[i] = idle_ev[--n_idle_ev];
		break;
	}
	pthread_mutex_unlock(&cache_lock);
	if (ev == NULL &&
	    CUQ(cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
		ev = NULL;
	return ev;
}

static void event_put(CUevent ev, const void *ctx)
{
	pthread_mutex_lock(&cache_lock);
	if (n_idle_ev < CACHE_EVENTS_MAX) {
		idle_ev[n_idle_ev].ev = ev;
		idle_ev[n_idle_ev++].ctx = ctx;
		ev = NULL;
	}
	pthread_mutex_unlock(&cache_lock);
	if (ev != NULL)
		(void)CUQ(cuEventDestroy_v2, (ev));
}

static int same_key(const struct cblock *b, int dev, uint64_t size,
		    uint64_t tag)
{
	return b->dev == dev && b->size == size && b->tag == tag;
}

/* Lock held. The block for a take: same stream and context first, else
 * another stream's whose free has passed. *same says which. Only blocks
 * that ctx owns: the driver frees a block with the context it was
 * allocated in, whoever uses it then. */
static struct cblock *find_locked(int dev, uint64_t size, uint64_t tag,
				  CUstream stream, const void *ctx, int *same)
{
	struct cblock *b, *found = NULL, *head = buckets[bucket_of(dev, size)];
	int scanned = 0;

	for (b = head; b != NULL; b = b->bnext)
		if (same_key(b, dev, size, tag) && b->owner == ctx &&
		    b->stream == stream && b->ctx == ctx) {
			*same = 1;
			return b;
		}
	*same = 0;
	for (b = head; b != NULL && scanned < CACHE_SCAN_MAX; b = b->bnext) {
		if (!same_key(b, dev, size, tag) || b->owner != ctx)
			continue;
		/* One scope for the queries (passed); a take on the block's
		 * own stream makes none. */
		if (scanned++ == 0)
			cuq_rules_in();
		if (passed(b->ev)) {
			found = b;
			break;
		}
	}
	if (scanned > 0)
		cuq_rules_out();
	return found;
}

int mem_cache_take(CUdeviceptr *dptr, uint64_t csize, int dev, uint64_t tag,
		   CUstream stream)
{
	const void *ctx;
	struct cblock *b;
	int same = 0;

	if (A_LOAD_RLX(&total_blocks) == 0 || !dev_ok(dev)) {
		__atomic_add_fetch(&misses, 1, __ATOMIC_RELAXED);
		return -1;
	}
	ctx = cuq_current_context();
	pthread_mutex_lock(&cache_lock);
	b = find_locked(dev, csize, tag, stream, ctx, &same);
	if (b != NULL) {
		unlink_locked(b);
		if (same)
			stats.hits_same++;
		else
			stats.hits_other++;
	} else {
		__atomic_add_fetch(&misses, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&cache_lock);
	if (b == NULL)
		return -1;
	/* The stream waits for the free in the GPU's order, not the host;
	 * without a queued wait, the host waits instead. */
	if (same && CUQ(cuStreamWaitEvent, (stream, b->ev, 0)) != CUDA_SUCCESS)
		(void)CUQ(cuEventSynchronize, (b->ev));
	event_put(b->ev, b->ctx);
	*dptr = b->ptr;
	free(b);
	return 0;
}

int mem_cache_put(CUdeviceptr dptr, const struct mreg_entry *e,
		  CUstream stream, uint64_t cap)
{
	struct cblock *b;
	uint64_t need;
	int kept = 0;

	if (cap == 0 || e->tag == 0 || !dev_ok(e->dev) || e->size > cap)
		goto refused;
	pthread_mutex_lock(&cache_lock);
	need = dev_bytes[e->dev] + e->size > cap ?
		dev_bytes[e->dev] + e->size - cap : 0;
	pthread_mutex_unlock(&cache_lock);
	if (need > 0 && mem_cache_trim(e->dev, 0, need, 0) < need)
		goto refused;
	b = calloc(1, sizeof(*b));
	if (b == NULL)
		goto refused;
	b->ctx = cuq_current_context();
	b->ev = event_get(b->ctx);
	if (b->ev == NULL || CUQ(cuEventRecord, (b->ev, stream)) != CUDA_SUCCESS) {
		if (b->ev != NULL)
			event_put(b->ev, b->ctx);
		free(b);
		goto refused;
	}
	b->ptr = dptr;
	b->size = e->size;
	b->tag = e->tag;
	b->stream = stream;
	b->owner = e->owner;
	b->dev = e->dev;
	pthread_mutex_lock(&cache_lock);
	/* Another thread may have filled the room meanwhile. */
	if (dev_bytes[e->dev] + e->size <= cap) {
		link_locked(b);
		stats.puts++;
		kept = 1;
	}
	pthread_mutex_unlock(&cache_lock);
	if (kept)
		return 0;
	/* The event stays recorded: a put that lost the race gives the
	 * block to the caller, which frees it in the stream's order. */
	event_put(b->ev, b->ctx);
	free(b);
refused:
	pthread_mutex_lock(&cache_lock);
	stats.refused++;
	pthread_mutex_unlock(&cache_lock);
	return -1;
}

static int tag_match(const struct cblock *b, uint64_t tag, uint64_t tag2)
{
	return tag == 0 || b->tag == tag || (tag2 != 0 && b->tag == tag2);
}

/* Free a list of blocks taken out of the cache (linked by newer); their
 * events go back to the idle ones, or with keep_ev 0 are destroyed. */
static void free_blocks(struct cblock *list, int wait, int keep_ev)
{
	struct cblock *b, *next;
	struct mreg_entry e;

	for (b = list; b != NULL; b = next) {
		next = b->newer;
		if (wait)
			(void)CUQ(cuEventSynchronize, (b->ev));
		if (keep_ev)
			event_put(b->ev, b->ctx);
		else
			(void)CUQ(cuEventDestroy_v2, (b->ev));
		/* Gone from the registry: its context was destroyed, and the
		 * driver freed it with the context. */
		if (mreg_remove(MREG_PTR, b->ptr, &e) == 0) {
			if (CUQ(cuMemFree_v2, (b->ptr)) != CUDA_SUCCESS)
				log_once(LOG_LVL_WARN, "freeing cached "
					 "stream-ordered memory failed");
			client_footprint_changed(e.dev);
		}
		free(b);
	}
}

static uint64_t trim2(int dev, uint64_t tag, uint64_t tag2, uint64_t want,
		      int wait)
{
	struct cblock *b, *next, *list = NULL, **tail = &list;
	struct cuq_scope sc;
	uint64_t got = 0;

	/* Blocks stay cached until no capture is active (CUQ_FREES). */
	if (want == 0 || A_LOAD_RLX(&total_blocks) == 0 ||
	    cuq_enter(&sc, CUQ_FREES, NULL) != 0)
		return 0;
	pthread_mutex_lock(&cache_lock);
	for (b = oldest; b != NULL && got < want; b = next) {
		next = b->newer;
		if ((dev >= 0 && b->dev != dev) || !tag_match(b, tag, tag2))
			continue;
		if (!wait && !passed(b->ev))
			continue;
		unlink_locked(b);
		stats.trimmed++;
		got += b->size;
		b->newer = NULL;
		*tail = b;
		tail = &b->newer;
	}
	pthread_mutex_unlock(&cache_lock);
	free_blocks(list, wait, 1);
	cuq_leave(&sc);
	return got;
}

uint64_t mem_cache_trim(int dev, uint64_t tag, uint64_t want, int wait)
{
	return trim2(dev, tag, 0, want, wait);
}

/* Bytes cached on dev (-1: any) of tag or tag2 (tag 0: any). */
static uint64_t bytes_of(int dev, uint64_t tag, uint64_t tag2)
{
	uint64_t n = 0;

	pthread_mutex_lock(&cache_lock);
	for (struct cblock *b = oldest; b != NULL; b = b->newer)
		if ((dev < 0 || b->dev == dev) && tag_match(b, tag, tag2))
			n += b->size;
	pthread_mutex_unlock(&cache_lock);
	return n;
}

/* The pool a tag stands for on dev (NULL if unknown). */
static CUmemoryPool pool_of(int dev, uint64_t tag)
{
	CUmemoryPool p = NULL;

	if (tag != MREG_TAG_CURRENT_POOL)
		return (CUmemoryPool)(uintptr_t)tag;
	if (CUQ(cuDeviceGetMemPool, (&p, dev)) != CUDA_SUCCESS)
		return NULL;
	return p;
}

/* The pool's release threshold; 0 (the driver's default) if unknown. A
 * pool attribute is a potentially unsafe call beside a capture
 * (capture_rule.txt: pool_attr): through the one path. */
static uint64_t threshold_of(CUmemoryPool pool)
{
	cuuint64_t v = 0;

	if (pool == NULL ||
	    CUQ(cuMemPoolGetAttribute,
		(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &v)) != CUDA_SUCCESS)
		return 0;
	return v;
}

void mem_cache_sync_point(int dev)
{
	uint64_t tags[CACHE_TAGS_MAX], bytes[CACHE_TAGS_MAX];
	int n = 0;

	if (A_LOAD_RLX(&total_blocks) == 0 || !dev_ok(dev))
		return;
	pthread_mutex_lock(&cache_lock);
	for (struct cblock *b = oldest; b != NULL; b = b->newer) {
		int i;

		if (b->dev != dev)
			continue;
		for (i = 0; i < n && tags[i] != b->tag; i++)
			;
		if (i == n && n < CACHE_TAGS_MAX) {
			tags[n] = b->tag;
			bytes[n++] = 0;
		}
		if (i < n)
			bytes[i] += b->size;
	}
	pthread_mutex_unlock(&cache_lock);
	for (int i = 0; i < n; i++) {
		uint64_t thr = threshold_of(pool_of(dev, tags[i]));

		if (bytes[i] > thr)
			trim2(dev, tags[i], 0, bytes[i] - thr, 0);
	}
}

/* Whether blocks of the device's current pool (cuMemAllocAsync) belong
 * to pool: it is the device's current or default pool. */
static int is_current_pool(int dev, CUmemoryPool pool)
{
	CUmemoryPool p = NULL;

	if (pool_of(dev, MREG_TAG_CURRENT_POOL) == pool)
		return 1;
	return CUQ(cuDeviceGetDefaultMemPool, (&p, dev)) == CUDA_SUCCESS &&
	       p == pool;
}

void mem_cache_pool_trim(CUmemoryPool pool, uint64_t keep)
{
	uint64_t tag = (uint64_t)(uintptr_t)pool;

	if (pool == NULL || A_LOAD_RLX(&total_blocks) == 0)
		return;
	for (int dev = 0; dev < MREG_MAX_DEVS; dev++) {
		uint64_t tag2, have;

		if (mem_cache_bytes(dev) == 0)
			continue;
		tag2 = is_current_pool(dev, pool) ? MREG_TAG_CURRENT_POOL : 0;
		have = bytes_of(dev, tag, tag2);
		if (have > keep)
			trim2(dev, tag, tag2, have - keep, 0);
	}
}

uint64_t mem_cache_bytes(int dev)
{
	uint64_t n;

	if (dev < 0)
		return A_LOAD_RLX(&total_bytes);
	if (!dev_ok(dev))
		return 0;
	pthread_mutex_lock(&cache_lock);
	n = dev_bytes[dev];
	pthread_mutex_unlock(&cache_lock);
	return n;
}

void mem_cache_stats(struct mem_cache_stats *out)
{
	pthread_mutex_lock(&cache_lock);
	*out = stats;
	out->misses = __atomic_load_n(&misses, __ATOMIC_RELAXED);
	out->bytes = total_bytes;
	out->blocks = total_blocks;
	pthread_mutex_unlock(&cache_lock);
}

void mem_cache_drop_ctx(const void *ctx, int dev)
{
	CUevent evs[CACHE_EVENTS_MAX];
	struct cblock *b, *next, *list = NULL, **tail = &list;
	int n = 0;

	if (ctx == NULL && !dev_ok(dev))
		return;
	pthread_mutex_lock(&cache_lock);
	for (b = oldest; b != NULL; b = next) {
		next = b->newer;
		if (ctx != NULL ? b->owner != ctx && b->ctx != ctx
				: b->dev != dev)
			continue;
		unlink_locked(b);
		stats.trimmed++;
		b->newer = NULL;
		*tail = b;
		tail = &b->newer;
	}
	/* Without a context, the device's contexts are unknown here: every
	 * idle event goes (a few driver calls). */
	for (int i = n_idle_ev - 1; i >= 0; i--)
		if (ctx == NULL || idle_ev[i].ctx == ctx) {
			evs[n++] = idle_ev[i].ev;
			idle_ev[i] = idle_ev[--n_idle_ev];
		}
	pthread_mutex_unlock(&cache_lock);
	free_blocks(list, 1, 0);
	for (int i = 0; i < n; i++)
		(void)CUQ(cuEventDestroy_v2, (evs[i]));
}

void mem_cache_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	/* The blocks and events belong to the parent's CUDA state, which
	 * the child cannot use: forget them without freeing anything. */
	memcpy(&cache_lock, &fresh, sizeof(fresh));
	memset(buckets, 0, sizeof(buckets));
	oldest = newest = NULL;
	memset(dev_bytes, 0, sizeof(dev_bytes));
	total_bytes = total_blocks = 0;
	memset(&stats, 0, sizeof(stats));
	misses = 0;
	n_idle_ev = 0;
}
