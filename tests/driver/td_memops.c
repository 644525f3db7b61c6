/*
 * Stream memory operations (cuStreamWrite/WaitValue32/64, BatchMemOp) and
 * the CUDA 13 batched prefetch and discard. A wait blocks its stream's
 * worker until the condition holds, polling the word every 20 us.
 */
#include "td.h"

#include <time.h>

static int wait_done(const struct td_op *op)
{
	uint64_t v, want = op->u.memop.value;
	int64_t diff;

	if (op->u.memop.is64) {
		v = __atomic_load_n(op->u.memop.addr, __ATOMIC_ACQUIRE);
		diff = (int64_t)(v - want);
	} else {
		v = __atomic_load_n((uint32_t *)op->u.memop.addr, __ATOMIC_ACQUIRE);
		want = (uint32_t)want;
		diff = (int32_t)((uint32_t)v - (uint32_t)want);
	}
	switch (op->u.memop.flags & 0x3) {
	case CU_STREAM_WAIT_VALUE_GEQ: return diff >= 0;
	case CU_STREAM_WAIT_VALUE_EQ: return v == want;
	case CU_STREAM_WAIT_VALUE_AND: return (v & want) != 0;
	default: return op->u.memop.is64 ? ~(v | want) != 0 :
		(uint32_t)~(v | want) != 0;
	}
}

void td_memop_run(const struct td_op *op)
{
	struct timespec ts = { 0, 20000 };

	if (op->u.memop.op == TD_MEMOP_WRITE) {
		if (op->u.memop.is64)
			__atomic_store_n(op->u.memop.addr, op->u.memop.value,
					 __ATOMIC_RELEASE);
		else
			__atomic_store_n((uint32_t *)op->u.memop.addr,
					 (uint32_t)op->u.memop.value,
					 __ATOMIC_RELEASE);
		return;
	}
	while (!wait_done(op))
		nanosleep(&ts, NULL);
}

static CUresult memop(CUstream h, CUdeviceptr addr, uint64_t value, int is64,
		      enum td_memop kind, unsigned int flags, int ptsz)
{
	struct td_op *op;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!addr || addr % (is64 ? 8 : 4))
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_MEMOP);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.memop.addr = (uint64_t *)(uintptr_t)addr;
	op->u.memop.value = value;
	op->u.memop.is64 = is64;
	op->u.memop.op = kind;
	op->u.memop.flags = flags;
	return td_submit(h, ptsz, op, 0);
}

/* Each of the four operations exists as v1, _v2 and their _ptsz twins,
 * all with one signature. */
#define MEMOP4(name, type, is64, kind)                                        \
	CUresult name(CUstream s, CUdeviceptr a, type v, unsigned int f)      \
	{ return memop(s, a, v, is64, kind, f, 0); }                          \
	CUresult name##_ptsz(CUstream s, CUdeviceptr a, type v, unsigned int f) \
	{ return memop(s, a, v, is64, kind, f, TD_PTDS); }                    \
	CUresult name##_v2(CUstream s, CUdeviceptr a, type v, unsigned int f) \
	{ return memop(s, a, v, is64, kind, f, 0); }                          \
	CUresult name##_v2_ptsz(CUstream s, CUdeviceptr a, type v,            \
				unsigned int f)                               \
	{ return memop(s, a, v, is64, kind, f, TD_PTDS); }

MEMOP4(cuStreamWriteValue32, cuuint32_t, 0, TD_MEMOP_WRITE)
MEMOP4(cuStreamWaitValue32, cuuint32_t, 0, TD_MEMOP_WAIT)
MEMOP4(cuStreamWriteValue64, cuuint64_t, 1, TD_MEMOP_WRITE)
MEMOP4(cuStreamWaitValue64, cuuint64_t, 1, TD_MEMOP_WAIT)

