/*
 * The GPU lock gate, as the hooks see it: the contract between the hook
 * layer, which knows CUDA, and the gate, which knows the per-GPU lock
 * state. The gate reaches the driver only through the operations below, so
 * its tests can drive it with fakes. Who opens and closes the gate (the
 * scheduler client) uses gate_ctl.h.
 */
#ifndef VSHARE_GATE_H
#define VSHARE_GATE_H

#include <stdint.h>

#define GATE_MAX_GPUS 64

/* What the gate needs from the CUDA side. The functions are called from
 * application threads inside a hook (guard set) and from the client
 * thread through gate_take (no hook active): they must reach the real
 * driver directly, not through the hooked entry points. */
struct gate_cuda_ops {
	/* Device ordinal of the calling thread's current context, or -1 if
	 * there is none. Called only when the thread's context changed (see
	 * current_context); the gate caches the answer per thread. */
	int (*current_device)(void);
	/* Device of a stream's context (-1 if unknown). */
	int (*stream_device)(void *stream);
	/* UUID and total memory of a device; 0 on success. */
	int (*device_info)(int dev, uint8_t uuid[16], uint64_t *total_mem);
	/* Nonzero if the stream is being captured (NULL: the legacy stream). */
	int (*stream_capturing)(void *stream);
	/* Wait for all work this process submitted to a device (every context
	 * it has there); 0 on success. */
	int (*sync_device)(int dev);
	/* Optional (may be NULL): the calling thread's current context
	 * (cuCtxGetCurrent), NULL if none. It must be cheap: the gate calls it
	 * on every submission and calls current_device only when it returns a
	 * context other than the thread's last one. Without it the gate calls
	 * current_device on every submission. */
	void *(*current_context)(void);
	/* Optional (may be NULL): how many devices this process sees, or -1
	 * while the driver cannot tell (not initialized). Asked on the slow
	 * path until it answers; with exactly one device the fast path skips
	 * current_context altogether (every submission goes to device 0; one
	 * from a thread with no context fails in the driver anyway). */
	int (*device_count)(void);
	/* Optional (may be NULL): note the calling thread's current context
	 * as one of its device's, for sync_device. current_device does that
	 * as it answers; a one-device process no longer asks for the device
	 * on its fast path, so the gate calls this on the slow path instead,
	 * where the thread waits for the lock anyway. */
	void (*track_context)(void);
	/* Optional (all four or none): marks on a stream, for pacing
	 * (gate_ctl.h, gate_pace). mark_new: a mark in the calling thread's
	 * current context, NULL if none can be had. mark_record: place it
	 * behind the work submitted to `stream` so far; 0 on success.
	 * mark_state: 1 once the GPU has passed it (or it cannot tell: the
	 * context is gone), 0 while it has not, -1 on an error. mark_free:
	 * give it back. They may be called on any application thread, inside
	 * a hook. */
	void *(*mark_new)(void);
	int   (*mark_record)(void *mark, void *stream);
	int   (*mark_state)(void *mark);
	void  (*mark_free)(void *mark);
};

struct gate_events;

/* Called once from the shim's init, after the real driver is resolved.
 * Reads the gate's settings (VSHARE_DISABLE, VSHARE_SPIN_US). `ev` is how
 * the gate tells its controller that a thread waits (gate_ctl.h). */
void gate_init(const struct gate_cuda_ops *ops, const struct gate_events *ev);

/*
 * Submission hooks bracket the real call with these. gate_enter blocks
 * until this process holds the lock of the GPU the work goes to, then
 * returns a token to hand to gate_exit. A call that is not a submission
 * (stream under capture, no context, gate disabled) gets a token that
 * gate_exit ignores. `stream` is the call's stream, NULL for the legacy
 * default stream or a call without one.
 */
int  gate_enter(void *stream);
void gate_exit(int token);

/*
 * The program's own waits for its GPU work (the hooks of
 * cuStreamSynchronize, cuCtxSynchronize, cuEventSynchronize and of the
 * queries cuStreamQuery, cuEventQuery): not submissions, they pass no
 * gate and never wait here. They tell the use report (gate_ctl.h,
 * gate_use_activity) that work of this program on the calling thread's
 * device is still running. gate_sync_begin .. gate_sync_end bracket a
 * blocking wait: the thread counts as waiting meanwhile, and a wait that
 * lasted past a tick of the coarse clock stamps its end as a time the
 * work was unfinished. gate_sync_unfinished: a query answered "not
 * ready". Nothing is counted while the gate is disabled or the thread
 * has no context.
 */
struct gate_sync {
	int      token;
	uint64_t since;
};
void gate_sync_begin(struct gate_sync *w);
void gate_sync_end(const struct gate_sync *w);
void gate_sync_unfinished(void);

/* The shim's own work on dev (a prefetch of new memory), which must
 * never wait: a token for gate_exit when this process may submit to dev
 * now (its gate is open, or the gate is off), GATE_TRY_CLOSED when it
 * would have to wait for the lock. */
#define GATE_TRY_CLOSED (-2)
int  gate_try_enter(int dev);

/* The process opened a context on dev: learn the GPU's UUID and memory
 * now, as its first submission would, so that the controller can announce
 * the GPU before any work is submitted. 0 when the GPU is known (and its
 * work gated), -1 otherwise (gate disabled, device unreadable). */
int  gate_prepare(int dev);

/* Stream capture began or ended somewhere in this process (hooks of
 * cuStreamBeginCapture* / cuStreamEndCapture). While none is active the
 * fast path does not ask the driver about capture. */
void gate_capture_delta(int delta);
/* Nonzero while a capture is active somewhere in this process (one
 * atomic load): the memory layer does not stage copies then. */
int  gate_capturing(void);

/* pthread_atfork child handler: drop the inherited lock state without
 * touching CUDA. */
void gate_atfork_child(void);

/* Process exit: open every gate for good, so that nobody stays blocked on
 * a gate that nobody will open, and make gate_take give up. Must not
 * deadlock whatever the order of atexit handlers and the driver's own
 * teardown. */
void gate_shutdown(void);

#endif
