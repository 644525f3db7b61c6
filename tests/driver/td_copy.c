/*
 * cuMemcpy* and cuMemset* in their common forms. Every one becomes a copy
 * or set operation on a stream; the synchronous forms queue on the default
 * stream (legacy, or per-thread for _ptds) and wait for it, as the real
 * driver does for pageable host memory.
 */
#include "td.h"

#include <string.h>

/* A linear copy's side that starts inside an allocation of the driver's
 * must end inside it, as the real driver checks (it then copies
 * nothing); host memory it does not know is the caller's to size. */
static int range_ok(const void *p, size_t n)
{
	struct td_alloc *a;
	uintptr_t q = (uintptr_t)p;
	int ok = 1;

	td_lock();
	a = td_alloc_find(q);
	if (a != NULL && a->kind != TD_MEM_REGISTERED)
		ok = n <= a->size - (q - a->base);
	td_unlock();
	return ok;
}

static CUresult copy_op(void *dst, const void *src, size_t width,
			size_t height, size_t dpitch, size_t spitch,
			const char *name, CUstream h, int ptds, int wait)
{
	struct td_op *op;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if ((!dst || !src) && width && height)
		return CUDA_ERROR_INVALID_VALUE;
	if (height == 1 && (!range_ok(dst, width) || !range_ok(src, width)))
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_COPY);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.copy.dst = dst;
	op->u.copy.src = src;
	op->u.copy.width = width;
	op->u.copy.height = height;
	op->u.copy.dpitch = dpitch;
	op->u.copy.spitch = spitch;
	op->u.copy.depth = 1;
	op->u.copy.name = name;
	return td_submit(h, ptds, op, wait);
}

static char side(uintptr_t p)
{
	struct td_alloc *a;
	char c;

	td_lock();
	a = td_alloc_find(p);
	c = a && a->kind != TD_MEM_HOST ? 'D' : 'H';
	td_unlock();
	return c;
}

/* The direction of a unified-address copy, by looking both pointers up. */
static const char *direction(uintptr_t dst, uintptr_t src)
{
	static const char *names[2][2] = { { "HtoH", "HtoD" }, { "DtoH", "DtoD" } };

	return names[side(src) == 'D'][side(dst) == 'D'];
}

#define PTR(x) ((void *)(uintptr_t)(x))

/* Defines f and f_suffix, the latter with per-thread default stream. */
#define TWIN(ret, f, suffix, params, call_legacy, call_pt)                  \
	ret f params { return call_legacy; }                                \
	ret f##suffix params { return call_pt; }

TWIN(CUresult, cuMemcpyHtoD_v2, _ptds,
     (CUdeviceptr dst, const void *src, size_t n),
     copy_op(PTR(dst), src, n, 1, 0, 0, "HtoD", NULL, 0, 1),
     copy_op(PTR(dst), src, n, 1, 0, 0, "HtoD", NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpyDtoH_v2, _ptds,
     (void *dst, CUdeviceptr src, size_t n),
     copy_op(dst, PTR(src), n, 1, 0, 0, "DtoH", NULL, 0, 1),
     copy_op(dst, PTR(src), n, 1, 0, 0, "DtoH", NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpyDtoD_v2, _ptds,
     (CUdeviceptr dst, CUdeviceptr src, size_t n),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", NULL, 0, 1),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpy, _ptds,
     (CUdeviceptr dst, CUdeviceptr src, size_t n),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, direction(dst, src), NULL, 0, 1),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, direction(dst, src), NULL,
	     TD_PTDS, 1))
TWIN(CUresult, cuMemcpyHtoDAsync_v2, _ptsz,
     (CUdeviceptr dst, const void *src, size_t n, CUstream h),
     copy_op(PTR(dst), src, n, 1, 0, 0, "HtoD", h, 0, 0),
     copy_op(PTR(dst), src, n, 1, 0, 0, "HtoD", h, TD_PTDS, 0))
