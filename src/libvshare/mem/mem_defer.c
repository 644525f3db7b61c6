/*
 * Stream-ordered frees of converted memory. The memory is managed, so
 * cuMemFreeAsync cannot take it; freeing it at once could pull it from
 * under work still queued on the stream. An event recorded on the stream
 * marks the point of the free, and the memory is freed once the event
 * has completed, checked without blocking on later allocation, free and
 * memory-info calls and on each release of the GPU, none of them while
 * a stream capture is active.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "cu_query.h"
#include "gate.h"
#include "hooks.h"
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
	__typeof__(&cuEventCreate) create = REAL(cuEventCreate);
	__typeof__(&cuEventRecord) rec = REAL(cuEventRecord);
	__typeof__(&cuEventDestroy_v2) destroy = REAL(cuEventDestroy_v2);
	CUevent ev;
	int rc = 0;

	if (create == NULL || rec == NULL || destroy == NULL ||
	    create(&ev, CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
		return -1;
	if (rec(ev, stream) != CUDA_SUCCESS) {
		destroy(ev);
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
		destroy(ev);
	else
		log_debug("free of %#llx deferred until stream %p passes it",
			  (unsigned long long)dptr, (void *)stream);
	return rc;
}

size_t mem_defer_pending(void)
{
	return __atomic_load_n(&defer_count, __ATOMIC_RELAXED);
}

/* Move the entries that are due out of the list; returns a malloc'ed
 * array (NULL if none) and its length. */
static struct pending_free *take_due(int wait, size_t *n_out)
{
	__typeof__(&cuEventQuery) query = REAL(cuEventQuery);
	struct pending_free *due = NULL;
	size_t n = 0, keep = 0;

	int mode = wait ? -1 : cuq_relax();

	pthread_mutex_lock(&defer_lock);
	if (defer_count > 0)
		due = malloc(defer_count * sizeof(*due));
	for (size_t i = 0; due != NULL && i < defer_count; i++) {
		struct pending_free *p = &defer_list[i];

		CUresult q = wait || query == NULL ? CUDA_SUCCESS
						    : query(p->ev);

		/* "Not ready" says no, and so does a refusal because of a
		 * capture (one another thread began since the check in
		 * mem_defer_reap); other answers (a destroyed context)
		 * mean nothing more will run before the free. */
		if (q != CUDA_ERROR_NOT_READY &&
		    q != CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED &&
		    q != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED &&
		    q != CUDA_ERROR_CAPTURED_EVENT) {
			due[n++] = *p;
			log_debug("deferred free of %#llx is due (%s, event "
				  "%d)", (unsigned long long)p->ptr,
				  wait ? "waited" : "queried", (int)q);
		} else {
			defer_list[keep++] = *p;
		}
	}
	if (due != NULL)
		__atomic_store_n(&defer_count, keep, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&defer_lock);
	cuq_unrelax(mode);
	*n_out = n;
	return due;
}

/* Free what was taken out of the list, waiting for each event first
 * when wait is set. */
static void release_due(struct pending_free *due, size_t n, int wait)
{
	__typeof__(&cuEventSynchronize) esync = REAL(cuEventSynchronize);
	__typeof__(&cuEventDestroy_v2) destroy = REAL(cuEventDestroy_v2);
	__typeof__(&cuMemFree_v2) mfree = REAL(cuMemFree_v2);
	struct mreg_entry e;

	for (size_t i = 0; i < n; i++) {
		if (wait && esync != NULL)
			esync(due[i].ev);
		if (destroy != NULL)
			destroy(due[i].ev);
		/* Gone from the registry: its context was destroyed, and the
		 * driver freed it with the context. */
		if (mreg_remove(MREG_PTR, due[i].ptr, &e) != 0)
			continue;
		if (mfree != NULL && mfree(due[i].ptr) != CUDA_SUCCESS)
			log_once(LOG_LVL_WARN, "a deferred free of converted "
				 "memory failed");
		client_footprint_changed(e.dev);
	}
	free(due);
}

void mem_defer_reap(int wait)
{
	struct pending_free *due;
	size_t n;

	/* Neither the event queries nor the frees may run while a capture
	 * is active (the driver refuses them and invalidates the capture):
	 * the frees wait for the first call after it. */
	if (mem_defer_pending() == 0)
		return;
	cuq_frees_enter();
	if (!gate_capturing()) {
		due = take_due(wait, &n);
		release_due(due, n, wait);
	}
	cuq_frees_leave();
}

void mem_defer_drop_ctx(const void *ctx, int dev)
{
	struct pending_free *due = NULL;
	size_t n = 0, keep = 0;

	if (mem_defer_pending() == 0)
		return;
	pthread_mutex_lock(&defer_lock);
	due = malloc(defer_count * sizeof(*due));
	for (size_t i = 0; due != NULL && i < defer_count; i++) {
		struct pending_free *p = &defer_list[i];

		if (ctx != NULL ? p->ctx == ctx : p->dev == dev)
			due[n++] = *p;
		else
			defer_list[keep++] = *p;
	}
	if (due != NULL)
		__atomic_store_n(&defer_count, keep, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&defer_lock);
	release_due(due, n, 1);
}

void mem_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&defer_lock, &fresh, sizeof(fresh));
	defer_list = NULL;
	defer_count = defer_cap = 0;
	mreg_atfork_child();
}
