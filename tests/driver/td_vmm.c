/*
 * Virtual memory management, minimal: a physical allocation (cuMemCreate)
 * is a memfd that counts against the device's memory; an address
 * reservation is a PROT_NONE mapping; cuMemMap maps the memfd over part of
 * a reservation, so two mappings of one handle share their contents as on
 * a GPU. Mapped ranges are entered in the registry as VMM memory.
 */
#include "td.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TD_VMM_GRANULARITY (2ull << 20)

struct td_phys {
	uint32_t magic;
	int fd;
	size_t size;
	int dev;
};

#define TD_MAGIC_PHYS 0x50485931u

CUresult cuMemGetAllocationGranularity(size_t *granularity,
				       const CUmemAllocationProp *prop,
				       CUmemAllocationGranularity_flags option)
{
	(void)option;
	if (!granularity || !prop)
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = TD_VMM_GRANULARITY;
	return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
		     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct td_phys *ph;
	struct td_device *d;
	CUresult rc = td_check_init();

	(void)flags;
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!handle || !prop || size == 0 || size % TD_VMM_GRANULARITY ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    prop->location.id < 0 || prop->location.id >= td.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	ph = calloc(1, sizeof(*ph));
	if (!ph)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ph->fd = memfd_create("vshare-td-vmm", MFD_CLOEXEC);
	if (ph->fd < 0 || ftruncate(ph->fd, (off_t)size) != 0) {
		if (ph->fd >= 0)
			close(ph->fd);
		free(ph);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	td_lock();
	d = &td.dev[prop->location.id];
	if (size > d->total - d->used) {
		td_unlock();
		close(ph->fd);
		free(ph);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	d->used += size;
	td_unlock();
	ph->magic = TD_MAGIC_PHYS;
	ph->size = size;
	ph->dev = prop->location.id;
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)ph;
	return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct td_phys *ph = (struct td_phys *)(uintptr_t)handle;

	if (!ph || ph->magic != TD_MAGIC_PHYS)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	td.dev[ph->dev].used -= ph->size;
	td_unlock();
	/* Existing mappings keep the memory alive, as on a GPU. */
	close(ph->fd);
	ph->magic = 0;
	free(ph);
	return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
			     CUdeviceptr addr, unsigned long long flags)
{
	void *p;
	size_t align = alignment ? alignment : TD_VMM_GRANULARITY;
	uintptr_t base;

	(void)addr;
	(void)flags;
	if (!ptr || size == 0 || size % TD_VMM_GRANULARITY)
		return CUDA_ERROR_INVALID_VALUE;
	/* Over-reserve, then trim to the requested alignment. */
	p = mmap(NULL, size + align, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	base = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
	if (base > (uintptr_t)p)
		munmap(p, base - (uintptr_t)p);
	if ((uintptr_t)p + size + align > base + size)
		munmap((void *)(base + size),
		       (uintptr_t)p + size + align - (base + size));
	*ptr = (CUdeviceptr)base;
	return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	if (!ptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	td_mem_unregister_range((uintptr_t)ptr, size);
	td_unlock();
	munmap((void *)(uintptr_t)ptr, size);
	return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
		  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct td_phys *ph = (struct td_phys *)(uintptr_t)handle;
	struct CUctx_st *c;
	struct td_alloc *a;
	void *p;
	CUresult rc = td_current_ctx(&c);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ph || ph->magic != TD_MAGIC_PHYS || flags || !ptr ||
	    size == 0 || offset + size > ph->size)
		return CUDA_ERROR_INVALID_VALUE;
	p = mmap((void *)(uintptr_t)ptr, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, ph->fd, (off_t)offset);
	if (p == MAP_FAILED)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_mem_register((uintptr_t)ptr, size, TD_MEM_VMM, c);
	if (a)
		a->dev = ph->dev;
	td_unlock();
	return a ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	void *p;

	if (!ptr || size == 0)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	td_mem_unregister_range((uintptr_t)ptr, size);
	td_unlock();
	/* Back to a reserved, inaccessible range. */
	p = mmap((void *)(uintptr_t)ptr, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	return p == MAP_FAILED ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
			const CUmemAccessDesc *desc, size_t count)
{
	struct td_alloc *a;

	if (!ptr || size == 0 || !desc || count == 0)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_alloc_find((uintptr_t)ptr);
	td_unlock();
	return a && a->kind == TD_MEM_VMM ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
