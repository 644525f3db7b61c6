#include <stdint.h>

#include "client.h"
#include "cu_query.h"
#include "gate.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_cache.h"
#include "mem_reg.h"
#include "pcopy.h"
#include "shim_env.h"
#include "shim_node.h"

struct mem_conf mem_conf = { .convert = 1, .async_cache = MEM_CACHE_AUTO,
			      .stage_copies = 1,
			      .swap_streams = MEM_SWAP_STREAMS };

/* The scheduler's limit for this process's user (VS_MSG_POLICY), set on
 * the client thread and read by allocating threads; 0: none. */
static uint64_t mem_policy_limit;

/* The stricter of two limits, where 0 is none. */
static uint64_t lower(uint64_t a, uint64_t b)
{
	if (a == 0)
		return b;
	return b != 0 && b < a ? b : a;
}

void mem_set_policy_limit(uint64_t limit)
{
	__atomic_store_n(&mem_policy_limit, limit, __ATOMIC_RELAXED);
}

uint64_t mem_limit_now(void)
{
	/* The scheduler's limit binds the first allocation too. */
	client_policy_wait();
	return lower(mem_conf.mem_limit,
		     __atomic_load_n(&mem_policy_limit, __ATOMIC_RELAXED));
}

/* VSHARE_CONVERT=0 leaves device memory to the driver, where much of it
 * (cuMemAllocAsync, pools) is not counted: while an admin's limit (the
 * node's or the scheduler's policy) is in force it is ignored, once for
 * good. */
static int convert_now(void)
{
	if (__atomic_load_n(&mem_conf.convert, __ATOMIC_RELAXED))
		return 1;
	if (mem_limit_now() == 0 ||
	    (shim_node.mem_limit == 0 &&
	     __atomic_load_n(&mem_policy_limit, __ATOMIC_RELAXED) == 0))
		return 0;
	log_once(LOG_LVL_WARN, "VSHARE_CONVERT=0 is ignored: an admin's "
		 "memory limit is in force");
	__atomic_store_n(&mem_conf.convert, 1, __ATOMIC_RELAXED);
	return 1;
}

void mem_conf_read(void)
{
	uint64_t env_limit = shim_set_u64(SET_MEM_LIMIT);
	struct shim_set_val cache = shim_setting(SET_ASYNC_CACHE);
	struct shim_set_val copy_threads = shim_setting(SET_COPY_THREADS);

	mem_conf.convert = (int)shim_set_u64(SET_CONVERT);
	mem_conf.allow_single_oversub =
		(int)shim_set_u64(SET_ALLOW_SINGLE_OVERSUB);
	/* The environment may lower the node's limit, never raise it. */
	mem_conf.mem_limit = lower(env_limit, shim_node.mem_limit);
	if (shim_node.mem_limit != 0 && env_limit > shim_node.mem_limit)
		log_warn("VSHARE_MEM_LIMIT is above the node's limit of %llu "
			 "bytes (%s): the node's applies",
			 (unsigned long long)shim_node.mem_limit,
			 VSHARE_CLIENT_CONF);
	mem_conf.capacity = shim_set_u64(SET_CAPACITY);
	mem_conf.async_cache = cache.given ? cache.u : MEM_CACHE_AUTO;
	mem_conf.stage_copies = (int)shim_set_u64(SET_STAGE_COPIES);
	/* Unset: by the usable CPUs (pcopy.h). */
	pcopy_setup(copy_threads.given ? (int)copy_threads.u : -1);
	/* The table's range and default are the streams this layer has. */
	_Static_assert(SHIM_SWAP_STREAMS_MAX == MEM_SWAP_STREAMS_MAX &&
		       SHIM_SWAP_STREAMS == MEM_SWAP_STREAMS,
		       "VSHARE_SWAP_STREAMS's row in shim_settings.def");
	mem_conf.swap_streams = (int)shim_set_u64(SET_SWAP_STREAMS);
}

