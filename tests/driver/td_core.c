/*
 * Global state, initialisation, the per-thread context stack and the small
 * entry points that belong to no other module (cuInit, versions, errors of
 * use after fork).
 */
#include "td.h"

#include <string.h>
#include <time.h>

struct td_state td = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.next_id = 1,
	.log_fd = -1,
};

/* The context stack of the calling thread; the top is the current one. */
#define TD_CTX_STACK 32
static __thread struct CUctx_st *ctx_stack[TD_CTX_STACK];
static __thread int ctx_depth;

/* A child forked from a process that had initialised the driver has no
 * worker threads; like the real driver, it must not use CUDA. */
static int forked_child;

void td_lock(void) { pthread_mutex_lock(&td.lock); }
void td_unlock(void) { pthread_mutex_unlock(&td.lock); }
void td_wait(void) { pthread_cond_wait(&td.cond, &td.lock); }
void td_broadcast(void) { pthread_cond_broadcast(&td.cond); }

uint64_t td_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void atfork_prepare(void) { td_lock(); }
static void atfork_parent(void) { td_unlock(); }

static void atfork_child(void)
{
	/* The mutex is re-initialised rather than unlocked: the child is a new
	 * owner and other threads do not exist any more. */
	pthread_mutex_init(&td.lock, NULL);
	pthread_cond_init(&td.cond, NULL);
	if (td.inited)
		forked_child = 1;
}

__attribute__((constructor)) static void td_load(void)
{
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
}

CUresult td_check_init(void)
{
	if (forked_child)
		return CUDA_ERROR_NOT_INITIALIZED;
	return __atomic_load_n(&td.inited, __ATOMIC_ACQUIRE) ?
		CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (forked_child)
		return CUDA_ERROR_NOT_INITIALIZED;
	td_lock();
	if (!td.inited) {
		td_env_load(&td);
		td_log_open();
		__atomic_store_n(&td.inited, 1, __ATOMIC_RELEASE);
	}
	td_unlock();
	return td.ndev > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	if (!td.inited)
		td_env_load(&td);	/* works before cuInit, as the real one */
	*version = td.driver_version;
	td_unlock();
	return CUDA_SUCCESS;
}

int td_ctx_valid(const struct CUctx_st *c)
{
	return c && c->magic == TD_MAGIC_CTX && c->alive;
}

/* The calling thread's current context, checked to be alive. */
CUresult td_current_ctx(struct CUctx_st **out)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1])
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!td_ctx_valid(ctx_stack[ctx_depth - 1]))
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	*out = ctx_stack[ctx_depth - 1];
	return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx && ctx->magic != TD_MAGIC_CTX)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctx) {
		if (ctx_depth)
			ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (ctx_depth == 0)
		ctx_depth = 1;
	ctx_stack[ctx_depth - 1] = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctx || ctx->magic != TD_MAGIC_CTX)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_depth == TD_CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack[ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx_depth == 0 || !ctx_stack[ctx_depth - 1])
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_depth--;
	if (pctx)
		*pctx = ctx_stack[ctx_depth];
	return CUDA_SUCCESS;
}

/* Drops a destroyed context from the calling thread's stack (the real
 * driver does so for the destroying thread only). */
void td_ctx_forget_current(struct CUctx_st *c)
{
	if (ctx_depth && ctx_stack[ctx_depth - 1] == c)
		ctx_depth--;
}

CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	(void)pExportTableId;
	if (ppExportTable)
		*ppExportTable = NULL;
	return CUDA_ERROR_NOT_SUPPORTED;
}
