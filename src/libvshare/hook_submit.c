/*
 * The hooks whose body is the same for every symbol of their kind,
 * generated from hooks.def: submissions pass the gate, capture begin/end
 * keep the gate's count of active captures, the program's waits and
 * queries tell the gate that its work is still running.
 */
#include "gate.h"
#include "cu_query.h"
#include "hook_body.h"

#define H_BODY_SUBMIT(sym, stream, params, args)                          \
CUresult sym params                                                       \
{                                                                         \
	int tok_;                                                         \
	HOOK_ENTER(sym, args);                                            \
	tok_ = gate_enter((void *)(stream));                              \
	r_ = real_ args;                                                  \
	gate_exit(tok_);                                                  \
	HOOK_LEAVE();                                                     \
}

/* Counted before the capture begins, so that no call of the shim's that
 * checks for captures (gate_capturing) can miss one in progress; a free
 * of the shim's own already under way runs in relaxed mode, which the
 * driver allows beside the capture (cu_query.h). A begin the driver
 * refuses is taken back. */
#define H_BODY_CAPTURE_BEGIN(sym, stream, params, args)                   \
CUresult sym params                                                       \
{                                                                         \
	HOOK_ENTER(sym, args);                                            \
	gate_capture_delta(1);                                            \
	r_ = real_ args;                                                  \
	if (r_ != CUDA_SUCCESS)                                           \
		gate_capture_delta(-1);                                   \
	HOOK_LEAVE();                                                     \
}

/* Ending a capture can fail (an invalidated capture) and still end it, so
 * the count follows the stream's state, not the return code. */
#define H_BODY_CAPTURE_END(sym, stream, params, args)                     \
CUresult sym params                                                       \
{                                                                         \
	int was_;                                                         \
	HOOK_ENTER(sym, args);                                            \
	was_ = cuq_stream_capturing((void *)(stream));                    \
	r_ = real_ args;                                                  \
	if (was_ && (r_ == CUDA_SUCCESS ||                                \
		     !cuq_stream_capturing((void *)(stream))))            \
		gate_capture_delta(-1);                                   \
	HOOK_LEAVE();                                                     \
}

/* A wait of the program's for its own work (gate.h, gate_sync_begin):
 * the driver's call unchanged, inside the gate's count of waiting
 * threads (which a thread cancelled inside the driver's wait leaves at
 * its end). Not a submission: no gate to pass and nothing asked of the
 * driver but the thread's context, so a capture or a closed gate makes
 * no difference to it. */
#define H_BODY_SYNC(sym, stream, params, args)                            \
CUresult sym params                                                       \
{                                                                         \
	struct gate_sync w_;                                              \
	HOOK_ENTER(sym, args);                                            \
	gate_sync_begin(&w_);                                             \
	r_ = real_ args;                                                  \
	gate_sync_end(&w_);                                               \
	HOOK_LEAVE();                                                     \
}

/* A query of the program's: its answer unchanged; "not ready" says its
 * work was still running at this time. */
#define H_BODY_QUERY(sym, stream, params, args)                           \
CUresult sym params                                                       \
{                                                                         \
	HOOK_ENTER(sym, args);                                            \
	r_ = real_ args;                                                  \
	if (r_ == CUDA_ERROR_NOT_READY)                                   \
		gate_sync_unfinished();                                   \
	HOOK_LEAVE();                                                     \
}

#define H_BODY_COPY(sym, stream, params, args)
#define H_BODY_ALLOC(sym, stream, params, args)
#define H_BODY_FREE(sym, stream, params, args)
#define H_BODY_PIN(sym, stream, params, args)
#define H_BODY_UNPIN(sym, stream, params, args)
#define H_BODY_INFO(sym, stream, params, args)
#define H_BODY_CTX(sym, stream, params, args)
#define H_BODY_RESOLVE(sym, stream, params, args)
#define H_BODY_REAL(sym, stream, params, args)

#define H(kind, sym, base, since, pt, stream, params, args) \
	H_BODY_##kind(sym, stream, params, args)
#include "hooks.def"
#undef H
