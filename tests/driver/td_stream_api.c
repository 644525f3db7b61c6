/*
 * The stream entry points: creation, synchronisation, queries, waits on
 * events. Each _ptsz twin differs only in what a NULL handle means.
 */
#include "td.h"

#include <stdlib.h>

CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags,
				    int priority)
{
	struct CUctx_st *c;
	struct CUstream_st *s;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phStream || (flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	if (priority > 0)
		priority = 0;
	if (priority < -5)
		priority = -5;
	td_lock();
	s = td_stream_new(c, flags, priority, 0, 0);
	td_unlock();
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*phStream = s;
	return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	return cuStreamCreateWithPriority(phStream, Flags, 0);
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (hStream == NULL || hStream == CU_STREAM_LEGACY ||
	    hStream == CU_STREAM_PER_THREAD)
		return CUDA_ERROR_INVALID_HANDLE;
	td_lock();
	if (!td_stream_valid(hStream) || hStream->is_legacy ||
	    hStream->is_per_thread || hStream->cap) {
		td_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	td_unlock();
	return td_stream_destroy(hStream);
}

CUresult cuStreamDestroy(CUstream hStream)
{
	return cuStreamDestroy_v2(hStream);
}

static CUresult stream_sync(CUstream h, int ptsz)
{
	struct CUstream_st *s;
	CUresult rc;

	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && s->cap)
		rc = td_capture_check_sync(s);
	else if (rc == CUDA_SUCCESS)
		rc = td_capture_check_unsafe();
	if (rc == CUDA_SUCCESS)
		td_stream_wait_seq(s, s->enqueued);
	td_unlock();
	return rc;
}

CUresult cuStreamSynchronize(CUstream hStream)
{
	return stream_sync(hStream, 0);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
	return stream_sync(hStream, TD_PTDS);
}

static CUresult stream_query(CUstream h, int ptsz)
{
	struct CUstream_st *s;
	CUresult rc;

	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && s->cap)
		rc = td_capture_check_sync(s);
	else if (rc == CUDA_SUCCESS)
		rc = td_capture_check_unsafe();
	if (rc == CUDA_SUCCESS && s->completed < s->enqueued)
		rc = CUDA_ERROR_NOT_READY;
	td_unlock();
	return rc;
}

CUresult cuStreamQuery(CUstream hStream)
{
	return stream_query(hStream, 0);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
	return stream_query(hStream, TD_PTDS);
}

static CUresult stream_wait_event(CUstream h, CUevent ev, unsigned int flags,
				  int ptsz)
{
	struct CUstream_st *s;
	struct td_op *op;
	CUresult rc;

	(void)flags;
	op = td_op_new(TD_OP_WAIT);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && (!ev || ev->magic != TD_MAGIC_EVENT ||
				   ev->destroyed))
		rc = CUDA_ERROR_INVALID_HANDLE;
	if (rc == CUDA_SUCCESS && td_capture_join(s, ev)) {
		td_unlock();
		td_op_free(op);
		return CUDA_SUCCESS;
	}
	if (rc == CUDA_SUCCESS && ev->recorded && !ev->cap) {
		op->deps = malloc(sizeof(*op->deps));
		if (!op->deps)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		else {
			op->deps[0].stream_id = ev->stream_id;
			op->deps[0].seq = ev->seq;
			op->ndeps = 1;
		}
	}
	td_unlock();
	if (rc != CUDA_SUCCESS) {
		td_op_free(op);
		return rc;
	}
	return td_submit(h, ptsz, op, 0);
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	return stream_wait_event(hStream, hEvent, Flags, 0);
}

CUresult cuStreamWaitEvent_ptsz(CUstream hStream, CUevent hEvent,
				unsigned int Flags)
{
	return stream_wait_event(hStream, hEvent, Flags, TD_PTDS);
}

/* Resolves h and reads one of its properties under the lock. */
#define STREAM_GETTER(name, type, expr)                                    \
	static CUresult name##_impl(CUstream h, type *out, int ptsz)       \
	{                                                                  \
		struct CUstream_st *s;                                     \
		CUresult rc;                                               \
		if (!out)                                                  \
			return CUDA_ERROR_INVALID_VALUE;                   \
		td_lock();                                                 \
		rc = td_stream_resolve(h, ptsz, &s);                       \
		if (rc == CUDA_SUCCESS)                                    \
			*out = (expr);                                     \
		td_unlock();                                               \
		return rc;                                                 \
	}                                                                  \
	CUresult name(CUstream h, type *out)                               \
	{                                                                  \
		return name##_impl(h, out, 0);                             \
	}                                                                  \
	CUresult name##_ptsz(CUstream h, type *out)                        \
	{                                                                  \
		return name##_impl(h, out, TD_PTDS);                       \
	}

STREAM_GETTER(cuStreamGetCtx, CUcontext, s->ctx)
STREAM_GETTER(cuStreamGetFlags, unsigned int, s->flags)
STREAM_GETTER(cuStreamGetPriority, int, s->priority)
STREAM_GETTER(cuStreamGetId, unsigned long long, s->id)
STREAM_GETTER(cuStreamGetDevice, CUdevice, s->ctx->dev)

static CUresult get_ctx_v2(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen,
			   int ptsz)
{
	CUresult rc = cuStreamGetCtx_impl(h, pctx, ptsz);

	if (rc == CUDA_SUCCESS && pgreen)
		*pgreen = NULL;
	return rc;
}

CUresult cuStreamGetCtx_v2(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen)
{
	return get_ctx_v2(h, pctx, pgreen, 0);
}

CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *pctx, CUgreenCtx *pgreen)
{
	return get_ctx_v2(h, pctx, pgreen, TD_PTDS);
}
