/*
 * The one owner of what the memory layer keeps per context and per
 * process (mem_state.c): the stores (the cache of stream-ordered blocks,
 * the deferred frees, the staging rings, the allocation registry, the
 * known contexts, the driver queries' per-thread answers, the copy
 * helpers) are listed once there, and a context's end or a fork reaches
 * each of them through it.
 */
#ifndef VSHARE_MEM_STATE_H
#define VSHARE_MEM_STATE_H

/* A context is about to be destroyed (or, ctx NULL, every context of dev,
 * by a primary context reset or its last release): what each store keeps
 * of it goes while it still exists, under the one path's rules
 * (cu_query.h) with the context current. */
void mem_ctx_closing(const void *ctx, int dev);
/* The driver destroyed it (ctx NULL: every context of dev) and freed its
 * memory with it: stop counting that memory. */
void mem_ctx_gone(const void *ctx, int dev);
/* A synchronization point of dev (the release of its GPU lock), in a
 * context of dev (the releasing thread may have none current): frees that
 * fell due, and each pool down to its release threshold. */
void mem_sync_point(int dev);
/* pthread_atfork child handler of the whole layer: each store forgets
 * the parent's CUDA objects and takes fresh locks. No CUDA call. */
void mem_atfork_child(void);

#endif
