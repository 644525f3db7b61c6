/*
 * The one owner of the memory layer's state. Each store is one row of
 * `stores` with what it does at a context's end (closing: before the
 * driver destroys the context, while its events and memory can still be
 * waited for and freed; gone: after, when the driver freed its memory)
 * and in a fork child. A new store, or a new thing to do at a context's
 * end, is one edit of that table; the hooks (hook_ctx.c) and the fork
 * handler (shim.c) call the functions below only.
 *
 * The stores keep their own locks: their hot paths (a cache take, a
 * deferred free, a staged copy) meet different threads, and one lock for
 * all would make them wait for each other.
 */
#include "client.h"
#include "ctx_track.h"
#include "cu_query.h"
#include "mem_alloc.h"
#include "mem_cache.h"
#include "mem_reg.h"
#include "mem_stage.h"
#include "mem_state.h"
#include "pcopy.h"

/* The registry's part of a context's end: the driver freed the memory
 * with the context. */
static void reg_gone(const void *ctx, int dev)
{
	int d = ctx != NULL ? mreg_drop_owner(ctx) : -1;

	if (ctx == NULL && dev >= 0) {
		mreg_drop_device(dev);
		d = dev;
	}
	if (d >= 0)
		client_footprint_changed(d);
}

struct mem_store {
	const char *name;
	void (*closing)(const void *ctx, int dev);
	void (*gone)(const void *ctx, int dev);
	void (*fork_child)(void);
};

/* In order: the cache first (its blocks' frees are the oldest), then the
 * deferred frees and the staging rings; the registry last, which the
 * others update as they free. */
static const struct mem_store stores[] = {
	{ "cache", mem_cache_drop_ctx, NULL, mem_cache_atfork_child },
	{ "deferred frees", mem_defer_drop_ctx, NULL, mem_defer_atfork_child },
	{ "staging rings", mem_stage_drop_ctx, NULL, mem_stage_atfork_child },
	{ "registry", NULL, reg_gone, mreg_atfork_child },
	{ "contexts", NULL, NULL, ctx_atfork_child },
	{ "driver queries", NULL, NULL, cuq_atfork_child },
	{ "copy helpers", NULL, NULL, pcopy_atfork_child },
};

#define N_STORES (sizeof(stores) / sizeof(stores[0]))

void mem_ctx_closing(const void *ctx, int dev)
{
	struct cuq_scope sc;

	/* A context that cannot be made current (destroyed behind the
	 * hooks' back) still has its stores emptied, in whatever context
	 * the thread has. */
	if (cuq_enter(&sc, 0, ctx) != 0 && cuq_enter(&sc, 0, NULL) != 0)
		return;
	for (size_t i = 0; i < N_STORES; i++)
		if (stores[i].closing != NULL)
			stores[i].closing(ctx, dev);
	cuq_leave(&sc);
}

void mem_ctx_gone(const void *ctx, int dev)
{
	for (size_t i = 0; i < N_STORES; i++)
		if (stores[i].gone != NULL)
			stores[i].gone(ctx, dev);
}

void mem_sync_point(int dev)
{
	struct cuq_scope sc;
	CUcontext ctx = NULL;

	(void)ctx_list(dev, &ctx, 1);
	if (cuq_enter(&sc, 0, ctx) != 0)
		return;
	mem_defer_reap(0);
	mem_cache_sync_point(dev);
	cuq_leave(&sc);
}

void mem_atfork_child(void)
{
	for (size_t i = 0; i < N_STORES; i++)
		stores[i].fork_child();
}
