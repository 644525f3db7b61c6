/*
 * The GPU lock gate: the contract between the hook layer (hooks, mem_*),
 * which knows CUDA, and the gate and scheduler client (gate_*, client_*),
 * which know the lock. The gate reaches the driver only through the
 * operations below, so its tests can drive it with fakes.
 */
#ifndef VSHARE_GATE_H
#define VSHARE_GATE_H

#include <stdint.h>

#define GATE_MAX_GPUS 64

/* What the gate needs from the CUDA side. The functions are called from
 * application threads inside a hook (guard set) and from the gate's own
 * client thread (no hook active): they must reach the real driver
 * directly, not through the hooked entry points. */
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
	/* This process's footprint on a device, in bytes. */
	void (*footprint)(int dev, uint64_t *managed, uint64_t *pinned);
	/* Move this process's managed memory of a device to the GPU
	 * (to_host = 0) or to host memory (to_host = 1), in bulk, and wait. */
	void (*prefetch)(int dev, int to_host);
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
};

/* Called once from the shim's init, after the real driver is resolved. */
void gate_init(const struct gate_cuda_ops *ops);

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

/* Stream capture began or ended somewhere in this process (hooks of
 * cuStreamBeginCapture* / cuStreamEndCapture). While none is active the
 * fast path does not ask the driver about capture. */
void gate_capture_delta(int delta);

/* The memory registry changed this process's footprint on a device. */
void gate_footprint_changed(int dev);

/* pthread_atfork child handler: drop the inherited connection and lock
 * state without touching CUDA. */
void gate_atfork_child(void);

/* Process exit: release every lock, stop the client thread. Must not
 * deadlock whatever the order of atexit handlers and the driver's own
 * teardown. */
void gate_shutdown(void);

#endif
