/*
 * Stream-ordered frees of converted memory. The memory is managed, so
 * cuMemFreeAsync cannot take it; freeing it at once could pull it from
 * under work still queued on the stream. An event recorded on the stream
 * marks the point of the free, and the memory is freed once the event
 * has completed, checked without blocking on later allocation, free and
 * memory-info calls and on each release of the GPU, none of them while
 * a stream capture is active. Its driver calls run through the one path
 * (cu_query.h); a context's pending frees go with it (mem_state.c).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "cu_query.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_reg.h"

struct pending_free {
	CUdeviceptr ptr;
	CUevent ev;
	const void *ctx;        /* current at the free: the event's context */
	int dev;
};

static pthread_mutex_t defer_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending_free *defer_list;
static size_t defer_count, defer_cap;

int mem_defer_add(CUdeviceptr dptr, CUstream stream, int dev)
{
	CUevent ev;
	int rc = 0;

	if (CUQ(cuEventCreate, (&ev, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS)
		return -1;
	if (CUQ(cuEventRecord, (ev, stream)) != CUDA_SUCCESS) {
		(void)CUQ(cuEventDestroy_v2, (ev));
		return -1;
	}
	pthread_mutex_lock(&defer_lock);
	if (defer_count == defer_cap) {
		size_t cap = defer_cap ? defer_cap * 2 : 64;
		void *p = realloc(defer_list, cap * sizeof(*defer_list));

		if (p == NULL) {
			rc = -1;
		} else {
			defer_list = p;
			defer_cap = cap;
		}
	}
	if (rc == 0)
		defer_list[defer_count++] = (struct pending_free){
			dptr, ev, cuq_current_context(), dev };
	pthread_mutex_unlock(&defer_lock);
	if (rc != 0)
		(void)CUQ(cuEventDestroy_v2, (ev));
	else
		log_debug("free of %#llx deferred until stream %p passes it",
			  (unsigned long long)dptr, (void *)stream);
	return rc;
}

size_t mem_defer_pending(void)
{
	return __atomic_load_n(&defer_count, __ATOMIC_RELAXED);
}

/* Move the entries that pass test out of the list; returns a malloc'ed
 * array (NULL if none) and its length. */
static struct pending_free *take_where(
	int (*test)(const struct pending_free *p, const void *arg),
	const void *arg, size_t *n_out)
{
	struct pending_free *due = NULL;
	size_t n = 0, keep = 0;

	pthread_mutex_lock(&defer_lock);
	if (defer_count > 0)
		due = malloc(defer_count * sizeof(*due));
	for (size_t i = 0; due != NULL && i < defer_count; i++) {
		struct pending_free *p = &defer_list[i];

		if (test(p, arg))
			due[n++] = *p;
		else
			defer_list[keep++] = *p;
	}
	if (due != NULL)
		__atomic_store_n(&defer_count, keep, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&defer_lock);
	*n_out = n;
	return due;
}

/* Whether the stream has passed the free (arg: wait, which takes all).
 * Inside the caller's scope (relaxed). */
static int is_due(const struct pending_free *p, const void *arg)
{
	int wait = *(const int *)arg;
	CUresult q = wait ? CUDA_SUCCESS : CUQ(cuEventQuery, (p->ev));

	if (!cuq_query_passed(q))
		return 0;
	log_debug("deferred free of %#llx is due (%s, event %d)",
		  (unsigned long long)p->ptr, wait ? "waited" : "queried",
		  (int)q);
	return 1;
}

struct ctx_of {
	const void *ctx;        /* NULL: every context of dev */
	int dev;
};

static int of_ctx(const struct pending_free *p, const void *arg)
{
	const struct ctx_of *c = arg;

	return c->ctx != NULL ? p->ctx == c->ctx : p->dev == c->dev;
}

/* Free what was taken out of the list, waiting for each event first
 * when wait is set. Inside the caller's scope. */
static void release_due(struct pending_free *due, size_t n, int wait)
{
	struct mreg_entry e;

	for (size_t i = 0; i < n; i++) {
		if (wait)
			(void)CUQ(cuEventSynchronize, (due[i].ev));
		(void)CUQ(cuEventDestroy_v2, (due[i].ev));
		/* Gone from the registry: its context was destroyed, and the
		 * driver freed it with the context. */
		if (mreg_remove(MREG_PTR, due[i].ptr, &e) != 0)
			continue;
		if (CUQ(cuMemFree_v2, (due[i].ptr)) != CUDA_SUCCESS)
			log_once(LOG_LVL_WARN, "a deferred free of converted "
				 "memory failed");
		client_footprint_changed(e.dev);
	}
	free(due);
}

void mem_defer_reap(int wait)
{
	struct cuq_scope sc;
	struct pending_free *due;
	size_t n;

	/* The frees wait for the first call after a capture (CUQ_FREES). */
	if (mem_defer_pending() == 0 || cuq_enter(&sc, CUQ_FREES, NULL) != 0)
		return;
	due = take_where(is_due, &wait, &n);
	release_due(due, n, wait);
	cuq_leave(&sc);
}

void mem_defer_drop_ctx(const void *ctx, int dev)
{
	struct ctx_of c = { ctx, dev };
	struct pending_free *due;
	size_t n;

	if (mem_defer_pending() == 0)
		return;
	due = take_where(of_ctx, &c, &n);
	release_due(due, n, 1);
}

void mem_defer_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&defer_lock, &fresh, sizeof(fresh));
	defer_list = NULL;
	defer_count = defer_cap = 0;
}