/* The driver aligns pitched rows for texture access; 512 bytes satisfies
 * every GPU's texture pitch alignment. */
#define MEM_PITCH_ALIGN 512

/* The most this process may have on dev: the lowest of VSHARE_MEM_LIMIT,
 * the node's and the scheduler's limits, and the physical memory unless
 * VSHARE_ALLOW_SINGLE_OVERSUB (one process oversubscribing itself only
 * thrashes). 0 = no limit. */
static uint64_t dev_limit(int dev)
{
	uint64_t phys = cuq_device_total(dev);
	uint64_t lim = mem_limit_now();

	if (!mem_conf.allow_single_oversub && phys != 0 &&
	    (lim == 0 || phys < lim))
		lim = phys;
	return lim;
}

uint64_t mem_cache_cap(int dev)
{
	uint64_t lim;

	if (mem_conf.async_cache != MEM_CACHE_AUTO)
		return mem_conf.async_cache;
	lim = dev_limit(dev);
	if (lim == 0)
		lim = cuq_device_total(dev);
	return lim != 0 ? lim / 4 : 1ull << 30;
}

/* Bytes of dev to give back before size more fit within lim. */
static uint64_t over_by(int dev, uint64_t size, uint64_t lim)
{
	uint64_t managed, pinned;

	mreg_usage(dev, &managed, &pinned);
	return managed + pinned + size > lim ? managed + pinned + size - lim : 0;
}

/* Reserve size bytes on dev within lim; when over it, first free cached
 * stream-ordered memory that the GPU is done with, then wait for the
 * rest of it and for deferred frees, then give up. */
