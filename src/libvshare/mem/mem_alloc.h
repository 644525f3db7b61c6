/*
 * Unified Memory conversion: device allocations become managed, counted
 * in the registry (mem_reg.h), limited per process, reported through
 * cuMemGetInfo. The hooks (hook_mem.c) translate and delegate here; a
 * change of the footprint goes to the scheduler client
 * (client_footprint_changed).
 */
#ifndef VSHARE_MEM_ALLOC_H
#define VSHARE_MEM_ALLOC_H

#include <cuda.h>
#include <stdint.h>

/* VSHARE_* settings of the memory layer, read once at init. */
struct mem_conf {
	int convert;              /* VSHARE_CONVERT, default 1 */
	int allow_single_oversub; /* VSHARE_ALLOW_SINGLE_OVERSUB, default 0 */
	uint64_t mem_limit;       /* VSHARE_MEM_LIMIT and the node's, 0 = none */
	uint64_t capacity;        /* VSHARE_CAPACITY, 0 = none */
	/* VSHARE_ASYNC_CACHE: most bytes of stream-ordered memory kept for
	 * reuse per device (mem_cache.h); 0 = no cache; MEM_CACHE_AUTO (the
	 * default) = a quarter of the device's limit. */
	uint64_t async_cache;
	/* VSHARE_STAGE_COPIES, default 1: copies between pageable host
	 * memory and converted memory go through pinned buffers
	 * (mem_stage.h). */
	int stage_copies;
	/* VSHARE_SWAP_STREAMS, default MEM_SWAP_STREAMS: streams that a bulk
	 * swap (mem_prefetch.c) spreads its chunks over; 1 = one stream,
	 * one prefetch per allocation. */
	int swap_streams;
};

#define MEM_SWAP_STREAMS 4
#define MEM_SWAP_STREAMS_MAX 8

#define MEM_CACHE_AUTO UINT64_MAX

extern struct mem_conf mem_conf;
/* The environment's settings, and the node's limit (shim_node.h), which
 * the environment may lower only. After shim_node_read. */
void mem_conf_read(void);
/* The scheduler's limit (VS_MSG_POLICY; 0: none), on top of the others:
 * new allocations beyond the lowest limit fail with
 * CUDA_ERROR_OUT_OF_MEMORY, memory already allocated stays. */
void mem_set_policy_limit(uint64_t limit);
/* The lowest of the limits in force, 0 if none. */
uint64_t mem_limit_now(void);

/* Returned by a mem_* function that leaves the call to the real driver
 * function of the hook (whichever variant the hook is). Never a CUDA
 * error code. */
#define MEM_PASS ((CUresult)-1)

CUresult mem_alloc(CUdeviceptr *dptr, size_t size);
CUresult mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width,
			 size_t height, unsigned int elem_size);
CUresult mem_alloc_managed(CUdeviceptr *dptr, size_t size, unsigned int flags);
/* cuMemAllocAsync (pool NULL: the device's current pool) and
 * cuMemAllocFromPoolAsync: stream already mapped with PTSZ() by the
 * per-thread variants. Served from the cache of stream-ordered memory
 * when it can be (mem_cache.h). MEM_PASS inside a capture. */
CUresult mem_alloc_async(CUdeviceptr *dptr, size_t size, CUmemoryPool pool,
			 CUstream stream);
/* MEM_PASS for memory the shim did not convert. */
CUresult mem_free(CUdeviceptr dptr);
/* Converted stream-ordered memory goes to the cache; other converted
 * memory is freed once the stream has passed the free (mem_defer.c). */
CUresult mem_free_async(CUdeviceptr dptr, CUstream stream);
/* cuMemPoolTrimTo: the pool's cached memory down to keep bytes; the
 * driver's call follows. */
void mem_pool_trim(CUmemoryPool pool, size_t keep);
/* The most the cache may hold on dev (bytes, 0 = off). */
uint64_t mem_cache_cap(int dev);
CUresult mem_create(CUmemGenericAllocationHandle *handle, size_t size,
		    const CUmemAllocationProp *prop, unsigned long long flags);
CUresult mem_release(CUmemGenericAllocationHandle handle);
CUresult mem_get_info(size_t *free_bytes, size_t *total_bytes);

/* Deferred stream-ordered frees (mem_defer.c). */
int  mem_defer_add(CUdeviceptr dptr, CUstream stream, int dev);
/* Free what the streams have passed; wait = 1 waits for all of it. Never
 * blocks when wait = 0. */
void mem_defer_reap(int wait);
/* A context is about to be destroyed (or, ctx NULL, every context of dev
 * by a primary context reset): its pending frees are waited for and done
 * while it still exists, so that no event of a dead context is queried
 * or destroyed later (its handle may be the program's by then). Called
 * through mem_state.c, as mem_defer_atfork_child. */
void mem_defer_drop_ctx(const void *ctx, int dev);
void mem_defer_atfork_child(void);
/* Number of frees still waiting for their stream (tests, debugging). */
size_t mem_defer_pending(void);

/* Prefetch the managed memory of dev to it (or to host) and wait, over
 * `streams` streams (mem_conf.swap_streams); the bytes whose prefetch
 * the driver took (0: nothing moved). */
uint64_t mem_prefetch_device(int dev, int to_host, int streams);
/* A new converted allocation of size bytes on dev, placed on the GPU at
 * once (queued on s) rather than page by page at the first kernel's
 * faults: the driver maps memory filled by faults with small pages, and
 * kernels on it ran up to 1.4 times slower on the H100 (a JAX matmul
 * loop, docs/benchmarks.md); prefetched, they ran at plain speed. Only
 * while this process may submit to dev without waiting (gate_try_enter: a
 * prefetch while another process holds the GPU would push that one's
 * memory out), never during a capture, and not below
 * MEM_PREFETCH_NEW_MIN (one large page). */
#ifndef MEM_PREFETCH_NEW_MIN
#define MEM_PREFETCH_NEW_MIN (2u << 20)
#endif
void mem_prefetch_new(CUdeviceptr p, size_t size, int dev, CUstream s);

#endif
