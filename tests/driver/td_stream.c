/*
 * Streams: a queue of operations and a worker thread that runs them in
 * order. Each stream counts operations enqueued and completed; a point in a
 * stream is (stream id, sequence number), which is all events, waits and
 * synchronisation need. Waiters look streams up by id, never keep a
 * pointer across a wait, so a stream may be destroyed meanwhile.
 *
 * The legacy default stream is implicitly synchronised with every blocking
 * stream of its context: an operation on it first waits for all work
 * enqueued on them, and an operation on a blocking stream first waits for
 * work enqueued on the legacy stream.
 */
#include "td.h"

#include <stdlib.h>
#include <string.h>

static __thread int on_worker;	/* the calling thread is a stream worker */

int td_stream_valid(const struct CUstream_st *s)
{
	return s && s->magic == TD_MAGIC_STREAM && !s->stop;
}

struct CUstream_st *td_stream_by_id(uint64_t id)
{
	struct CUctx_st *c;
	struct CUstream_st *s;

	for (c = td.ctxs; c; c = c->next)
		for (s = c->streams; s; s = s->next)
			if (s->id == id)
				return s;
	return NULL;
}

/* Lock held; returns when the point is reached or the stream is gone. */
static void wait_dep(const struct td_dep *d)
{
	for (;;) {
		struct CUstream_st *s = td_stream_by_id(d->stream_id);

		if (!s || s->completed >= d->seq)
			return;
		td_wait();
	}
}

void td_stream_wait_seq(struct CUstream_st *s, uint64_t seq)
{
	struct td_dep d = { s->id, seq };

	wait_dep(&d);
}

static void *worker_main(void *arg)
{
	struct CUstream_st *s = arg;
	int i;

	on_worker = 1;
	td_lock();
	for (;;) {
		struct td_op *op;

		while (!s->head && !s->stop)
			td_wait();
		if (!s->head)
			break;
		op = s->head;
		for (i = 0; i < op->ndeps; i++)
			wait_dep(&op->deps[i]);
		s->running = 1;
		td_unlock();
		td_exec(s, op);
		td_lock();
		s->running = 0;
		s->head = op->next;
		if (!s->head)
			s->tail = NULL;
		s->completed = op->seq;
		td_op_free(op);
		td_broadcast();
	}
	td_unlock();
	return NULL;
}

/* Lock held. */
struct CUstream_st *td_stream_new(struct CUctx_st *c, unsigned int flags,
				  int priority, int legacy, int per_thread)
{
	struct CUstream_st *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->magic = TD_MAGIC_STREAM;
	s->id = td.next_id++;
	s->ctx = c;
	s->flags = flags;
	s->priority = priority;
	s->is_legacy = legacy;
	s->is_per_thread = per_thread;
	s->owner = pthread_self();
	if (pthread_create(&s->worker, NULL, worker_main, s) != 0) {
		free(s);
		return NULL;
	}
	s->next = c->streams;
	c->streams = s;
	return s;
}

