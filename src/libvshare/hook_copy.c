/*
 * Copy hooks (kind COPY in hooks.def): submissions like the generated
 * ones, whose call the memory layer may stage through pinned buffers
 * (mem_stage.h); what it leaves to the driver (MEM_PASS) goes to the
 * hook's own real variant. The stream is the one hooks.def names: a
 * synchronous call's default stream, a per-thread variant's mapped with
 * PTSZ().
 */
#include "gate.h"
#include "hook_body.h"
#include "mem_alloc.h"
#include "mem_stage.h"

#define COPY_BODY(sym, stream, mem_call, args)                  \
	int tok_;                                               \
	HOOK_ENTER(sym, args);                                  \
	tok_ = gate_enter((void *)(stream));                    \
	r_ = mem_call;                                          \
	if (r_ == MEM_PASS)                                     \
		r_ = real_ args;                                \
	gate_exit(tok_);                                        \
	HOOK_LEAVE()

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	COPY_BODY(cuMemcpyHtoD_v2, NULL,
		  mem_copy_htod(dst, src, n, NULL, 1), (dst, src, n));
}

CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n)
{
	COPY_BODY(cuMemcpyHtoD_v2_ptds, CU_STREAM_PER_THREAD,
		  mem_copy_htod(dst, src, n, CU_STREAM_PER_THREAD, 1),
		  (dst, src, n));
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n,
			      CUstream s)
{
	COPY_BODY(cuMemcpyHtoDAsync_v2, s, mem_copy_htod(dst, src, n, s, 0),
		  (dst, src, n, s));
}

CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src,
				   size_t n, CUstream s)
{
	COPY_BODY(cuMemcpyHtoDAsync_v2_ptsz, PTSZ(s),
		  mem_copy_htod(dst, src, n, PTSZ(s), 0), (dst, src, n, s));
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	COPY_BODY(cuMemcpyDtoH_v2, NULL,
		  mem_copy_dtoh(dst, src, n, NULL, 1), (dst, src, n));
}

CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n)
{
	COPY_BODY(cuMemcpyDtoH_v2_ptds, CU_STREAM_PER_THREAD,
		  mem_copy_dtoh(dst, src, n, CU_STREAM_PER_THREAD, 1),
		  (dst, src, n));
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n,
			      CUstream s)
{
	COPY_BODY(cuMemcpyDtoHAsync_v2, s, mem_copy_dtoh(dst, src, n, s, 0),
		  (dst, src, n, s));
}

CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n,
				   CUstream s)
{
	COPY_BODY(cuMemcpyDtoHAsync_v2_ptsz, PTSZ(s),
		  mem_copy_dtoh(dst, src, n, PTSZ(s), 0), (dst, src, n, s));
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	COPY_BODY(cuMemcpy, NULL, mem_copy_any(dst, src, n, NULL, 1),
		  (dst, src, n));
}

CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	COPY_BODY(cuMemcpy_ptds, CU_STREAM_PER_THREAD,
		  mem_copy_any(dst, src, n, CU_STREAM_PER_THREAD, 1),
		  (dst, src, n));
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
		       CUstream s)
{
	COPY_BODY(cuMemcpyAsync, s, mem_copy_any(dst, src, n, s, 0),
		  (dst, src, n, s));
}

CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n,
			    CUstream s)
{
	COPY_BODY(cuMemcpyAsync_ptsz, PTSZ(s),
		  mem_copy_any(dst, src, n, PTSZ(s), 0), (dst, src, n, s));
}
