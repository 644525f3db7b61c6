/*
 * Stream capture and graphs. While a stream captures, the operations
 * submitted to it are appended to a graph instead of run. A graph here is
 * the captured operations in submission order (a valid serialisation of
 * the real DAG); launching an executable graph queues copies of them on
 * the launch stream. A wait on an event recorded during a capture pulls
 * the waiting stream into the same capture, which covers fork/join.
 */
#include "td.h"

#include <stdlib.h>
#include <string.h>

struct CUgraph_st {
	uint32_t magic;
	struct td_op *nodes;	/* array of op copies (next/deps unused) */
	size_t n, cap;
	uintptr_t *mem;		/* memory allocated in its capture */
	size_t nmem;
};

struct CUgraphExec_st {
	uint32_t magic;
	struct td_op *nodes;
	size_t n;
};

struct td_capture {
	uint64_t id;
	int refs;		/* streams in the capture */
	int mode;
	int invalidated;
	pthread_t thread;
	struct CUgraph_st *graph;
	int external;		/* capturing into the caller's graph */
};

static struct CUgraph_st *graph_new(void)
{
	struct CUgraph_st *g = calloc(1, sizeof(*g));

	if (g)
		g->magic = TD_MAGIC_GRAPH;
	return g;
}

/* Lock held. The memory that the graph's capture allocated goes with it. */
static void graph_free(struct CUgraph_st *g)
{
	if (!g)
		return;
	g->magic = 0;
	for (size_t i = 0; i < g->nmem; i++)
		td_mem_free(g->mem[i]);
	free(g->mem);
	free(g->nodes);
	free(g);
}

/* Lock held. Takes ownership of op. Returns 0, or -1 when out of memory. */
int td_capture_add(struct CUstream_st *s, struct td_op *op)
{
	struct CUgraph_st *g = s->cap->graph;

	if (op->kind == TD_OP_EVENT) {
		/* A record inside a capture marks a point in the graph that
		 * other streams may join from; nothing is queued. */
		op->u.event.ev->cap = s->cap;
		op->u.event.ev->recorded = 0;
		td_event_drop(op->u.event.ev);
		td_op_free(op);
		return 0;
	}
	if (op->kind == TD_OP_WAIT || op->kind == TD_OP_FREE) {
		td_op_free(op);
		return 0;
	}
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 16;
		struct td_op *n = realloc(g->nodes, ncap * sizeof(*n));

		if (!n) {
			td_op_free(op);
			return -1;
		}
		g->nodes = n;
		g->cap = ncap;
	}
	g->nodes[g->n] = *op;
	g->nodes[g->n].next = NULL;
	g->nodes[g->n].deps = NULL;
	g->nodes[g->n].ndeps = 0;
	g->n++;
	td_op_free(op);
	return 0;
}

/* Lock held. A synchronous call on a capturing stream is not allowed and
 * invalidates the capture, as in the real driver. */