static CUresult reserve_within(int dev, int kind, uint64_t size, uint64_t lim)
{
	if (mreg_reserve(dev, kind, size, lim) == 0)
		return CUDA_SUCCESS;
	if (size <= lim && mem_cache_bytes(dev) > 0 &&
	    mem_cache_trim(dev, 0, over_by(dev, size, lim), 0) > 0 &&
	    mreg_reserve(dev, kind, size, lim) == 0)
		return CUDA_SUCCESS;
	mem_defer_reap(1);
	if (size <= lim)
		mem_cache_trim(dev, 0, over_by(dev, size, lim), 1);
	if (mreg_reserve(dev, kind, size, lim) == 0)
		return CUDA_SUCCESS;
	log_once(LOG_LVL_WARN, "an allocation of %llu bytes on GPU %d is "
		 "refused: this process would pass its limit of %llu bytes "
		 "(VSHARE_MEM_LIMIT, the admin's policy, or the GPU's memory "
		 "unless VSHARE_ALLOW_SINGLE_OVERSUB=1)", (unsigned long long)size,
		 dev, (unsigned long long)lim);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult reserve(int dev, int kind, uint64_t size)
{
	return reserve_within(dev, kind, size, dev_limit(dev));
}

/* Memory is owned by the current context (the driver frees it with the
 * context); VMM memory by none. */
static void record(int ns, uint64_t key, uint64_t size, int dev, int kind)
{
	const void *owner = ns == MREG_PTR ? cuq_current_context() : NULL;

	if (mreg_insert(ns, key, size, dev, kind, owner) != 0)
		log_once(LOG_LVL_WARN, "out of memory for the allocation "
			 "registry: some memory is not accounted for");
	client_footprint_changed(dev);
}

/* The managed allocation: one that stands for the program's own
 * (cuMemAlloc, cuMemAllocManaged converted) in the program's capture mode,
 * so the driver answers as it would have; one behind a stream-ordered
 * allocation (own) as the shim's own call (cu_query.h). */
static CUresult managed(CUdeviceptr *dptr, size_t size, unsigned int flags,
			int own)
{
	return own ? CUQ(cuMemAllocManaged, (dptr, size, flags))
		   : CUQ_PROG(cuMemAllocManaged, (dptr, size, flags));
}

/* lim: the limit to apply (dev_limit for converted memory); own: see
 * managed(). */
static CUresult alloc_managed(CUdeviceptr *dptr, size_t size, int dev,
			      unsigned int flags, uint64_t lim, int own)
{
	CUresult r;

	if (REAL(cuMemAllocManaged) == NULL) {
		log_once(LOG_LVL_ERROR, "cuMemAllocManaged: the real CUDA driver "
			 "function is not available");
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	r = reserve_within(dev, MREG_MANAGED, size, lim);
	if (r != CUDA_SUCCESS)
		return r;
	r = managed(dptr, size, flags, own);
	if (r == CUDA_ERROR_OUT_OF_MEMORY &&
	    (mem_defer_pending() > 0 || mem_cache_bytes(dev) > 0)) {
		mem_defer_reap(1);
		mem_cache_trim(dev, 0, UINT64_MAX, 1);
		r = managed(dptr, size, flags, own);
	}
	if (r != CUDA_SUCCESS) {
		mreg_unreserve(dev, MREG_MANAGED, size);
		return r;
	}
	record(MREG_PTR, *dptr, size, dev, MREG_MANAGED);
	log_debug("%zu bytes of managed memory at %#llx on GPU %d", size,
		  (unsigned long long)*dptr, dev);
	return CUDA_SUCCESS;
}

/* Device memory the shim leaves alone (VSHARE_CONVERT=0) still counts:
 * as pinned footprint, which the GPU cannot page out. */
static CUresult alloc_pinned(CUdeviceptr *dptr, size_t size, int dev)
{
	CUresult r = reserve(dev, MREG_PINNED, size);

	if (r != CUDA_SUCCESS)
		return r;
	r = CUQ_PROG(cuMemAlloc_v2, (dptr, size));
	if (r != CUDA_SUCCESS) {
		mreg_unreserve(dev, MREG_PINNED, size);
		return r;
	}
	record(MREG_PTR, *dptr, size, dev, MREG_PINNED);
	return CUDA_SUCCESS;
}

CUresult mem_alloc(CUdeviceptr *dptr, size_t size)
{
	CUresult r;
	int dev;

	mem_defer_reap(0);
	dev = cuq_current_device();
	if (dev < 0 || dptr == NULL || size == 0)
		return MEM_PASS; /* the driver reports the error */
	if (!convert_now())
		return alloc_pinned(dptr, size, dev);
	r = alloc_managed(dptr, size, dev, CU_MEM_ATTACH_GLOBAL,
			  dev_limit(dev), 0);
	/* Usable by every stream on return: placed through the calling
	 * thread's own default stream, which the program's streams do not
	 * wait for (a kernel that comes first only faults). */
	if (r == CUDA_SUCCESS)
		mem_prefetch_new(*dptr, size, dev, CU_STREAM_PER_THREAD);
	if (r != CUDA_ERROR_NOT_SUPPORTED)
		return r;
	/* Some platforms (virtual GPUs without unified memory) have no
	 * managed memory: plain device memory still works, unshared. */
	log_once(LOG_LVL_WARN, "managed memory is not supported here: "
		 "device memory is left as it is and counts as pinned");
	return alloc_pinned(dptr, size, dev);
}

/* VSHARE_CONVERT=0: the driver's pitched memory, counted once its size
 * is known. */
static CUresult alloc_pitch_pinned(CUdeviceptr *dptr, size_t *pitch,
				   size_t width, size_t height,
				   unsigned int elem_size)
{
	int dev = cuq_current_device();
	CUresult r;

	if (dev < 0)
		return MEM_PASS;
	r = CUQ_PROG(cuMemAllocPitch_v2, (dptr, pitch, width, height, elem_size));
	if (r != CUDA_SUCCESS)
		return r;
	r = reserve(dev, MREG_PINNED, (uint64_t)*pitch * height);
	if (r != CUDA_SUCCESS) {
		(void)CUQ(cuMemFree_v2, (*dptr));
		return r;
	}
	record(MREG_PTR, *dptr, (uint64_t)*pitch * height, dev, MREG_PINNED);
	return CUDA_SUCCESS;
}

CUresult mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
			 size_t height, unsigned int elem_size)
{
	size_t p;
	CUresult r;

	if (dptr == NULL || pitch == NULL || width == 0 || height == 0 ||
	    (elem_size != 4 && elem_size != 8 && elem_size != 16))
		return MEM_PASS;
	if (!convert_now())
		return alloc_pitch_pinned(dptr, pitch, width, height, elem_size);
	p = (width + MEM_PITCH_ALIGN - 1) / MEM_PITCH_ALIGN * MEM_PITCH_ALIGN;
	if (p < width || height > SIZE_MAX / p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	r = mem_alloc(dptr, p * height);
	if (r == CUDA_SUCCESS)
		*pitch = p;
	return r;
}

CUresult mem_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
	int dev;

	mem_defer_reap(0);
	dev = cuq_current_device();
	if (dev < 0 || dptr == NULL || size == 0)
		return MEM_PASS;
	/* The program asked for managed memory itself, oversubscription
	 * included: only an explicit limit (VSHARE_MEM_LIMIT, the
	 * admin's) bounds it. */
	return alloc_managed(dptr, size, dev, flags, mem_limit_now(), 0);
}

CUresult mem_alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
			 CUstream stream)
{
	uint64_t tag = pool != NULL ? (uint64_t)(uintptr_t)pool
				    : MREG_TAG_CURRENT_POOL;
	uint64_t csize = size;
	CUresult r;
	int dev;

	mem_defer_reap(0);
	/* Inside a capture the allocation becomes a graph node whose memory
	 * the graph owns: it must stay stream-ordered, and the cache cannot
	 * serve it. */
	if (dptr == NULL || size == 0 || cuq_stream_capturing(stream) ||
	    !convert_now())
		return MEM_PASS;
	dev = cuq_stream_device(stream);
	if (dev < 0)
		return MEM_PASS;
	if (mem_cache_cap(dev) != 0) {
		csize = mem_cache_class(size);
		if (csize == 0)
			return CUDA_ERROR_OUT_OF_MEMORY;
		if (mem_cache_take(dptr, csize, dev, tag, stream) == 0)
			return CUDA_SUCCESS;
	}
	/* Managed memory is usable by the stream at once, so allocating it
	 * now keeps the stream-ordered semantics. It is the shim's own call
	 * (own = 1: relaxed), as the cache's blocks are: a capture active on
	 * another stream, or begun meanwhile by another thread, does not
	 * refuse it. The driver would refuse the program's cuMemAllocAsync
	 * itself from a thread in global mode during a global capture
	 * (tests/driver/capture_rule.txt); the shim serves it, adding no
	 * failure. */
	r = alloc_managed(dptr, csize, dev, CU_MEM_ATTACH_GLOBAL,
			  dev_limit(dev), 1);
	if (r == CUDA_SUCCESS) {
		mreg_set_tag(MREG_PTR, *dptr, tag);
		mem_prefetch_new(*dptr, csize, dev, stream);
	}
	/* No managed memory here (virtual GPUs): the driver's own. */
	return r == CUDA_ERROR_NOT_SUPPORTED ? MEM_PASS : r;
}

