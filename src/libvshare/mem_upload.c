/*
 * Copies from the host into managed memory. The driver serves a copy from
 * pageable host memory into managed memory with the CPU, which moves the
 * destination's pages to the host; the next kernel then pulls them back
 * one fault at a time. Beside another process's work on the GPU that was
 * measured on an H100 at 48 ms for a burst that takes 8 ms on device
 * memory (2 x 16 MiB copied, then ten matrix products). A prefetch of the
 * copied range to the GPU, ordered on the copy's stream, brings the pages
 * back in bulk instead.
 */
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_reg.h"
#include "shim.h"
#include "shim_ops.h"

/* Below this a copy's pages are few and the faults cheap, while a
 * prefetch costs a trip through the driver's memory manager. */
#define MEM_UPLOAD_PREFETCH_MIN (1u << 20)

static CUresult prefetch_range(CUdeviceptr p, size_t len, int dev,
			       CUstream s)
{
	__typeof__(&cuMemPrefetchAsync_v2) pf2 = REAL(cuMemPrefetchAsync_v2);
	__typeof__(&cuMemPrefetchAsync) pf1 = REAL(cuMemPrefetchAsync);

	if (pf2 != NULL) {
		CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
				      .id = dev };

		return pf2(p, len, loc, 0, s);
	}
	if (pf1 != NULL)
		return pf1(p, len, dev, s);
	return CUDA_ERROR_NOT_SUPPORTED;
}

void mem_after_upload(CUdeviceptr dst, size_t len, void *stream)
{
	__typeof__(&cuPointerGetAttribute) attr = REAL(cuPointerGetAttribute);
	CUdeviceptr start = 0;
	struct mreg_entry e;
	uint64_t end;
	CUresult r;

	if (len < MEM_UPLOAD_PREFETCH_MIN || !shim_conf.prefer_gpu ||
	    attr == NULL)
		return;
	/* The copy's destination may lie inside an allocation: find its
	 * start, then ask the registry whether the shim knows it as
	 * managed. Memory the shim does not know is left alone. */
	if (attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, dst) !=
	    CUDA_SUCCESS ||
	    mreg_lookup(MREG_PTR, start, &e) != 0 || e.kind != MREG_MANAGED)
		return;
	/* A copy recorded into a graph has not happened yet. */
	if (shim_ops_stream_capturing(stream))
		return;
	end = e.key + e.size;
	if (dst + len > end)
		len = (size_t)(end - dst);
	r = prefetch_range(dst, len, e.dev, (CUstream)stream);
	if (r != CUDA_SUCCESS)
		log_once(LOG_LVL_INFO, "prefetch after a copy into managed "
			 "memory failed (CUDA error %d); pages move on demand",
			 (int)r);
}
