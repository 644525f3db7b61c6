/*
 * One large memcpy shared with helper threads (pcopy.c). The shim stages
 * copies from pageable host memory through its pinned buffers; one CPU
 * core's copy rate (about 6 GB/s on the H100 machine) was most of such a
 * copy's time, where the driver's own path for device memory overlaps
 * the copy engine with it (docs/benchmarks.md, "Interactive bursts").
 */
#ifndef VSHARE_PCOPY_H
#define VSHARE_PCOPY_H

#include <stddef.h>
#include <stdint.h>

/* Copies below this are one memcpy: waking a helper costs more. */
#define PCOPY_MIN   (1u << 20)
/* The piece a thread takes at a time. */
#define PCOPY_PART  (256u << 10)
/* Helper threads at most. */
#define PCOPY_HELPERS_MAX 7
/* Helpers by default: one fewer than the CPUs this process may run on,
 * at most PCOPY_HELPERS_AUTO. */
#define PCOPY_HELPERS_AUTO 3

/* How many helpers to use, before the first pcopy (0: none, plain
 * memcpy; -1: the default for the CPUs the process may use). */
void pcopy_setup(int helpers);
/* memcpy(dst, src, n), dst and src not overlapping. Large copies are
 * split with the helpers, started at the first; when they cannot be
 * started, or another thread's copy has them, the caller copies alone. */
void pcopy(void *dst, const void *src, size_t n);
/* Helpers running now, and the pieces they have copied (stats, tests). */
int pcopy_helpers(void);
uint64_t pcopy_helped(void);
/* Fork child: the parent's helpers are not here; start again on demand. */
void pcopy_atfork_child(void);

#endif
