/*
 * Driver queries through the real entry points (cu_query.c).
 */
#ifndef VSHARE_CU_QUERY_H
#define VSHARE_CU_QUERY_H

#include <stdint.h>

#include "hooks.h"

/* The calling thread's current context, NULL if none. */
void *cuq_current_context(void);
/* Device of the calling thread's current context (-1 if none), cached
 * per thread by context; a context seen here for the first time is
 * tracked (ctx_track.h), so that a release synchronizes it. */
int  cuq_current_device(void);
/* Note the calling thread's current context, as cuq_current_device does
 * (the gate's track_context). */
void cuq_track_current(void);
/* Device of a stream's context (-1 if unknown). */
int  cuq_stream_device(void *stream);
/* Nonzero if the stream is being captured. */
int  cuq_stream_capturing(void *stream);
/*
 * The one path for the shim's own driver calls. Every call the shim makes
 * of its own (one the program did not make: an event query of the cache,
 * a deferred free, a staged copy's wait) runs through CUQ() or inside a
 * scope (cuq_enter ... cuq_leave), with these rules in force:
 *
 * - relaxed capture mode (cuThreadExchangeStreamCaptureMode): while a
 *   capture is active, the driver refuses the potentially unsafe calls
 *   (allocations and frees of every kind, event and stream queries and
 *   waits, pool attributes, advice) of the capturing thread and, for a
 *   global capture, of every thread in global mode, and invalidates the
 *   capture; in relaxed mode it allows them all (the table the real
 *   driver answered, tests/driver/capture_rule.txt). The program made
 *   only an allowed call (a copy, a memset, a launch), so the shim's calls
 *   behind it must not be refused. A call that stands for the program's
 *   own (its allocation or free, converted: CUQ_PROG) keeps the program's
 *   mode instead, so that the driver answers it as it would have answered
 *   the program;
 * - cancellation off: a thread cancelled inside one of the shim's waits
 *   would leave the shim's state behind (a staging ring taken, a block
 *   half freed);
 * - with CUQ_FREES, only while no capture is active in the process
 *   (gate_capturing): the shim's frees and trims, which it can postpone,
 *   wait for the first call after the capture;
 * - with a context, that context current (pushed, and popped at the end,
 *   when another one is).
 *
 * Scopes nest per thread: the outermost one enters the capture mode and
 * the cancellation state, inner ones and CUQ() inside them only count, so
 * a loop of calls pays two mode changes in all.
 */
#define CUQ_FREES 1u

struct cuq_scope {
	void *pushed;           /* the context pushed, to pop */
	int entered;
};

/* 0 when the rules are in force (then cuq_leave), -1 when not entered:
 * CUQ_FREES during a capture, or ctx gone. */
int  cuq_enter(struct cuq_scope *sc, unsigned rules, const void *ctx);
void cuq_leave(struct cuq_scope *sc);

/* The rules without a scope object (no context, no CUQ_FREES). */
void cuq_rules_in(void);
void cuq_rules_out(void);
/* The program's capture mode around a call that stands for its own. */
int  cuq_prog_in(void);
void cuq_prog_out(int saved);

/* One driver call of the shim's own, under the rules:
 * r = CUQ(cuEventQuery, (ev)). CUDA_ERROR_NOT_INITIALIZED when the driver
 * lacks the function. */
#define CUQ(fn, args) __extension__ ({                                    \
	__typeof__(&fn) cuq_f_ = REAL(fn);                                \
	CUresult cuq_r_ = CUDA_ERROR_NOT_INITIALIZED;                     \
	if (cuq_f_ != NULL) {                                             \
		cuq_rules_in();                                           \
		cuq_r_ = cuq_f_ args;                                     \
		cuq_rules_out();                                          \
	}                                                                 \
	cuq_r_; })

/* A call made for the program (its allocation or free, converted): in
 * the program's capture mode, cancellation off. */
#define CUQ_PROG(fn, args) __extension__ ({                               \
	__typeof__(&fn) cuq_f_ = REAL(fn);                                \
	CUresult cuq_r_ = CUDA_ERROR_NOT_INITIALIZED;                     \
	if (cuq_f_ != NULL) {                                             \
		int cuq_m_ = cuq_prog_in();                               \
		cuq_r_ = cuq_f_ args;                                     \
		cuq_prog_out(cuq_m_);                                     \
	}                                                                 \
	cuq_r_; })

/* A query that the driver answers beside every capture and that never
 * waits (the current context, a stream's context or device, pointer
 * attributes: capture_rule.txt allows them in every mode): made as it
 * is, on the hot paths. */
#define CUQ_QUERY(fn, args) __extension__ ({                              \
	__typeof__(&fn) cuq_f_ = REAL(fn);                                \
	cuq_f_ != NULL ? cuq_f_ args : CUDA_ERROR_NOT_INITIALIZED; })

/* Whether an event query's answer says the GPU has passed the event:
 * "not ready" says no, and so does a refusal because of a capture (it
 * tells nothing of the event); any other answer (a destroyed context)
 * means nothing more will run before it. */
int  cuq_query_passed(int answer);
/* UUID and physical memory of a device; 0 on success. */
int  cuq_device_info(int dev, uint8_t uuid[16], uint64_t *total);
/* Physical memory of a device (cached), 0 if unknown. */
uint64_t cuq_device_total(int dev);
/* Devices this process sees, -1 while the driver cannot tell. */
int  cuq_device_count(void);
/* Fork child (mem_state.c): forget the cached device of this thread. */
void cuq_atfork_child(void);

#endif
