/*
 * The cache of converted stream-ordered memory (mem_cache.c): blocks that
 * cuMemFreeAsync gave back, kept managed and counted, for later
 * cuMemAllocAsync and cuMemAllocFromPoolAsync calls of the same pool.
 * Thread-safe. It calls nothing else of the memory layer: mem_alloc.c
 * decides what goes in and hands it the limits.
 */
#ifndef VSHARE_MEM_CACHE_H
#define VSHARE_MEM_CACHE_H

#include <cuda.h>
#include <stdint.h>

#include "mem_reg.h"

/* The size a cacheable block is allocated with: rounded up to a size
 * class (at most 1/8 more, 512 bytes at least, multiples of 2 MiB from
 * 16 MiB on), so that blocks of about the same size are interchangeable.
 * 0 if size is too large to round. */
uint64_t mem_cache_class(uint64_t size);

/* A cached block of exactly class size csize, device dev and pool tag
 * (mreg_entry.tag) for stream: one freed on this stream in the current
 * context first (the stream's order makes it usable at once; a wait on
 * the free's event is queued on the stream, which costs the host
 * nothing), else one freed on another stream whose free the GPU has
 * passed. 0 with *dptr set, or -1. */
int mem_cache_take(CUdeviceptr *dptr, uint64_t csize, int dev, uint64_t tag,
		   CUstream stream);

/* Keep a block that a stream-ordered free gave back (e: its registry
 * entry, tag not 0), an event recorded on stream marking the free. cap:
 * the most the cache may hold on e->dev (0: caching is off). 0 if kept,
 * -1 if not (the caller frees it otherwise). */
int mem_cache_put(CUdeviceptr dptr, const struct mreg_entry *e,
		  CUstream stream, uint64_t cap);

/* Free cached blocks, oldest first, until want bytes are freed: those of
 * dev (-1: every device) and of tag (0: any tag). wait = 0 takes only
 * blocks whose free the GPU has passed; wait = 1 waits for the others.
 * Returns the bytes freed. */
uint64_t mem_cache_trim(int dev, uint64_t tag, uint64_t want, int wait);

/* A synchronization point of dev (the release of its GPU lock): each
 * pool keeps at most its CU_MEMPOOL_ATTR_RELEASE_THRESHOLD cached. */
void mem_cache_sync_point(int dev);

/* cuMemPoolTrimTo: the pool keeps at most keep bytes cached (blocks the
 * GPU has passed only). The real call still follows (MEM_PASS). */
void mem_cache_pool_trim(CUmemoryPool pool, uint64_t keep);

/* Bytes cached on dev (-1: all devices). */
uint64_t mem_cache_bytes(int dev);

struct mem_cache_stats {
	uint64_t hits_same;     /* taken by the stream that freed them */
	uint64_t hits_other;    /* taken by another stream, free passed */
	uint64_t misses;        /* allocations the cache could not serve */
	uint64_t puts;          /* blocks kept */
	uint64_t refused;       /* frees not kept (cap, no event) */
	uint64_t trimmed;       /* blocks freed by trimming */
	uint64_t bytes;         /* cached now */
	uint64_t blocks;        /* cached now */
};
void mem_cache_stats(struct mem_cache_stats *out);

/* A context is about to be destroyed (or, ctx NULL, every context of
 * dev, by a primary context reset): free its cached blocks (waiting for
 * their frees) and destroy its events while it still exists. */
void mem_cache_drop_ctx(const void *ctx, int dev);

void mem_cache_atfork_child(void);

#endif
