/*
 * Registered host memory, peer access and attaching managed memory to a
 * stream. Host memory is already what device pointers are here, so these
 * only keep the bookkeeping the real driver would.
 */
#include "td.h"

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	(void)Flags;
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!p || bytesize == 0)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	if ((rc = td_capture_check_unsafe()) != CUDA_SUCCESS)
		;
	else if (td_alloc_find((uintptr_t)p) ||
	    td_alloc_find((uintptr_t)p + bytesize - 1))
		rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
	else if (!td_mem_register((uintptr_t)p, bytesize, TD_MEM_REGISTERED, c))
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	td_unlock();
	return rc;
}

CUresult cuMemHostUnregister(void *p)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	a = td_alloc_find((uintptr_t)p);
	if ((rc = td_capture_check_unsafe()) != CUDA_SUCCESS)
		;
	else if (!a || a->kind != TD_MEM_REGISTERED || a->base != (uintptr_t)p)
		rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
	else
		td_mem_unregister_range(a->base, 1);
	td_unlock();
	return rc;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p,
				      unsigned int Flags)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pdptr || Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_alloc_find((uintptr_t)p);
	if (a && (a->kind == TD_MEM_HOST || a->kind == TD_MEM_REGISTERED))
		*pdptr = (CUdeviceptr)(uintptr_t)p;	/* mapped at the same address */
	else
		rc = CUDA_ERROR_INVALID_VALUE;
	td_unlock();
	return rc;
}

CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!canAccessPeer)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= td.ndev || peerDev < 0 || peerDev >= td.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*canAccessPeer = dev != peerDev;
	return CUDA_SUCCESS;
}

/* Peer access needs no setup; the bits record what is enabled so that a
 * second enable reports what the real driver does. */
CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (!td_ctx_valid(peerContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (peerContext->dev == c->dev)
		return CUDA_ERROR_INVALID_DEVICE;
	td_lock();
	if (c->peers & (1u << peerContext->dev))
		rc = CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
	c->peers |= 1u << peerContext->dev;
	td_unlock();
	return rc;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!td_ctx_valid(peerContext))
		return CUDA_ERROR_INVALID_CONTEXT;
	td_lock();
	if (!(c->peers & (1u << peerContext->dev)))
		rc = CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
	c->peers &= ~(1u << peerContext->dev);
	td_unlock();
	return rc;
}

static CUresult attach(CUstream h, CUdeviceptr dptr, size_t length,
		       unsigned int flags, int ptsz)
{
	struct CUstream_st *s;
	struct td_alloc *a;
	CUresult rc;

	(void)length;
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST &&
	    flags != CU_MEM_ATTACH_SINGLE)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	a = td_alloc_find((uintptr_t)dptr);
	if (rc == CUDA_SUCCESS && (!a || a->kind != TD_MEM_MANAGED))
		rc = CUDA_ERROR_INVALID_VALUE;
	td_unlock();
	return rc;
}

CUresult cuStreamAttachMemAsync(CUstream hStream, CUdeviceptr dptr,
				size_t length, unsigned int flags)
{
	return attach(hStream, dptr, length, flags, 0);
}

CUresult cuStreamAttachMemAsync_ptsz(CUstream hStream, CUdeviceptr dptr,
				     size_t length, unsigned int flags)
{
	return attach(hStream, dptr, length, flags, TD_PTDS);
}