/* own: a free behind a stream-ordered one, the shim's own call; else
 * the program's cuMemFree, in its capture mode (as managed()). */
static CUresult free_now(CUdeviceptr dptr, int own)
{
	struct mreg_entry e;
	CUresult r = own ? CUQ(cuMemFree_v2, (dptr))
			 : CUQ_PROG(cuMemFree_v2, (dptr));

	if (r == CUDA_SUCCESS && mreg_remove(MREG_PTR, dptr, &e) == 0)
		client_footprint_changed(e.dev);
	return r;
}

CUresult mem_free(CUdeviceptr dptr)
{
	mem_defer_reap(0);
	if (dptr == 0 || mreg_lookup(MREG_PTR, dptr, NULL) != 0)
		return MEM_PASS;
	return free_now(dptr, 0);
}

CUresult mem_free_async(CUdeviceptr dptr, CUstream stream)
{
	struct mreg_entry e;

	mem_defer_reap(0);
	if (dptr == 0 || mreg_lookup(MREG_PTR, dptr, &e) != 0)
		return MEM_PASS;
	if (cuq_stream_capturing(stream)) {
		/* A graph cannot free memory it did not allocate from a pool,
		 * and when its launches will have passed is unknown. */
		log_once(LOG_LVL_WARN, "a stream-ordered free of converted "
			 "memory inside a stream capture is ignored: the "
			 "memory stays allocated until the process exits");
		return CUDA_SUCCESS;
	}
	/* Stream-ordered memory stays for reuse (mem_cache.c). */
	if (e.tag != 0 &&
	    mem_cache_put(dptr, &e, stream, mem_cache_cap(e.dev)) == 0)
		return CUDA_SUCCESS;
	if (mem_defer_add(dptr, stream, e.dev) == 0)
		return CUDA_SUCCESS;
	/* No event to watch the stream with: wait for it instead. */
	if (CUQ(cuStreamSynchronize, (stream)) != CUDA_SUCCESS)
		return CUDA_ERROR_INVALID_HANDLE;
	return free_now(dptr, 1);
}

