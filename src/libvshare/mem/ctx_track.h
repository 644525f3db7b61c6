/*
 * The contexts this process has, by device, so that a release of a GPU
 * can synchronize every one of them. Filled by the context hooks and by
 * the contexts seen current on submitting threads.
 */
#ifndef VSHARE_CTX_TRACK_H
#define VSHARE_CTX_TRACK_H

#include <cuda.h>

#define CTX_TRACK_MAX 256

/* Remember ctx on dev; primary = 1 counts one retain of a primary
 * context. Known contexts are not duplicated. */
void ctx_track(CUcontext ctx, int dev, int primary);
void ctx_untrack(CUcontext ctx);
/* Retains of a known primary context (0 for others and unknown ones). */
int  ctx_primary_refs(CUcontext ctx);
/* A primary context release: forgotten when its retains reach zero. */
void ctx_primary_release(int dev);
/* A primary context reset: forgotten at once. */
void ctx_primary_reset(int dev);
/* The primary context of dev, if the hooks saw it retained; NULL if not. */
CUcontext ctx_primary_of(int dev);
/* Device of a known context, -1 if unknown. */
int  ctx_device_of(CUcontext ctx);
/* Up to max contexts of dev (any device if dev < 0); returns the count. */
int  ctx_list(int dev, CUcontext *out, int max);
void ctx_atfork_child(void);

#endif
