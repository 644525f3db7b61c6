/*
 * Memory: every allocation is an anonymous mapping of host memory, so a
 * device pointer is a host address and tests can read what kernels wrote.
 * The registry remembers each allocation's kind, device and context.
 * Device (non-managed) allocations count against the device's memory and
 * fail past it; managed allocations do not count (the real driver pages
 * them in and out, so they may oversubscribe).
 */
#include "td.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static struct td_alloc *allocs;
static size_t nallocs, capallocs;

/* Lock held. The allocation containing p, or NULL. */
struct td_alloc *td_alloc_find(uintptr_t p)
{
	size_t i;

	for (i = 0; i < nallocs; i++)
		if (p >= allocs[i].base && p < allocs[i].base + allocs[i].size)
			return &allocs[i];
	return NULL;
}

static void *map_bytes(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Memory whose address fits 32 bits, for the entry points of CUDA
 * before 3.2 (CUdeviceptr_v1): the low 2 GiB where the kernel has
 * MAP_32BIT, else a hint at 1 GiB; NULL when it does not fit. */
static void *map_low(size_t bytes)
{
#ifdef MAP_32BIT
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE |
		       MAP_ANONYMOUS | MAP_NORESERVE | MAP_32BIT, -1, 0);
#else
	void *p = mmap((void *)(1ul << 30), bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
#endif

	if (p == MAP_FAILED)
		return NULL;
	if ((uint64_t)(uintptr_t)p + bytes > UINT32_MAX) {
		munmap(p, bytes);
		return NULL;
	}
	return p;
}

static void release(size_t i)
{
	struct td_alloc *a = &allocs[i];

	td_devmem_release(a->dev, a->counted);
	/* VMM mappings belong to td_vmm.c, registered memory to the caller. */
	if (a->kind != TD_MEM_VMM && a->kind != TD_MEM_REGISTERED)
		munmap((void *)a->base, a->size);
	allocs[i] = allocs[--nallocs];
}

/* Lock held. Adds a registry entry for memory mapped elsewhere. */
struct td_alloc *td_mem_register(uintptr_t base, size_t size,
				 enum td_mem_kind kind, struct CUctx_st *c)
{
	struct td_alloc *a;

	if (nallocs == capallocs) {
		size_t ncap = capallocs ? capallocs * 2 : 64;
		struct td_alloc *n = realloc(allocs, ncap * sizeof(*n));

		if (!n)
			return NULL;
		allocs = n;
		capallocs = ncap;
	}
	a = &allocs[nallocs++];
	memset(a, 0, sizeof(*a));
	a->base = base;
	a->size = size;
	a->kind = kind;
	a->dev = c->dev;
	a->ctx = c;
	a->id = td.next_id++;
	return a;
}

/* Lock held. Drops the entries of VMM mappings or registered memory that
 * start inside [base, base+size). */
void td_mem_unregister_range(uintptr_t base, size_t size)
{
	size_t i = 0;

	while (i < nallocs) {
		if ((allocs[i].kind == TD_MEM_VMM ||
		     allocs[i].kind == TD_MEM_REGISTERED) && allocs[i].base >= base &&
		    allocs[i].base < base + size)
			release(i);
		else
			i++;
	}
}

/* Lock held. */
static CUresult alloc_mapped(struct CUctx_st *c, size_t bytes,
			     enum td_mem_kind kind, CUmemoryPool pool,
			     CUdeviceptr *out, void *(*map)(size_t))
{
	size_t counted = kind == TD_MEM_MANAGED || kind == TD_MEM_HOST ? 0 : bytes;
	struct td_alloc *a;
	void *p;

	if (bytes == 0 || !out)
		return CUDA_ERROR_INVALID_VALUE;
	if (td_devmem_reserve(c->dev, counted) != 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = map(bytes);
	a = p ? td_mem_register((uintptr_t)p, bytes, kind, c) : NULL;
	if (!a) {
		if (p)
			munmap(p, bytes);
		td_devmem_release(c->dev, counted);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->counted = counted;
	a->pool = pool;
	*out = (CUdeviceptr)a->base;
	return CUDA_SUCCESS;
}

/* Lock held. */
CUresult td_mem_alloc(struct CUctx_st *c, size_t bytes, enum td_mem_kind kind,
		      CUmemoryPool pool, CUdeviceptr *out)
{
	return alloc_mapped(c, bytes, kind, pool, out, map_bytes);
}

/* Lock held. Frees the allocation that starts at p. */
CUresult td_mem_free(uintptr_t p)
{
	size_t i;

	for (i = 0; i < nallocs; i++)
		if (allocs[i].base == p && allocs[i].kind != TD_MEM_VMM &&
		    allocs[i].kind != TD_MEM_REGISTERED) {
			release(i);
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

/* Lock held. A destroyed context takes its memory with it. */
void td_mem_free_ctx(struct CUctx_st *c)
{
	size_t i = 0;

	while (i < nallocs) {
		if (allocs[i].ctx == c && allocs[i].kind != TD_MEM_VMM)
			release(i);
		else
			i++;
	}
}

static CUresult alloc_in(CUdeviceptr *dptr, size_t bytes,
			 enum td_mem_kind kind, void *(*map)(size_t))
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	rc = td_capture_check_unsafe();
	if (rc == CUDA_SUCCESS)
		rc = alloc_mapped(c, bytes, kind, NULL, dptr, map);
	td_unlock();
	return rc;
}

static CUresult alloc_current(CUdeviceptr *dptr, size_t bytes,
			      enum td_mem_kind kind)
{
	return alloc_in(dptr, bytes, kind, map_bytes);
}

/* The 32-bit cuMemAlloc and cuMemFree of CUDA before 3.2, which the real
 * driver still exports: device memory, counted as cuMemAlloc_v2's is,
 * at an address that fits a CUdeviceptr_v1. */
CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
	CUdeviceptr p;
	CUresult rc;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_in(&p, bytesize, TD_MEM_DEVICE, map_low);
	if (rc == CUDA_SUCCESS)
		*dptr = (CUdeviceptr_v1)p;
	return rc;
}

CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
	return cuMemFree_v2((CUdeviceptr)dptr);
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	return alloc_current(dptr, bytesize, TD_MEM_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch,
			    size_t WidthInBytes, size_t Height,
			    unsigned int ElementSizeBytes)
{
	size_t pitch;

	if (!pPitch || WidthInBytes == 0 || Height == 0 ||
	    (ElementSizeBytes != 4 && ElementSizeBytes != 8 &&
	     ElementSizeBytes != 16))
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (WidthInBytes + 511) & ~(size_t)511;
	*pPitch = pitch;
	return alloc_current(dptr, pitch * Height, TD_MEM_DEVICE);
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_current(dptr, bytesize, TD_MEM_MANAGED);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (dptr == 0)
		return CUDA_SUCCESS;
	/* The real cuMemFree synchronises the device when the memory may
	 * still be in use; waiting for the owning context does the same. */
	td_lock();
	if ((rc = td_capture_check_unsafe()) != CUDA_SUCCESS) {
		td_unlock();
		return rc;
	}
	{
		struct td_alloc *a = td_alloc_find((uintptr_t)dptr);
		struct CUctx_st *c = a ? a->ctx : NULL;

		td_unlock();
		if (c && td_ctx_valid(c))
			td_ctx_sync(c);
	}
	td_lock();
	rc = td_mem_free((uintptr_t)dptr);
	td_unlock();
	return rc;
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
	CUdeviceptr p;
	CUresult rc;

	if (!pp)
		return CUDA_ERROR_INVALID_VALUE;
	rc = alloc_current(&p, bytesize, TD_MEM_HOST);
	if (rc == CUDA_SUCCESS)
		*pp = (void *)(uintptr_t)p;
	return rc;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	(void)Flags;
	return cuMemAllocHost_v2(pp, bytesize);
}

CUresult cuMemFreeHost(void *p)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	rc = td_capture_check_unsafe();
	if (rc == CUDA_SUCCESS)
		rc = td_mem_free((uintptr_t)p);
	td_unlock();
	return rc;
}

CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
	struct CUctx_st *c;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	*total = td.dev[c->dev].total;
	*free = td_devmem_free(c->dev);
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	a = td_alloc_find((uintptr_t)dptr);
	if (a) {
		if (pbase)
			*pbase = (CUdeviceptr)a->base;
		if (psize)
			*psize = a->size;
	}
	td_unlock();
	return a ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_alloc_find((uintptr_t)dptr);
	/* Managed, host and pool (stream-ordered) memory cannot be shared by
	 * a legacy IPC handle. */
	if (!a || a->kind != TD_MEM_DEVICE || a->pool) {
		td_unlock();
		return CUDA_ERROR_INVALID_VALUE;
	}
	memset(pHandle, 0, sizeof(*pHandle));
	memcpy(pHandle->reserved, &a->base, sizeof(a->base));
	memcpy(pHandle->reserved + 8, &a->size, sizeof(a->size));
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle,
			       unsigned int Flags)
{
	(void)pdptr;
	(void)handle;
	(void)Flags;
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	(void)dptr;
	return CUDA_ERROR_INVALID_VALUE;
}
