/*
 * Internal interface of the CUDA test driver: a libcuda.so.1 that runs the
 * part of the driver API vshare touches in host memory. Device pointers are
 * host addresses, kernels are C functions picked by name, and every stream
 * has a worker thread, so asynchrony is real.
 *
 * Locking: one global mutex (td.lock) guards every table and every stream
 * queue; one condition variable (td.cond) is broadcast whenever an operation
 * completes or a queue changes. Work itself (kernels, copies) runs without
 * the lock, on the stream's worker thread.
 */
#ifndef VSHARE_TD_H
#define VSHARE_TD_H

#include <cuda.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TD_MAX_DEVICES 16
#define TD_MAX_PARAM_BYTES 256
#define TD_MAX_PARAMS 8

/* ---- configuration (td_env.c) ---- */
struct td_device {
	int phys;		/* index among the configured devices */
	char name[256];
	CUuuid uuid;
	size_t total;
	size_t used;		/* this process's non-managed bytes */
	struct CUctx_st *primary;
	unsigned int primary_flags;
	CUmemoryPool default_pool;
	CUmemoryPool current_pool;
};

/* ---- streams and operations (td_stream.c, td_exec.c) ---- */
struct td_dep {
	uint64_t stream_id;
	uint64_t seq;
};

enum td_op_kind {
	TD_OP_KERNEL, TD_OP_COPY, TD_OP_SET,
	TD_OP_HOSTFN, TD_OP_CALLBACK, TD_OP_EVENT, TD_OP_WAIT, TD_OP_FREE,
	TD_OP_PREFETCH, TD_OP_MEMOP,
};

enum td_memop { TD_MEMOP_WRITE, TD_MEMOP_WAIT };

struct td_kernel;

/* One unit of stream work. Graph nodes are ops too (copied on replay). */
struct td_op {
	struct td_op *next;
	enum td_op_kind kind;
	uint64_t seq;
	struct td_dep *deps;
	int ndeps;
	union {
		struct {
			const struct td_kernel *k;
			unsigned char args[TD_MAX_PARAM_BYTES];
			unsigned int grid[3], block[3];
		} kernel;
		struct {
			void *dst;
			const void *src;
			size_t width, height, dpitch, spitch;
			size_t depth, dslice, sslice;	/* 3D: slices */
			const char *name;	/* "HtoD", "DtoH", ... */
		} copy;
		struct {
			void *dst;
			uint32_t value;
			unsigned int elsize;
			size_t width, height, pitch;	/* width in elements */
		} set;
		struct {
			CUhostFn fn;
			CUstreamCallback cb;
			CUstream handle;
			void *data;
		} host;
		struct {
			struct CUevent_st *ev;
			uint64_t gen;
		} event;
		struct {
			CUdeviceptr ptr;
		} mfree;
		struct {
			CUdeviceptr ptr;
			size_t bytes;
			int dst;	/* device ordinal, -1 host, -2 discard */
		} pf;
		struct {
			uint64_t *addr;	/* 32-bit ops use the first half */
			uint64_t value;
			int is64;
			enum td_memop op;
			unsigned int flags;
		} memop;
	} u;
};

struct td_capture;

struct CUstream_st {
	uint32_t magic;
	uint64_t id;
	struct CUctx_st *ctx;
	unsigned int flags;
	int priority;
	int is_legacy, is_per_thread;
	pthread_t owner;	/* per-thread stream: its thread */
	struct td_op *head, *tail;
	uint64_t enqueued, completed;
	int running;		/* worker is executing an op */
	int dying;		/* being destroyed: no new work */
	int stop;
	pthread_t worker;
	struct td_capture *cap;
	struct CUstream_st *next;	/* in ctx->streams */
};

struct CUctx_st {
	uint32_t magic;
	uint64_t id;
	int dev;		/* visible ordinal */
	unsigned int flags;
	int is_primary;
	int refs;		/* primary: retain count */
	int alive;
	unsigned int peers;	/* bit d: peer access to device d enabled */
	struct CUstream_st *legacy;
	struct CUstream_st *streams;	/* all streams incl. legacy, per-thread */
	struct CUctx_st *next;
};

struct CUevent_st {
	uint32_t magic;
	unsigned int flags;
	int refs;
	int destroyed;
	int recorded;		/* a record was issued */
	int done;		/* the latest record has executed */
	uint64_t gen;
	uint64_t stream_id, seq;
	uint64_t time_ns;
	struct td_capture *cap;	/* recorded while its stream was capturing */
};

/* ---- global state (td_core.c) ---- */
struct td_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int inited;
	int ndev;		/* visible devices */
	struct td_device dev[TD_MAX_DEVICES];
	struct CUctx_st *ctxs;
	uint64_t next_id;
	int driver_version;
	int log_fd;
};
extern struct td_state td;

#define TD_MAGIC_CTX 0x43545831u
#define TD_MAGIC_STREAM 0x53545231u
#define TD_MAGIC_EVENT 0x45564e31u
#define TD_MAGIC_MOD 0x4d4f4431u
#define TD_MAGIC_FUNC 0x46554e31u
#define TD_MAGIC_GRAPH 0x47525031u
#define TD_MAGIC_EXEC 0x47455831u
#define TD_MAGIC_POOL 0x504f4f31u

/* td_env.c */
void td_env_load(struct td_state *s);
int td_parse_size(const char *str, size_t *out);