/* Lock NOT held. Lets queued work finish, then stops the worker. */
CUresult td_stream_destroy(struct CUstream_st *s)
{
	struct CUstream_st **pp;

	td_lock();
	if (!s || s->magic != TD_MAGIC_STREAM || s->stop) {
		td_unlock();
		return CUDA_ERROR_INVALID_HANDLE;
	}
	td_stream_wait_seq(s, s->enqueued);
	s->stop = 1;
	td_broadcast();
	td_unlock();
	if (!pthread_equal(s->worker, pthread_self()))
		pthread_join(s->worker, NULL);
	else
		pthread_detach(s->worker);
	td_lock();
	for (pp = &s->ctx->streams; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	s->magic = 0;
	td_unlock();
	free(s);
	return CUDA_SUCCESS;
}

/* Lock held. The calling thread's per-thread default stream in c. */
static struct CUstream_st *per_thread_stream(struct CUctx_st *c)
{
	struct CUstream_st *s;

	for (s = c->streams; s; s = s->next)
		if (s->is_per_thread && pthread_equal(s->owner, pthread_self()))
			return s;
	return td_stream_new(c, CU_STREAM_DEFAULT, 0, 0, 1);
}

/*
 * Lock held. Maps a handle as passed to the API to a stream: NULL is the
 * legacy stream (or the per-thread stream for _ptsz/_ptds entry points),
 * CU_STREAM_LEGACY and CU_STREAM_PER_THREAD are honoured everywhere.
 */
CUresult td_stream_resolve(CUstream h, int per_thread, struct CUstream_st **out)
{
	struct CUctx_st *c;
	CUresult rc;

	if (h == CU_STREAM_PER_THREAD || (h == NULL && per_thread) ||
	    h == CU_STREAM_LEGACY || h == NULL) {
		rc = td_current_ctx(&c);
		if (rc != CUDA_SUCCESS)
			return rc;
		if (h == CU_STREAM_PER_THREAD || (h == NULL && per_thread))
			*out = per_thread_stream(c);
		else
			*out = c->legacy;
		return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = td_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!td_stream_valid(h) || !td_ctx_valid(h->ctx))
		return CUDA_ERROR_INVALID_HANDLE;
	*out = h;
	return CUDA_SUCCESS;
}

struct td_op *td_op_new(enum td_op_kind kind)
{
	struct td_op *op = calloc(1, sizeof(*op));

	if (op)
		op->kind = kind;
	return op;
}

void td_op_free(struct td_op *op)
{
	if (!op)
		return;
	free(op->deps);
	free(op);
}

static int add_dep(struct td_op *op, uint64_t id, uint64_t seq)
{
	struct td_dep *d;

	if (seq == 0)
		return 0;
	d = realloc(op->deps, (size_t)(op->ndeps + 1) * sizeof(*d));
	if (!d)
		return -1;
	op->deps = d;
	d[op->ndeps].stream_id = id;
	d[op->ndeps].seq = seq;
	op->ndeps++;
	return 0;
}

/* Lock held. Adds the implicit legacy-stream ordering to op. */
static int add_implicit_deps(struct CUstream_st *s, struct td_op *op)
{
	struct CUstream_st *o;

	if (s->flags & CU_STREAM_NON_BLOCKING)
		return 0;
	if (!s->is_legacy)
		return add_dep(op, s->ctx->legacy->id, s->ctx->legacy->enqueued);
	for (o = s->ctx->streams; o; o = o->next)
		if (o != s && !(o->flags & CU_STREAM_NON_BLOCKING) &&
		    add_dep(op, o->id, o->enqueued) != 0)
			return -1;
	return 0;
}

/* Lock held. Appends op to s; returns its sequence number. */
static uint64_t enqueue(struct CUstream_st *s, struct td_op *op)
{
	op->seq = ++s->enqueued;
	op->next = NULL;
	if (s->tail)
		s->tail->next = op;
	else
		s->head = op;
	s->tail = op;
	td_broadcast();
	return op->seq;
}

/*
 * Queues op on the stream named by h (or records it into the stream's
 * capture). With wait, returns after the op has run, as synchronous API
 * calls do. Takes ownership of op in every case.
 */
CUresult td_submit(CUstream h, int per_thread, struct td_op *op, int wait)
{
	struct CUstream_st *s;
	CUresult rc;
	uint64_t seq;

	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	td_lock();
	rc = td_stream_resolve(h, per_thread, &s);
	if (rc == CUDA_SUCCESS && s->cap) {
		if (wait)
			rc = td_capture_check_sync(s);
		else if (td_capture_add(s, op) == 0) {
			td_unlock();
			return CUDA_SUCCESS;
		} else
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc == CUDA_SUCCESS && add_implicit_deps(s, op) != 0)
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (rc != CUDA_SUCCESS) {
		td_unlock();
		td_op_free(op);
		return rc;
	}
	if (op->kind == TD_OP_EVENT) {
		struct CUevent_st *ev = op->u.event.ev;

		ev->recorded = 1;
		ev->done = 0;
		ev->cap = NULL;
		ev->stream_id = s->id;
		ev->seq = s->enqueued + 1;
	}
	seq = enqueue(s, op);
	if (wait && !on_worker)
		td_stream_wait_seq(s, seq);
	td_unlock();
	return CUDA_SUCCESS;
}