TWIN(CUresult, cuMemcpyDtoHAsync_v2, _ptsz,
     (void *dst, CUdeviceptr src, size_t n, CUstream h),
     copy_op(dst, PTR(src), n, 1, 0, 0, "DtoH", h, 0, 0),
     copy_op(dst, PTR(src), n, 1, 0, 0, "DtoH", h, TD_PTDS, 0))
TWIN(CUresult, cuMemcpyDtoDAsync_v2, _ptsz,
     (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", h, 0, 0),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", h, TD_PTDS, 0))
TWIN(CUresult, cuMemcpyAsync, _ptsz,
     (CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, direction(dst, src), h, 0, 0),
     copy_op(PTR(dst), PTR(src), n, 1, 0, 0, direction(dst, src), h,
	     TD_PTDS, 0))
TWIN(CUresult, cuMemcpyPeer, _ptds,
     (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n),
     ((void)dc, (void)sc,
      copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", NULL, 0, 1)),
     ((void)dc, (void)sc,
      copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", NULL, TD_PTDS, 1)))
TWIN(CUresult, cuMemcpyPeerAsync, _ptsz,
     (CUdeviceptr dst, CUcontext dc, CUdeviceptr src, CUcontext sc, size_t n,
      CUstream h),
     ((void)dc, (void)sc,
      copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", h, 0, 0)),
     ((void)dc, (void)sc,
      copy_op(PTR(dst), PTR(src), n, 1, 0, 0, "DtoD", h, TD_PTDS, 0)))

/* One side of a CUDA_MEMCPY2D: its base address, or NULL for arrays. */
static char *side_2d(CUmemorytype type, const void *host, CUdeviceptr dev,
		     size_t x, size_t y, size_t pitch)
{
	char *base;

	switch (type) {
	case CU_MEMORYTYPE_HOST: base = (char *)(uintptr_t)host; break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED: base = PTR(dev); break;
	default: return NULL;
	}
	return base ? base + y * pitch + x : NULL;
}

static const char *name_2d(const CUDA_MEMCPY2D *p)
{
	int s = p->srcMemoryType != CU_MEMORYTYPE_HOST;
	int d = p->dstMemoryType != CU_MEMORYTYPE_HOST;
	static const char *names[2][2] = { { "2D:HtoH", "2D:HtoD" },
					   { "2D:DtoH", "2D:DtoD" } };

	return names[s][d];
}

static CUresult copy_2d(const CUDA_MEMCPY2D *p, CUstream h, int ptds, int wait)
{
	char *src, *dst;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	src = side_2d(p->srcMemoryType, p->srcHost, p->srcDevice,
		      p->srcXInBytes, p->srcY, p->srcPitch);
	dst = side_2d(p->dstMemoryType, p->dstHost, p->dstDevice,
		      p->dstXInBytes, p->dstY, p->dstPitch);
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
	    p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return CUDA_ERROR_NOT_SUPPORTED;
	if ((p->Height > 1 && (p->srcPitch < p->WidthInBytes ||
			       p->dstPitch < p->WidthInBytes)))
		return CUDA_ERROR_INVALID_VALUE;
	return copy_op(dst, src, p->WidthInBytes, p->Height, p->dstPitch,
		       p->srcPitch, name_2d(p), h, ptds, wait);
}

TWIN(CUresult, cuMemcpy2D_v2, _ptds, (const CUDA_MEMCPY2D *p),
     copy_2d(p, NULL, 0, 1), copy_2d(p, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpy2DUnaligned_v2, _ptds, (const CUDA_MEMCPY2D *p),
     copy_2d(p, NULL, 0, 1), copy_2d(p, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpy2DAsync_v2, _ptsz, (const CUDA_MEMCPY2D *p, CUstream h),
     copy_2d(p, h, 0, 0), copy_2d(p, h, TD_PTDS, 0))

static CUresult set_op(CUdeviceptr dst, size_t pitch, uint32_t v,
		       unsigned int elsize, size_t width, size_t height,
		       CUstream h, int ptds, int wait)
{
	struct td_op *op;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!dst || (dst % elsize) != 0 || (height > 1 && pitch < width * elsize))
		return CUDA_ERROR_INVALID_VALUE;
	op = td_op_new(TD_OP_SET);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.set.dst = PTR(dst);
	op->u.set.value = v;
	op->u.set.elsize = elsize;
	op->u.set.width = width;
	op->u.set.height = height;
	op->u.set.pitch = pitch;
	return td_submit(h, ptds, op, wait);
}

TWIN(CUresult, cuMemsetD8_v2, _ptds, (CUdeviceptr d, unsigned char v, size_t n),
     set_op(d, 0, v, 1, n, 1, NULL, 0, 1),
     set_op(d, 0, v, 1, n, 1, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD16_v2, _ptds, (CUdeviceptr d, unsigned short v, size_t n),
     set_op(d, 0, v, 2, n, 1, NULL, 0, 1),
     set_op(d, 0, v, 2, n, 1, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD32_v2, _ptds, (CUdeviceptr d, unsigned int v, size_t n),
     set_op(d, 0, v, 4, n, 1, NULL, 0, 1),
     set_op(d, 0, v, 4, n, 1, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD8Async, _ptsz,
     (CUdeviceptr d, unsigned char v, size_t n, CUstream h),
     set_op(d, 0, v, 1, n, 1, h, 0, 0), set_op(d, 0, v, 1, n, 1, h, TD_PTDS, 0))
TWIN(CUresult, cuMemsetD16Async, _ptsz,
     (CUdeviceptr d, unsigned short v, size_t n, CUstream h),
     set_op(d, 0, v, 2, n, 1, h, 0, 0), set_op(d, 0, v, 2, n, 1, h, TD_PTDS, 0))
TWIN(CUresult, cuMemsetD32Async, _ptsz,
     (CUdeviceptr d, unsigned int v, size_t n, CUstream h),
     set_op(d, 0, v, 4, n, 1, h, 0, 0), set_op(d, 0, v, 4, n, 1, h, TD_PTDS, 0))
TWIN(CUresult, cuMemsetD2D8_v2, _ptds,
     (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hgt),
     set_op(d, pitch, v, 1, w, hgt, NULL, 0, 1),
     set_op(d, pitch, v, 1, w, hgt, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD2D16_v2, _ptds,
     (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t hgt),
     set_op(d, pitch, v, 2, w, hgt, NULL, 0, 1),
     set_op(d, pitch, v, 2, w, hgt, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD2D32_v2, _ptds,
     (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t hgt),
     set_op(d, pitch, v, 4, w, hgt, NULL, 0, 1),
     set_op(d, pitch, v, 4, w, hgt, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemsetD2D8Async, _ptsz,
     (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t hgt,
      CUstream h),
     set_op(d, pitch, v, 1, w, hgt, h, 0, 0),
     set_op(d, pitch, v, 1, w, hgt, h, TD_PTDS, 0))
TWIN(CUresult, cuMemsetD2D16Async, _ptsz,
     (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t hgt,
      CUstream h),
     set_op(d, pitch, v, 2, w, hgt, h, 0, 0),
     set_op(d, pitch, v, 2, w, hgt, h, TD_PTDS, 0))
TWIN(CUresult, cuMemsetD2D32Async, _ptsz,
     (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t hgt,
      CUstream h),
     set_op(d, pitch, v, 4, w, hgt, h, 0, 0),
     set_op(d, pitch, v, 4, w, hgt, h, TD_PTDS, 0))

/* One side of a CUDA_MEMCPY3D: base address of the first byte copied. */
static char *side_3d(CUmemorytype type, const void *host, CUdeviceptr dev,
		     size_t x, size_t y, size_t z, size_t pitch, size_t height)
{
	char *base = side_2d(type, host, dev, x, y, pitch);

	return base ? base + z * pitch * height : NULL;
}

static CUresult copy_3d(const CUDA_MEMCPY3D *p, CUstream h, int ptds, int wait)
{
	struct td_op *op;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	if (p->srcMemoryType == CU_MEMORYTYPE_ARRAY ||
	    p->dstMemoryType == CU_MEMORYTYPE_ARRAY)
		return CUDA_ERROR_NOT_SUPPORTED;
	op = td_op_new(TD_OP_COPY);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.copy.src = side_3d(p->srcMemoryType, p->srcHost, p->srcDevice,
				 p->srcXInBytes, p->srcY, p->srcZ, p->srcPitch,
				 p->srcHeight);
	op->u.copy.dst = side_3d(p->dstMemoryType, p->dstHost, p->dstDevice,
				 p->dstXInBytes, p->dstY, p->dstZ, p->dstPitch,
				 p->dstHeight);
	op->u.copy.width = p->WidthInBytes;
	op->u.copy.height = p->Height;
	op->u.copy.depth = p->Depth;
	op->u.copy.dpitch = p->dstPitch;
	op->u.copy.spitch = p->srcPitch;
	op->u.copy.dslice = p->dstPitch * p->dstHeight;
	op->u.copy.sslice = p->srcPitch * p->srcHeight;
	op->u.copy.name = "3D";
	if (!op->u.copy.src || !op->u.copy.dst) {
		td_op_free(op);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return td_submit(h, ptds, op, wait);
}

TWIN(CUresult, cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D *p),
     copy_3d(p, NULL, 0, 1), copy_3d(p, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D *p, CUstream h),
     copy_3d(p, h, 0, 0), copy_3d(p, h, TD_PTDS, 0))

/* Peer copies: one address space here, so a 3D copy between contexts is
 * a 3D copy. */
static CUresult copy_3d_peer(const CUDA_MEMCPY3D_PEER *p, CUstream h, int ptds,
			     int wait)
{
	CUDA_MEMCPY3D c;

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&c, 0, sizeof(c));
	c.srcXInBytes = p->srcXInBytes;
	c.srcY = p->srcY;
	c.srcZ = p->srcZ;
	c.srcMemoryType = p->srcMemoryType;
	c.srcHost = p->srcHost;
	c.srcDevice = p->srcDevice;
	c.srcArray = p->srcArray;
	c.srcPitch = p->srcPitch;
	c.srcHeight = p->srcHeight;
	c.dstXInBytes = p->dstXInBytes;
	c.dstY = p->dstY;
	c.dstZ = p->dstZ;
	c.dstMemoryType = p->dstMemoryType;
	c.dstHost = p->dstHost;
	c.dstDevice = p->dstDevice;
	c.dstArray = p->dstArray;
	c.dstPitch = p->dstPitch;
	c.dstHeight = p->dstHeight;
	c.WidthInBytes = p->WidthInBytes;
	c.Height = p->Height;
	c.Depth = p->Depth;
	return copy_3d(&c, h, ptds, wait);
}

TWIN(CUresult, cuMemcpy3DPeer, _ptds, (const CUDA_MEMCPY3D_PEER *p),
     copy_3d_peer(p, NULL, 0, 1), copy_3d_peer(p, NULL, TD_PTDS, 1))
TWIN(CUresult, cuMemcpy3DPeerAsync, _ptsz,
     (const CUDA_MEMCPY3D_PEER *p, CUstream h),
     copy_3d_peer(p, h, 0, 0), copy_3d_peer(p, h, TD_PTDS, 0))

/* cuMemcpy3DBatchAsync is not modelled: the entry points exist (the CUDA
 * runtime asks for them at its start) and refuse. */
static CUresult batch_3d(const char *name)
{
	CUresult rc = td_check_init();

	(void)name;
	return rc != CUDA_SUCCESS ? rc : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuMemcpy3DBatchAsync(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
			      size_t *failIdx, unsigned long long flags,
			      CUstream hStream)
{
	(void)numOps, (void)opList, (void)failIdx, (void)flags, (void)hStream;
	return batch_3d("cuMemcpy3DBatchAsync");
}

CUresult cuMemcpy3DBatchAsync_ptsz(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
				   size_t *failIdx, unsigned long long flags,
				   CUstream hStream)
{
	(void)numOps, (void)opList, (void)failIdx, (void)flags, (void)hStream;
	return batch_3d("cuMemcpy3DBatchAsync_ptsz");
}

CUresult cuMemcpy3DBatchAsync_v2(size_t numOps, CUDA_MEMCPY3D_BATCH_OP *opList,
				 unsigned long long flags, CUstream hStream)
{
	(void)numOps, (void)opList, (void)flags, (void)hStream;
	return batch_3d("cuMemcpy3DBatchAsync_v2");
}

CUresult cuMemcpy3DBatchAsync_v2_ptsz(size_t numOps,
				      CUDA_MEMCPY3D_BATCH_OP *opList,
				      unsigned long long flags, CUstream hStream)
{
	(void)numOps, (void)opList, (void)flags, (void)hStream;
	return batch_3d("cuMemcpy3DBatchAsync_v2_ptsz");
}

/* cuMemcpyBatchAsync: independent copies, queued in order; attributes
 * (access order, source location hints) change nothing here. */
static CUresult copy_batch(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
			   size_t count, size_t *fail_idx, CUstream h, int ptsz)
{
	size_t i;
	CUresult rc = CUDA_SUCCESS;

	if (!dsts || !srcs || !sizes || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < count && rc == CUDA_SUCCESS; i++)
		rc = copy_op(PTR(dsts[i]), PTR(srcs[i]), sizes[i], 1, 0, 0,
			     direction(dsts[i], srcs[i]), h, ptsz, 0);
	if (rc != CUDA_SUCCESS && fail_idx)
		*fail_idx = i - 1;
	return rc;
}

CUresult cuMemcpyBatchAsync(CUdeviceptr *dsts, CUdeviceptr *srcs, size_t *sizes,
			    size_t count, CUmemcpyAttributes *attrs,
			    size_t *attrsIdxs, size_t numAttrs, size_t *failIdx,
			    CUstream hStream)
{
	(void)attrs;
	(void)attrsIdxs;
	(void)numAttrs;
	return copy_batch(dsts, srcs, sizes, count, failIdx, hStream, 0);
}

CUresult cuMemcpyBatchAsync_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
				 size_t *sizes, size_t count,
				 CUmemcpyAttributes *attrs, size_t *attrsIdxs,
				 size_t numAttrs, size_t *failIdx,
				 CUstream hStream)
{
	(void)attrs;
	(void)attrsIdxs;
	(void)numAttrs;
	return copy_batch(dsts, srcs, sizes, count, failIdx, hStream, TD_PTDS);
}

CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *dsts, CUdeviceptr *srcs,
			       size_t *sizes, size_t count,
			       CUmemcpyAttributes *attrs, size_t *attrsIdxs,
			       size_t numAttrs, CUstream hStream)
{
	(void)attrs;
	(void)attrsIdxs;
	(void)numAttrs;
	return copy_batch(dsts, srcs, sizes, count, NULL, hStream, 0);
}

CUresult cuMemcpyBatchAsync_v2_ptsz(CUdeviceptr *dsts, CUdeviceptr *srcs,
				    size_t *sizes, size_t count,
				    CUmemcpyAttributes *attrs, size_t *attrsIdxs,
				    size_t numAttrs, CUstream hStream)
{
	(void)attrs;
	(void)attrsIdxs;
	(void)numAttrs;
	return copy_batch(dsts, srcs, sizes, count, NULL, hStream, TD_PTDS);
}
