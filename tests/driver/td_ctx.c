/*
 * Contexts: primary contexts (retained per device, one handle for the life
 * of the process) and created ones. A context owns its streams and the
 * memory allocated in it; tearing it down waits for its work.
 */
#include "td.h"

#include <stdlib.h>


/* Lock held. A live context with its legacy stream. */
struct CUctx_st *td_ctx_new(int dev, unsigned int flags, int primary)
{
	struct CUctx_st *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->magic = TD_MAGIC_CTX;
	c->id = td.next_id++;
	c->dev = dev;
	c->flags = flags;
	c->is_primary = primary;
	c->alive = 1;
	c->legacy = td_stream_new(c, CU_STREAM_DEFAULT, 0, 1, 0);
	if (!c->legacy) {
		free(c);
		return NULL;
	}
	c->next = td.ctxs;
	td.ctxs = c;
	return c;
}

/* Lock NOT held. Waits for all work queued on c's streams so far. */
CUresult td_ctx_sync(struct CUctx_st *c)
{
	struct CUstream_st *s;
	struct td_dep *pts = NULL;
	size_t n = 0, i;

	td_lock();
	for (s = c->streams; s; s = s->next)
		n++;
	pts = calloc(n ? n : 1, sizeof(*pts));
	if (!pts) {
		td_unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (i = 0, s = c->streams; s; s = s->next, i++) {
		pts[i].stream_id = s->id;
		pts[i].seq = s->enqueued;
	}
	for (i = 0; i < n; i++) {
		for (;;) {
			s = td_stream_by_id(pts[i].stream_id);
			if (!s || s->completed >= pts[i].seq)
				break;
			td_wait();
		}
	}
	td_unlock();
	free(pts);
	return CUDA_SUCCESS;
}

/* Lock NOT held. Waits for the work, destroys the streams and frees the
 * memory of c; the handle stays (primary contexts are revived by Retain). */
static void ctx_teardown(struct CUctx_st *c)
{
	td_ctx_sync(c);
	td_lock();
	c->alive = 0;
	c->legacy = NULL;
	for (;;) {
		struct CUstream_st *s = c->streams;

		while (s && s->dying)
			s = s->next;
		if (s) {
			td_stream_destroy_locked(s);
			td_lock();
		} else if (c->streams) {
			td_wait();	/* another thread is destroying one */
		} else {
			break;
		}
	}
	td_mem_free_ctx(c);
	td_unlock();
}

static CUresult dev_ok(CUdevice dev)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	return dev >= 0 && dev < td.ndev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = dev_ok(dev);
	struct td_device *d;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	d = &td.dev[dev];
	if (!d->primary) {
		d->primary = td_ctx_new(dev, d->primary_flags, 1);
	} else if (!d->primary->alive) {
		d->primary->legacy = td_stream_new(d->primary, 0, 0, 1, 0);
		d->primary->alive = d->primary->legacy != NULL;
		d->primary->flags = d->primary_flags;
	}
	if (!d->primary || !d->primary->alive) {
		td_unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->primary->refs++;
	*pctx = d->primary;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult rc = dev_ok(dev);
	struct CUctx_st *c;
	int last;

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	c = td.dev[dev].primary;
	if (!c || c->refs == 0) {
		td_unlock();
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	last = --c->refs == 0;
	td_unlock();
	if (last)
		ctx_teardown(c);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult rc = dev_ok(dev);
	struct CUctx_st *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	c = td.dev[dev].primary;
	if (c)
		c->refs = 0;
	td_unlock();
	if (c && c->alive)
		ctx_teardown(c);
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	CUresult rc = dev_ok(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	*flags = td.dev[dev].primary_flags;
	*active = td.dev[dev].primary && td.dev[dev].primary->alive;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	CUresult rc = dev_ok(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	td.dev[dev].primary_flags = flags;
	if (td.dev[dev].primary && td.dev[dev].primary->alive)
		td.dev[dev].primary->flags = flags;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	CUresult rc = dev_ok(dev);
	struct CUctx_st *c;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	c = td_ctx_new(dev, flags, 0);
	td_unlock();
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pctx = c;
	return cuCtxPushCurrent_v2(c);
}

CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
			int numParams, unsigned int flags, CUdevice dev)
{
	(void)paramsArray;
	(void)numParams;
	return ctx_create(pctx, flags, dev);
}

CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
			unsigned int flags, CUdevice dev)
{
	(void)ctxCreateParams;
	return ctx_create(pctx, flags, dev);
}

CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!td_ctx_valid(ctx) || ctx->is_primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_teardown(ctx);
	td_ctx_forget_current(ctx);
	return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = c->dev;
	return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	rc = td_capture_check_ctx(c);
	td_unlock();
	if (rc != CUDA_SUCCESS)
		return rc;
	return td_ctx_sync(c);
}

/* CUDA 13's variant: the context named, NULL for the current one. */
CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	CUresult rc;

	if (ctx == NULL)
		return cuCtxSynchronize();
	if ((rc = td_check_init()) != CUDA_SUCCESS)
		return rc;
	if (!td_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	td_lock();
	rc = td_capture_check_ctx(ctx);
	td_unlock();
	if (rc != CUDA_SUCCESS)
		return rc;
	return td_ctx_sync(ctx);
}

CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctx && (rc = td_current_ctx(&ctx)) != CUDA_SUCCESS)
		return rc;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (!td_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*version = 12040;	/* what current drivers report for any context */
	return CUDA_SUCCESS;
}

CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	*flags = c->flags;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuCtxSetFlags(unsigned int flags)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	c->flags = flags;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctx && (rc = td_current_ctx(&ctx)) != CUDA_SUCCESS)
		return rc;
	if (!ctxId)
		return CUDA_ERROR_INVALID_VALUE;
	if (!td_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*ctxId = ctx->id;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pvalue || limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pvalue = limit == CU_LIMIT_STACK_SIZE ? 1024 : 0;
	return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	(void)value;
	if (rc != CUDA_SUCCESS)
		return rc;
	return limit < CU_LIMIT_MAX ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