void mem_pool_trim(CUmemoryPool pool, size_t keep)
{
	mem_defer_reap(0);
	mem_cache_pool_trim(pool, keep);
}

CUresult mem_create(CUmemGenericAllocationHandle *handle, size_t size,
		    const CUmemAllocationProp *prop, unsigned long long flags)
{
	int dev = -1;
	CUresult r;

	if (prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
		dev = prop->location.id;
	if (dev < 0 || handle == NULL)
		return MEM_PASS; /* host memory does not count */
	log_once(LOG_LVL_WARN, "VMM allocations (cuMemCreate) cannot be made "
		 "managed, so the GPU cannot page them out: they count as "
		 "pinned memory and limit how far the GPU can be shared");
	r = reserve(dev, MREG_PINNED, size);
	if (r != CUDA_SUCCESS)
		return r;
	r = CUQ_PROG(cuMemCreate, (handle, size, prop, flags));
	if (r != CUDA_SUCCESS) {
		mreg_unreserve(dev, MREG_PINNED, size);
		return r;
	}
	record(MREG_VMM, *handle, size, dev, MREG_PINNED);
	return CUDA_SUCCESS;
}

CUresult mem_release(CUmemGenericAllocationHandle handle)
{
	struct mreg_entry e;
	CUresult r = CUQ_PROG(cuMemRelease, (handle));

	if (r == CUDA_SUCCESS && mreg_remove(MREG_VMM, handle, &e) == 0)
		client_footprint_changed(e.dev);
	return r;
}

CUresult mem_get_info(size_t *free_bytes, size_t *total_bytes)
{
	size_t f, t;
	uint64_t managed, pinned, used, total;
	int dev;
	CUresult r;

	if (free_bytes == NULL || total_bytes == NULL)
		return MEM_PASS;
	mem_defer_reap(0);
	r = CUQ_PROG(cuMemGetInfo_v2, (&f, &t));
	if (r != CUDA_SUCCESS)
		return r;
	dev = cuq_current_device();
	if (dev < 0) {
		*free_bytes = f;
		*total_bytes = t;
		return r;
	}
	total = t;
	if (mem_conf.capacity != 0 && mem_conf.capacity < total)
		total = mem_conf.capacity;
	total = lower(total, mem_limit_now());
	mreg_usage(dev, &managed, &pinned);
	used = managed + pinned;
	*total_bytes = (size_t)total;
	*free_bytes = used < total ? (size_t)(total - used) : 0;
	/* Unconverted memory needs real free device memory. */
	if (!mem_conf.convert && f < *free_bytes)
		*free_bytes = f;
	return CUDA_SUCCESS;
}