/* td_core.c: initialisation, lock helpers, current context */
void td_lock(void);
void td_unlock(void);
void td_wait(void);
void td_broadcast(void);
CUresult td_check_init(void);
CUresult td_current_ctx(struct CUctx_st **out);
int td_ctx_valid(const struct CUctx_st *c);
uint64_t td_now_ns(void);

/* td_ctx.c */
void td_ctx_forget_current(struct CUctx_st *c);	/* td_core.c */
struct CUctx_st *td_ctx_new(int dev, unsigned int flags, int primary);
CUresult td_ctx_sync(struct CUctx_st *c);

/* td_stream.c: stream resolution and queueing (lock held unless noted) */
#define TD_PTDS 1	/* NULL stream means the per-thread stream */
CUresult td_stream_resolve(CUstream h, int per_thread, struct CUstream_st **out);
struct CUstream_st *td_stream_new(struct CUctx_st *c, unsigned int flags,
				  int priority, int legacy, int per_thread);
CUresult td_stream_destroy(struct CUstream_st *s);	/* lock NOT held */
/* Lock held, s not dying; returns with the lock released. */
void td_stream_destroy_locked(struct CUstream_st *s);
struct td_op *td_op_new(enum td_op_kind kind);
void td_op_free(struct td_op *op);
CUresult td_submit(CUstream h, int per_thread, struct td_op *op, int wait);
void td_stream_wait_seq(struct CUstream_st *s, uint64_t seq);
int td_stream_valid(const struct CUstream_st *s);
struct CUstream_st *td_stream_by_id(uint64_t id);

/* td_exec.c */
void td_exec(struct CUstream_st *s, struct td_op *op);
/* td_memops.c: runs a stream memory operation (worker thread) */
void td_memop_run(const struct td_op *op);

/* td_event.c: marks a record done (worker), drops the op's reference */
void td_event_done(struct CUevent_st *ev, uint64_t gen);
void td_event_drop(struct CUevent_st *ev);	/* lock held */

/* td_devmem.c: device memory accounting (lock held) */
void td_devmem_open(void);
int td_devmem_reserve(int dev, size_t bytes);
void td_devmem_release(int dev, size_t bytes);
size_t td_devmem_free(int dev);

/* td_log.c */
void td_log_open(void);
void td_log_line(uint64_t start, uint64_t end, int dev, uint64_t stream,
		 const char *kind, const char *name, size_t bytes);

/* td_mem.c: allocation registry (lock held) */
enum td_mem_kind {
	TD_MEM_DEVICE, TD_MEM_MANAGED, TD_MEM_HOST, TD_MEM_VMM,
	TD_MEM_REGISTERED,	/* the caller's host memory (cuMemHostRegister) */
};
struct td_alloc {
	uintptr_t base;
	size_t size;		/* bytes mapped */
	size_t counted;		/* bytes counted against the device */
	enum td_mem_kind kind;
	int dev;
	struct CUctx_st *ctx;
	CUmemoryPool pool;
	uint64_t id;
};
struct td_alloc *td_alloc_find(uintptr_t p);
CUresult td_mem_alloc(struct CUctx_st *c, size_t bytes, enum td_mem_kind kind,
		      CUmemoryPool pool, CUdeviceptr *out);
CUresult td_mem_free(uintptr_t p);
struct td_alloc *td_mem_register(uintptr_t base, size_t size,
				 enum td_mem_kind kind, struct CUctx_st *c);
void td_mem_unregister_range(uintptr_t base, size_t size);
void td_mem_free_ctx(struct CUctx_st *c);

/* td_pool.c */
CUresult td_prefetch(CUdeviceptr p, size_t count, int dst, CUstream h, int ptsz);
int td_location_dev(CUmemLocation loc);

/* td_kernel.c */
struct td_kernel {
	const char *name;
	int nparams;
	unsigned char sizes[TD_MAX_PARAMS];
	void (*run)(const unsigned char *args);
};
const struct td_kernel *td_kernel_find(const char *name);
size_t td_kernel_offset(const struct td_kernel *k, int i);
size_t td_kernel_args_size(const struct td_kernel *k);

/* td_graph.c: stream capture */
int td_capture_add(struct CUstream_st *s, struct td_op *op);
CUresult td_capture_check_sync(struct CUstream_st *s);
CUresult td_capture_check_ctx(struct CUctx_st *c);
CUresult td_capture_check_legacy(struct CUstream_st *legacy);
/* A potentially unsafe call (an allocation, a free, an event query or
 * synchronization) while a capture prohibits it for this thread: the
 * capture is invalidated and the call refused, as in the real driver. */
CUresult td_capture_check_unsafe(void);
/* The same, taking the lock. */
CUresult td_capture_check_unsafe_unlocked(void);
/* Memory nodes: an allocation on a capturing stream belongs to the graph
 * (td_capture_mem_add, -1 when out of memory); a free on it is accepted
 * only for such memory (td_capture_mem_owns). Lock held. */
int td_capture_mem_add(struct CUstream_st *s, uintptr_t p);
int td_capture_mem_owns(struct CUstream_st *s, uintptr_t p);
/* A wait on an event recorded during a capture pulls the waiting stream
 * into that capture (fork/join); returns 1 when it did. */
int td_capture_join(struct CUstream_st *s, struct CUevent_st *ev);

#endif
