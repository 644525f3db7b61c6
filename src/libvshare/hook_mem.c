/*
 * Memory hooks: each hands its call to mem_* and, when mem_* leaves it to
 * the driver (MEM_PASS), calls its own real variant.
 */
#include "hook_body.h"
#include "mem_alloc.h"

/* The end of a memory hook: the hook's own real variant when mem_* left
 * the call to the driver, then HOOK_LEAVE. */
#define HOOK_PASS_LEAVE(args)                                   \
	if (r_ == MEM_PASS)                                     \
		r_ = real_ args;                                \
	HOOK_LEAVE()

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	HOOK_ENTER(cuMemAlloc_v2, (dptr, bytesize));
	r_ = mem_alloc(dptr, bytesize);
	HOOK_PASS_LEAVE((dptr, bytesize));
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
			    size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	HOOK_ENTER(cuMemAllocPitch_v2,
		   (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
	r_ = mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height,
			     ElementSizeBytes);
	HOOK_PASS_LEAVE((dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize,
			   unsigned int flags)
{
	HOOK_ENTER(cuMemAllocManaged, (dptr, bytesize, flags));
	r_ = mem_alloc_managed(dptr, bytesize, flags);
	HOOK_PASS_LEAVE((dptr, bytesize, flags));
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	HOOK_ENTER(cuMemAllocAsync, (dptr, bytesize, hStream));
	r_ = mem_alloc_async(dptr, bytesize, NULL, hStream);
	HOOK_PASS_LEAVE((dptr, bytesize, hStream));
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
			      CUstream hStream)
{
	HOOK_ENTER(cuMemAllocAsync_ptsz, (dptr, bytesize, hStream));
	r_ = mem_alloc_async(dptr, bytesize, NULL, PTSZ(hStream));
	HOOK_PASS_LEAVE((dptr, bytesize, hStream));
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
				 CUmemoryPool pool, CUstream hStream)
{
	HOOK_ENTER(cuMemAllocFromPoolAsync, (dptr, bytesize, pool, hStream));
	/* No pool: the driver's error. */
	r_ = pool == NULL ? MEM_PASS
			  : mem_alloc_async(dptr, bytesize, pool, hStream);
	HOOK_PASS_LEAVE((dptr, bytesize, pool, hStream));
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream)
{
	HOOK_ENTER(cuMemAllocFromPoolAsync_ptsz,
		   (dptr, bytesize, pool, hStream));
	r_ = pool == NULL ? MEM_PASS
			  : mem_alloc_async(dptr, bytesize, pool, PTSZ(hStream));
	HOOK_PASS_LEAVE((dptr, bytesize, pool, hStream));
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	HOOK_ENTER(cuMemFree_v2, (dptr));
	r_ = mem_free(dptr);
	HOOK_PASS_LEAVE((dptr));
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	HOOK_ENTER(cuMemFreeAsync, (dptr, hStream));
	r_ = mem_free_async(dptr, hStream);
	HOOK_PASS_LEAVE((dptr, hStream));
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	HOOK_ENTER(cuMemFreeAsync_ptsz, (dptr, hStream));
	r_ = mem_free_async(dptr, PTSZ(hStream));
	HOOK_PASS_LEAVE((dptr, hStream));
}

/* Cached stream-ordered memory of the pool is trimmed too. */
CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	HOOK_ENTER(cuMemPoolTrimTo, (pool, minBytesToKeep));
	mem_pool_trim(pool, minBytesToKeep);
	r_ = real_(pool, minBytesToKeep);
	HOOK_LEAVE();
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	HOOK_ENTER(cuMemCreate, (handle, size, prop, flags));
	r_ = mem_create(handle, size, prop, flags);
	HOOK_PASS_LEAVE((handle, size, prop, flags));
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	HOOK_ENTER(cuMemRelease, (handle));
	r_ = mem_release(handle);
	HOOK_PASS_LEAVE((handle));
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	HOOK_ENTER(cuMemGetInfo_v2, (free, total));
	r_ = mem_get_info(free, total);
	HOOK_PASS_LEAVE((free, total));
}
