/*
 * Events. A record queues an operation that stamps the time when the
 * stream reaches it; each record bumps a generation so that an older,
 * still queued record does not complete a newer one. Queued records hold a
 * reference, so destroying an event with work pending is safe.
 */
#include "td.h"

#include <stdlib.h>

static int ev_valid(const struct CUevent_st *e)
{
	return e && e->magic == TD_MAGIC_EVENT && !e->destroyed;
}

/* Lock held. */
static void ev_put(struct CUevent_st *e)
{
	if (--e->refs == 0) {
		e->magic = 0;
		free(e);
	}
}

void td_event_done(struct CUevent_st *ev, uint64_t gen)
{
	td_lock();
	if (ev->gen == gen) {
		ev->done = 1;
		ev->time_ns = td_now_ns();
		td_broadcast();
	}
	ev_put(ev);
	td_unlock();
}

/* Lock held: called by the capture code for a record it absorbs. */
void td_event_drop(struct CUevent_st *ev)
{
	ev_put(ev);
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct CUctx_st *c;
	struct CUevent_st *e;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!phEvent)
		return CUDA_ERROR_INVALID_VALUE;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->magic = TD_MAGIC_EVENT;
	e->flags = Flags;
	e->refs = 1;
	*phEvent = e;
	return CUDA_SUCCESS;
}

static CUresult ev_record(CUevent ev, CUstream h, int ptsz)
{
	struct td_op *op;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	op = td_op_new(TD_OP_EVENT);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	td_lock();
	if (!ev_valid(ev)) {
		td_unlock();
		td_op_free(op);
		return CUDA_ERROR_INVALID_HANDLE;
	}
	ev->refs++;
	op->u.event.ev = ev;
	op->u.event.gen = ++ev->gen;
	td_unlock();
	rc = td_submit(h, ptsz, op, 0);
	if (rc != CUDA_SUCCESS) {
		td_lock();
		ev_put(ev);
		td_unlock();
	}
	return rc;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return ev_record(hEvent, hStream, 0);
}

CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return ev_record(hEvent, hStream, TD_PTDS);
}

CUresult cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
	(void)flags;
	return ev_record(hEvent, hStream, 0);
}

CUresult cuEventRecordWithFlags_ptsz(CUevent hEvent, CUstream hStream,
				     unsigned int flags)
{
	(void)flags;
	return ev_record(hEvent, hStream, TD_PTDS);
}

CUresult cuEventQuery(CUevent hEvent)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	if (!ev_valid(hEvent))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if ((rc = td_capture_check_unsafe()) != CUDA_SUCCESS)
		;
	else if (hEvent->recorded && !hEvent->done)
		rc = CUDA_ERROR_NOT_READY;
	td_unlock();
	return rc;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
	CUresult rc = td_check_init();
	uint64_t gen;

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	if (!ev_valid(hEvent)) {
		td_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if ((rc = td_capture_check_unsafe()) != CUDA_SUCCESS) {
		td_unlock();
		return rc;
	}
	gen = hEvent->gen;
	hEvent->refs++;
	while (hEvent->recorded && !hEvent->done && hEvent->gen == gen &&
	       !hEvent->cap)
		td_wait();
	ev_put(hEvent);
	td_unlock();
	return CUDA_SUCCESS;
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ms)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	if (!ev_valid(a) || !ev_valid(b) ||
	    ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING))
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (!a->recorded || !b->recorded)
		rc = CUDA_ERROR_INVALID_HANDLE;
	else if (!a->done || !b->done)
		rc = CUDA_ERROR_NOT_READY;
	else
		*ms = (float)((double)((int64_t)(b->time_ns - a->time_ns)) / 1e6);
	td_unlock();
	return rc;
}

CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventElapsedTime_v2(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	return elapsed(pMilliseconds, hStart, hEnd);
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	if (!ev_valid(hEvent)) {
		td_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	hEvent->destroyed = 1;
	ev_put(hEvent);
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuEventDestroy(CUevent hEvent)
{
	return cuEventDestroy_v2(hEvent);
}
