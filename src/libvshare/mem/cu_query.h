/*
 * Driver queries through the real entry points (cu_query.c).
 */
#ifndef VSHARE_CU_QUERY_H
#define VSHARE_CU_QUERY_H

#include <stdint.h>

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
/* While a capture is active, the driver refuses the calling thread's
 * potentially unsafe calls (event queries and synchronizations,
 * allocations) and invalidates the capture, unless the thread is in
 * relaxed capture mode. The shim's own such calls, which a program's
 * stream-ordered call does not make, are made between cuq_relax (the
 * thread's mode to restore, -1 when it could not be changed) and
 * cuq_unrelax. */
int  cuq_relax(void);
void cuq_unrelax(int old);
/* Whether an event query's answer says the GPU has passed the event:
 * "not ready" says no, and so does a refusal because of a capture (it
 * tells nothing of the event); any other answer (a destroyed context)
 * means nothing more will run before it. */
int  cuq_query_passed(int answer);
/* The shim's own frees (deferred frees, cache trims) must not meet a
 * capture that begins meanwhile: the driver would refuse a free and
 * invalidate the capture. cuq_frees_enter counts the calling thread in,
 * then checks for captures (gate_capturing): 1 when it may free (then
 * cuq_frees_leave after the frees), 0 when a capture is active (not
 * counted in). The hook of a capture's begin counts the capture, then
 * waits (2 s at most) until no thread is inside (cuq_frees_wait). So
 * either the freeing thread sees the capture, or the begin waits for its
 * frees. */
int  cuq_frees_enter(void);
void cuq_frees_leave(void);
void cuq_frees_wait(void);
/* UUID and physical memory of a device; 0 on success. */
int  cuq_device_info(int dev, uint8_t uuid[16], uint64_t *total);
/* Physical memory of a device (cached), 0 if unknown. */
uint64_t cuq_device_total(int dev);
/* Devices this process sees, -1 while the driver cannot tell. */
int  cuq_device_count(void);
void cuq_atfork_child(void);

#endif