CUresult td_capture_check_sync(struct CUstream_st *s)
{
	s->cap->invalidated = 1;
	return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* Whether a capture forbids a potentially unsafe call of this thread,
 * in capture interaction mode mode: a capture of its own (not begun
 * relaxed), and for a thread in global mode any other thread's capture
 * begun in global mode. */
static int forbids(const struct td_capture *cap, int mode)
{
	if (cap->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return 0;
	if (pthread_equal(cap->thread, pthread_self()))
		return 1;
	return cap->mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
	       mode == CU_STREAM_CAPTURE_MODE_GLOBAL;
}

/* Lock held. Invalidates the captures of c that forbid the call; the
 * call's answer. */
static CUresult forbidden_in(struct CUctx_st *c, int mode)
{
	struct CUstream_st *s;
	CUresult rc = CUDA_SUCCESS;

	for (s = c->streams; s; s = s->next) {
		if (!s->cap || !forbids(s->cap, mode))
			continue;
		s->cap->invalidated = 1;
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return rc;
}

/* Lock held. A context-wide synchronisation is illegal while any stream of
 * the context captures, whatever the capture's mode, the calling thread or
 * its mode; the captures are invalidated. */
CUresult td_capture_check_ctx(struct CUctx_st *c)
{
	struct CUstream_st *s;
	CUresult rc = CUDA_SUCCESS;

	for (s = c->streams; s; s = s->next) {
		if (!s->cap)
			continue;
		s->cap->invalidated = 1;
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	}
	return rc;
}

/* Lock held. Work on the legacy stream would make it depend on a blocking
 * stream that captures (outside relaxed mode): the real driver refuses it
 * and invalidates that capture. */
CUresult td_capture_check_legacy(struct CUstream_st *legacy)
{
	struct CUstream_st *s;
	CUresult rc = CUDA_SUCCESS;

	for (s = legacy->ctx->streams; s; s = s->next) {
		if (!s->cap || (s->flags & CU_STREAM_NON_BLOCKING) ||
		    s->cap->mode == CU_STREAM_CAPTURE_MODE_RELAXED)
			continue;
		s->cap->invalidated = 1;
		rc = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
	}
	return rc;
}

/* This thread's capture interaction mode (cuThreadExchangeStreamCaptureMode). */
static __thread int thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

/* Lock held. The driver's rule for potentially unsafe calls (forbids),
 * over every context; a thread in relaxed mode may make them. */
CUresult td_capture_check_unsafe(void)
{
	struct CUctx_st *c;
	CUresult rc = CUDA_SUCCESS;

	if (thread_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_SUCCESS;
	for (c = td.ctxs; c; c = c->next)
		if (forbidden_in(c, thread_mode) != CUDA_SUCCESS)
			rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	return rc;
}

CUresult td_capture_check_unsafe_unlocked(void)
{
	CUresult rc;

	td_lock();
	rc = td_capture_check_unsafe();
	td_unlock();
	return rc;
}

/* Lock held. An allocation on a capturing stream is a memory node of the
 * capture's graph: here the memory is handed out at once and belongs to
 * the graph, which frees it when it is destroyed. */
int td_capture_mem_add(struct CUstream_st *s, uintptr_t p)
{
	struct CUgraph_st *g = s->cap->graph;
	uintptr_t *m = realloc(g->mem, (g->nmem + 1) * sizeof(*m));

	if (!m)
		return -1;
	m[g->nmem++] = p;
	g->mem = m;
	return 0;
}

/* Lock held. Whether p was allocated in s's capture: only such memory may
 * be freed inside it (a free node); the free itself is left to the graph. */
int td_capture_mem_owns(struct CUstream_st *s, uintptr_t p)
{
	const struct CUgraph_st *g = s->cap->graph;

	for (size_t i = 0; i < g->nmem; i++)
		if (g->mem[i] == p)
			return 1;
	return 0;
}

int td_capture_join(struct CUstream_st *s, struct CUevent_st *ev)
{
	if (!ev->cap)
		return 0;
	if (!s->cap) {
		s->cap = ev->cap;
		s->cap->refs++;
	}
	return 1;
}

static void capture_put(struct td_capture *cap)
{
	if (--cap->refs == 0) {
		if (!cap->external)
			graph_free(cap->graph);
		free(cap);
	}
}

/* Starts a capture on h, into a new graph or into the caller's. */
static CUresult begin(CUstream h, int mode, int ptsz, struct CUgraph_st *into)
{
	struct CUstream_st *s;
	struct td_capture *cap;
	CUresult rc;

	if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
	    mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && s->is_legacy)
		rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (rc == CUDA_SUCCESS && s->cap)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	if (rc != CUDA_SUCCESS) {
		td_unlock();
		return rc;
	}
	if (into && into->magic != TD_MAGIC_GRAPH) {
		td_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	cap = calloc(1, sizeof(*cap));
	if (cap)
		cap->graph = into ? into : graph_new();
	if (cap)
		cap->external = into != NULL;
	if (!cap || !cap->graph) {
		free(cap);
		td_unlock();
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	cap->id = td.next_id++;
	cap->refs = 1;
	cap->mode = mode;
	cap->thread = pthread_self();
	s->cap = cap;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture(CUstream hStream)
{
	return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, 0, NULL);
}

CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
	return begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, TD_PTDS, NULL);
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin(hStream, (int)mode, 0, NULL);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin(hStream, (int)mode, TD_PTDS, NULL);
}

/* Nodes go to the end of hGraph; dependencies are not modelled (the
 * graph is a sequence). */
CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
				     const CUgraphNode *dependencies,
				     const CUgraphEdgeData *dependencyData,
				     size_t numDependencies,
				     CUstreamCaptureMode mode)
{
	(void)dependencies;
	(void)dependencyData;
	(void)numDependencies;
	if (!hGraph)
		return CUDA_ERROR_INVALID_VALUE;
	return begin(hStream, (int)mode, 0, hGraph);
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
					  const CUgraphNode *dependencies,
					  const CUgraphEdgeData *dependencyData,
					  size_t numDependencies,
					  CUstreamCaptureMode mode)
{
	(void)dependencies;
	(void)dependencyData;
	(void)numDependencies;
	if (!hGraph)
		return CUDA_ERROR_INVALID_VALUE;
	return begin(hStream, (int)mode, TD_PTDS, hGraph);
}

static CUresult end(CUstream h, CUgraph *out, int ptsz)
{
	struct CUstream_st *s, *o;
	struct td_capture *cap;
	CUresult rc;

	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && !s->cap)
		rc = CUDA_ERROR_ILLEGAL_STATE;
	if (rc != CUDA_SUCCESS) {
		td_unlock();
		return rc;
	}
	cap = s->cap;
	/* Every stream that joined the capture leaves it with the origin. */
	for (o = s->ctx->streams; o; o = o->next)
		if (o->cap == cap) {
			o->cap = NULL;
			cap->refs--;
		}
	*out = NULL;
	if (cap->invalidated) {
		rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
	} else {
		*out = cap->graph;
		cap->graph = NULL;
		cap->external = 0;
	}
	cap->refs++;
	capture_put(cap);
	td_unlock();
	return rc;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end(hStream, phGraph, 0);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end(hStream, phGraph, TD_PTDS);
}

/* Lock held. */
static CUstreamCaptureStatus status_of(const struct CUstream_st *s)
{
	if (!s->cap)
		return CU_STREAM_CAPTURE_STATUS_NONE;
	return s->cap->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED :
		CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

static CUresult info(CUstream h, int ptsz, CUstreamCaptureStatus *st,
		     cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
		     const CUgraphEdgeData **edges, size_t *ndeps)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!st)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS) {
		*st = status_of(s);
		if (id && s->cap)
			*id = s->cap->id;
		if (graph)
			*graph = s->cap ? s->cap->graph : NULL;
		if (deps)
			*deps = NULL;
		if (edges)
			*edges = NULL;
		if (ndeps)
			*ndeps = 0;
	}
	td_unlock();
	return rc;
}

CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st)
{
	return info(h, 0, st, NULL, NULL, NULL, NULL, NULL);
}

CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st)
{
	return info(h, TD_PTDS, st, NULL, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st,
				cuuint64_t *id)
{
	return info(h, 0, st, id, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *st,
				     cuuint64_t *id)
{
	return info(h, TD_PTDS, st, id, NULL, NULL, NULL, NULL);
}

CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st,
				   cuuint64_t *id, CUgraph *g,
				   const CUgraphNode **deps, size_t *n)
{
	return info(h, 0, st, id, g, deps, NULL, n);
}

CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st,
					cuuint64_t *id, CUgraph *g,
					const CUgraphNode **deps, size_t *n)
{
	return info(h, TD_PTDS, st, id, g, deps, NULL, n);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st,
				   cuuint64_t *id, CUgraph *g,
				   const CUgraphNode **deps,
				   const CUgraphEdgeData **edges, size_t *n)
{
	return info(h, 0, st, id, g, deps, edges, n);
}

CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st,
					cuuint64_t *id, CUgraph *g,
					const CUgraphNode **deps,
					const CUgraphEdgeData **edges, size_t *n)
{
	return info(h, TD_PTDS, st, id, g, deps, edges, n);
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
	int old;

	if (!mode || (int)*mode < CU_STREAM_CAPTURE_MODE_GLOBAL ||
	    (int)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	old = thread_mode;
	thread_mode = (int)*mode;
	*mode = (CUstreamCaptureMode)old;
	return CUDA_SUCCESS;
}

CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	*phGraph = graph_new();
	return *phGraph ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuGraphDestroy(CUgraph hGraph)
{
	if (!hGraph || hGraph->magic != TD_MAGIC_GRAPH)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	graph_free(hGraph);
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
	size_t i;

	if (!hGraph || hGraph->magic != TD_MAGIC_GRAPH || !numNodes)
		return CUDA_ERROR_INVALID_VALUE;
	if (nodes) {
		/* Node handles are opaque indices; nothing accepts them yet. */
		for (i = 0; i < *numNodes && i < hGraph->n; i++)
			nodes[i] = (CUgraphNode)(uintptr_t)(i + 1);
		*numNodes = i;
	} else {
		*numNodes = hGraph->n;
	}
	return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g)
{
	struct CUgraphExec_st *x;

	if (!out || !g || g->magic != TD_MAGIC_GRAPH)
		return CUDA_ERROR_INVALID_VALUE;
	x = calloc(1, sizeof(*x));
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x->magic = TD_MAGIC_EXEC;
	x->n = g->n;
	if (g->n) {
		x->nodes = malloc(g->n * sizeof(*x->nodes));
		if (!x->nodes) {
			free(x);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(x->nodes, g->nodes, g->n * sizeof(*x->nodes));
	}
	*out = x;
	return CUDA_SUCCESS;
}

CUresult cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
				     unsigned long long flags)
{
	(void)flags;
	return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph,
			    CUgraphNode *phErrorNode, char *logBuffer,
			    size_t bufferSize)
{
	(void)phErrorNode;
	if (logBuffer && bufferSize)
		logBuffer[0] = '\0';
	return instantiate(phGraphExec, hGraph);
}

CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph,
			       CUgraphNode *phErrorNode, char *logBuffer,
			       size_t bufferSize)
{
	return cuGraphInstantiate(phGraphExec, hGraph, phErrorNode, logBuffer,
				  bufferSize);
}

CUresult cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	if (!hGraphExec || hGraphExec->magic != TD_MAGIC_EXEC)
		return CUDA_ERROR_INVALID_VALUE;
	hGraphExec->magic = 0;
	free(hGraphExec->nodes);
	free(hGraphExec);
	return CUDA_SUCCESS;
}

static CUresult graph_launch(CUgraphExec x, CUstream h, int ptsz)
{
	size_t i;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!x || x->magic != TD_MAGIC_EXEC)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < x->n && rc == CUDA_SUCCESS; i++) {
		struct td_op *op = td_op_new(x->nodes[i].kind);

		if (!op)
			return CUDA_ERROR_OUT_OF_MEMORY;
		*op = x->nodes[i];
		rc = td_submit(h, ptsz, op, 0);
	}
	return rc;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, 0);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, TD_PTDS);
}

CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	(void)hStream;
	return hGraphExec && hGraphExec->magic == TD_MAGIC_EXEC ?
		CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return cuGraphUpload(hGraphExec, hStream);
}