static CUresult batch(CUstream h, unsigned int count,
		      CUstreamBatchMemOpParams *p, unsigned int flags, int ptsz)
{
	unsigned int i;
	CUresult rc = CUDA_SUCCESS;

	if (!p || count == 0 || flags)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count && rc == CUDA_SUCCESS; i++) {
		switch (p[i].operation) {
		case CU_STREAM_MEM_OP_WAIT_VALUE_32:
		case CU_STREAM_MEM_OP_WAIT_VALUE_64:
			rc = memop(h, p[i].waitValue.address,
				   p[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64 ?
				   p[i].waitValue.value64 : p[i].waitValue.value,
				   p[i].operation == CU_STREAM_MEM_OP_WAIT_VALUE_64,
				   TD_MEMOP_WAIT, p[i].waitValue.flags, ptsz);
			break;
		case CU_STREAM_MEM_OP_WRITE_VALUE_32:
		case CU_STREAM_MEM_OP_WRITE_VALUE_64:
			rc = memop(h, p[i].writeValue.address,
				   p[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64 ?
				   p[i].writeValue.value64 : p[i].writeValue.value,
				   p[i].operation == CU_STREAM_MEM_OP_WRITE_VALUE_64,
				   TD_MEMOP_WRITE, p[i].writeValue.flags, ptsz);
			break;
		case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
		case CU_STREAM_MEM_OP_BARRIER:
			break;	/* host memory is coherent */
		default:
			rc = CUDA_ERROR_INVALID_VALUE;
		}
	}
	return rc;
}

CUresult cuStreamBatchMemOp(CUstream s, unsigned int count,
			    CUstreamBatchMemOpParams *p, unsigned int flags)
{
	return batch(s, count, p, flags, 0);
}

CUresult cuStreamBatchMemOp_ptsz(CUstream s, unsigned int count,
				 CUstreamBatchMemOpParams *p, unsigned int flags)
{
	return batch(s, count, p, flags, TD_PTDS);
}

CUresult cuStreamBatchMemOp_v2(CUstream s, unsigned int count,
			       CUstreamBatchMemOpParams *p, unsigned int flags)
{
	return batch(s, count, p, flags, 0);
}

CUresult cuStreamBatchMemOp_v2_ptsz(CUstream s, unsigned int count,
				    CUstreamBatchMemOpParams *p,
				    unsigned int flags)
{
	return batch(s, count, p, flags, TD_PTDS);
}

/*
 * Batched prefetch: range i goes to prefetchLocs[j] for the last j whose
 * prefetchLocIdxs[j] <= i (the first index must be 0). discard adds a
 * discard of each range first; prefetch 0 only discards.
 */
static CUresult batch_prefetch(CUdeviceptr *ptrs, size_t *sizes, size_t count,
			       CUmemLocation *locs, size_t *loc_idx,
			       size_t nlocs, int discard, int prefetch,
			       CUstream h, int ptsz)
{
	size_t i, j = 0;
	CUresult rc = CUDA_SUCCESS;

	if (!ptrs || !sizes || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (prefetch && (!locs || !loc_idx || nlocs == 0 || loc_idx[0] != 0))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count && rc == CUDA_SUCCESS; i++) {
		if (discard)
			rc = td_prefetch(ptrs[i], sizes[i], -2, h, ptsz);
		if (!prefetch || rc != CUDA_SUCCESS)
			continue;
		while (j + 1 < nlocs && loc_idx[j + 1] <= i)
			j++;
		rc = td_prefetch(ptrs[i], sizes[i], td_location_dev(locs[j]), h, ptsz);
	}
	return rc;
}

CUresult cuMemPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
				 CUmemLocation *prefetchLocs,
				 size_t *prefetchLocIdxs, size_t numPrefetchLocs,
				 unsigned long long flags, CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
			      numPrefetchLocs, 0, 1, hStream, 0);
}

CUresult cuMemPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes,
				      size_t count, CUmemLocation *prefetchLocs,
				      size_t *prefetchLocIdxs,
				      size_t numPrefetchLocs,
				      unsigned long long flags, CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
			      numPrefetchLocs, 0, 1, hStream, TD_PTDS);
}

CUresult cuMemDiscardBatchAsync(CUdeviceptr *dptrs, size_t *sizes, size_t count,
				unsigned long long flags, CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, NULL, NULL, 0, 1, 0, hStream, 0);
}

CUresult cuMemDiscardBatchAsync_ptsz(CUdeviceptr *dptrs, size_t *sizes,
				     size_t count, unsigned long long flags,
				     CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, NULL, NULL, 0, 1, 0, hStream,
			      TD_PTDS);
}

CUresult cuMemDiscardAndPrefetchBatchAsync(CUdeviceptr *dptrs, size_t *sizes,
					   size_t count,
					   CUmemLocation *prefetchLocs,
					   size_t *prefetchLocIdxs,
					   size_t numPrefetchLocs,
					   unsigned long long flags,
					   CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
			      numPrefetchLocs, 1, 1, hStream, 0);
}

CUresult cuMemDiscardAndPrefetchBatchAsync_ptsz(CUdeviceptr *dptrs,
						size_t *sizes, size_t count,
						CUmemLocation *prefetchLocs,
						size_t *prefetchLocIdxs,
						size_t numPrefetchLocs,
						unsigned long long flags,
						CUstream hStream)
{
	(void)flags;
	return batch_prefetch(dptrs, sizes, count, prefetchLocs, prefetchLocIdxs,
			      numPrefetchLocs, 1, 1, hStream, TD_PTDS);
}
