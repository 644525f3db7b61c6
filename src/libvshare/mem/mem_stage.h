/*
 * Copies between pageable host memory and converted (managed) memory,
 * staged through the shim's own pinned buffers (mem_stage.c). The
 * driver's path for such a copy goes through the managed pages on the
 * CPU side, which is several times slower than a pinned copy while the
 * GPU is time-sliced with another process (docs/benchmarks.md). The copy
 * hooks (hook_copy.c) hand every host-to-device, device-to-host and
 * unified-address copy here after the gate; what is not staged comes
 * back as MEM_PASS for the hook's own real call.
 */
#ifndef VSHARE_MEM_STAGE_H
#define VSHARE_MEM_STAGE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

/* Copies below this pass through: one pageable copy of that size costs
 * less than the shim's pointer queries would save. */
#ifndef STAGE_MIN
#define STAGE_MIN   (64u << 10)
#endif
/* One pinned buffer; a ring has up to STAGE_NBUF of them, allocated as
 * copies need them: a copy of up to STAGE_CHUNK * STAGE_NBUF bytes never
 * waits for a buffer. Beside another process's kernels, each wait for
 * the DMA into managed memory is a wait for this context's time slice on
 * the GPU (docs/benchmarks.md), so a copy should wait once, at its end. */
#ifndef STAGE_CHUNK
#define STAGE_CHUNK (4u << 20)
#endif
#ifndef STAGE_NBUF
#define STAGE_NBUF  8
#endif

/* stream: the call's stream, a per-thread variant's already mapped with
 * PTSZ(); a synchronous call passes the default stream it uses (NULL or
 * CU_STREAM_PER_THREAD) and sync = 1. MEM_PASS when not staged. */
CUresult mem_copy_htod(CUdeviceptr dst, const void *src, size_t n,
		       CUstream stream, int sync);
CUresult mem_copy_dtoh(void *dst, CUdeviceptr src, size_t n,
		       CUstream stream, int sync);
/* cuMemcpy, cuMemcpyAsync: unified addresses, either direction. */
CUresult mem_copy_any(CUdeviceptr dst, CUdeviceptr src, size_t n,
		      CUstream stream, int sync);

struct mem_stage_stats {
	uint64_t htod;          /* copies staged host to device */
	uint64_t dtoh;          /* copies staged device to host */
	uint64_t bytes;         /* bytes staged */
	uint64_t rings;         /* rings of buffers held now */
};
void mem_stage_stats(struct mem_stage_stats *out);

/* A context is about to be destroyed (or, ctx NULL, every context of dev
 * by a primary context reset): its buffers and events go while it still
 * exists. */
void mem_stage_drop_ctx(const void *ctx, int dev);
/* Fork child: forget every buffer without a CUDA call. */
void mem_stage_atfork_child(void);

#endif
