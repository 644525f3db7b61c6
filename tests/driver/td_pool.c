/*
 * Stream-ordered allocation, memory pools, prefetch and advice.
 * cuMemAllocAsync hands out memory at once (it is valid in stream order
 * from then on); cuMemFreeAsync queues the free, so the memory stays
 * allocated until the stream reaches it. On a capturing stream they are
 * memory nodes: the allocation belongs to the graph (td_capture_mem_add),
 * and only such memory may be freed there. On another stream both are
 * potentially unsafe calls for the capture rule (td_capture_check_unsafe),
 * as are the pool calls and cuMemAdvise. Pools only carry attributes.
 * Prefetches are stream operations and appear in the execution log as
 * "prefetch" lines; advice is synchronous and logged as "advise".
 */
#include "td.h"

#include <stdio.h>
#include <stdlib.h>

struct CUmemPoolHandle_st {
	uint32_t magic;
	int dev;
	int is_default;
	cuuint64_t release_threshold;
};

static int pool_valid(const struct CUmemPoolHandle_st *p)
{
	return p && p->magic == TD_MAGIC_POOL;
}

static struct CUmemPoolHandle_st *pool_new(int dev, int is_default)
{
	struct CUmemPoolHandle_st *p = calloc(1, sizeof(*p));

	if (p) {
		p->magic = TD_MAGIC_POOL;
		p->dev = dev;
		p->is_default = is_default;
	}
	return p;
}

/* Lock held. */
static CUmemoryPool default_pool(int dev)
{
	struct td_device *d = &td.dev[dev];

	if (!d->default_pool)
		d->default_pool = pool_new(dev, 1);
	return d->default_pool;
}

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pool_out)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev < 0 || dev >= td.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	td_lock();
	*pool_out = default_pool(dev);
	td_unlock();
	return *pool_out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult rc = cuDeviceGetDefaultMemPool(pool, dev);

	if (rc == CUDA_SUCCESS) {
		td_lock();
		if (td.dev[dev].current_pool)
			*pool = td.dev[dev].current_pool;
		td_unlock();
	}
	return rc;
}

CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= td.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!pool_valid(pool) || pool->dev != dev)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	td.dev[dev].current_pool = pool;
	td_unlock();
	return CUDA_SUCCESS;
}

CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pool || !props || props->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    props->location.id < 0 || props->location.id >= td.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	*pool = pool_new(props->location.id, 0);
	return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
	if (!pool_valid(pool) || pool->is_default)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	if (td.dev[pool->dev].current_pool == pool)
		td.dev[pool->dev].current_pool = NULL;
	td_unlock();
	pool->magic = 0;
	free(pool);
	return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	(void)minBytesToKeep;
	if (!pool_valid(pool))
		return CUDA_ERROR_INVALID_VALUE;
	return td_capture_check_unsafe_unlocked();
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
			       void *value)
{
	if (!pool_valid(pool) || !value)
		return CUDA_ERROR_INVALID_VALUE;
	if (td_capture_check_unsafe_unlocked() != CUDA_SUCCESS)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
		pool->release_threshold = *(cuuint64_t *)value;
	return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
			       void *value)
{
	if (!pool_valid(pool) || !value)
		return CUDA_ERROR_INVALID_VALUE;
	if (td_capture_check_unsafe_unlocked() != CUDA_SUCCESS)
		return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	switch (attr) {
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		*(cuuint64_t *)value = pool->release_threshold;
		break;
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = 1;
		break;
	default:
		*(cuuint64_t *)value = 0;
		break;
	}
	return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytes, CUmemoryPool pool,
			    CUstream h, int ptsz)
{
	struct CUstream_st *s;
	CUresult rc;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	if (pool && !pool_valid(pool))
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && !s->cap)
		rc = td_capture_check_unsafe();
	if (rc == CUDA_SUCCESS) {
		if (!pool)
			pool = td.dev[s->ctx->dev].current_pool ?
				td.dev[s->ctx->dev].current_pool :
				default_pool(s->ctx->dev);
		rc = td_mem_alloc(s->ctx, bytes, TD_MEM_DEVICE, pool, dptr);
	}
	if (rc == CUDA_SUCCESS && s->cap &&
	    td_capture_mem_add(s, (uintptr_t)*dptr) != 0) {
		td_mem_free((uintptr_t)*dptr);
		rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	td_unlock();
	return rc;
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, 0);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, NULL, hStream, TD_PTDS);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize,
				 CUmemoryPool pool, CUstream hStream)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, pool, hStream, 0);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize,
				      CUmemoryPool pool, CUstream hStream)
{
	if (!pool)
		return CUDA_ERROR_INVALID_VALUE;
	return alloc_async(dptr, bytesize, pool, hStream, TD_PTDS);
}

static CUresult free_async(CUdeviceptr p, CUstream h, int ptsz)
{
	struct CUstream_st *s;
	struct td_op *op;
	struct td_alloc *a;
	int captured = 0;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	a = td_alloc_find((uintptr_t)p);
	rc = a && a->base == (uintptr_t)p && a->kind == TD_MEM_DEVICE ?
		CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
	if (rc == CUDA_SUCCESS)
		rc = td_stream_resolve(h, ptsz, &s);
	if (rc == CUDA_SUCCESS && s->cap) {
		/* A free node: the graph frees its own memory (graph_free). */
		captured = 1;
		if (!td_capture_mem_owns(s, (uintptr_t)p))
			rc = CUDA_ERROR_INVALID_VALUE;
	} else if (rc == CUDA_SUCCESS) {
		rc = td_capture_check_unsafe();
	}
	td_unlock();
	if (rc != CUDA_SUCCESS || captured)
		return rc;
	op = td_op_new(TD_OP_FREE);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.mfree.ptr = p;
	return td_submit(h, ptsz, op, 0);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, 0);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, TD_PTDS);
}

/* Checks that [p, p+count) lies in one managed allocation. */
static CUresult check_managed(CUdeviceptr p, size_t count, int *dev)
{
	struct td_alloc *a;
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	td_lock();
	a = td_alloc_find((uintptr_t)p);
	if (!a || a->kind != TD_MEM_MANAGED || count == 0 ||
	    (uintptr_t)p + count > a->base + a->size)
		rc = CUDA_ERROR_INVALID_VALUE;
	else if (dev)
		*dev = a->dev;
	td_unlock();
	return rc;
}

/* A location -> device ordinal, -1 for host. */
int td_location_dev(CUmemLocation loc)
{
	return loc.type == CU_MEM_LOCATION_TYPE_DEVICE ? loc.id : -1;
}

/* Queues a prefetch of managed memory to dst (-1 host; -2 a discard). */
CUresult td_prefetch(CUdeviceptr p, size_t count, int dst, CUstream h, int ptsz)
{
	struct td_op *op;
	CUresult rc = check_managed(p, count, NULL);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (dst >= td.ndev || dst < -2)
		return CUDA_ERROR_INVALID_DEVICE;
	op = td_op_new(TD_OP_PREFETCH);
	if (!op)
		return CUDA_ERROR_OUT_OF_MEMORY;
	op->u.pf.ptr = p;
	op->u.pf.bytes = count;
	op->u.pf.dst = dst;
	return td_submit(h, ptsz, op, 0);
}

CUresult cuMemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUdevice dstDevice,
			    CUstream hStream)
{
	return td_prefetch(devPtr, count, dstDevice == CU_DEVICE_CPU ? -1 : dstDevice,
			hStream, 0);
}

CUresult cuMemPrefetchAsync_ptsz(CUdeviceptr devPtr, size_t count,
				 CUdevice dstDevice, CUstream hStream)
{
	return td_prefetch(devPtr, count, dstDevice == CU_DEVICE_CPU ? -1 : dstDevice,
			hStream, TD_PTDS);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr devPtr, size_t count,
			       CUmemLocation location, unsigned int flags,
			       CUstream hStream)
{
	(void)flags;
	return td_prefetch(devPtr, count, td_location_dev(location), hStream, 0);
}

CUresult cuMemPrefetchAsync_v2_ptsz(CUdeviceptr devPtr, size_t count,
				    CUmemLocation location, unsigned int flags,
				    CUstream hStream)
{
	(void)flags;
	return td_prefetch(devPtr, count, td_location_dev(location), hStream, TD_PTDS);
}

static CUresult advise(CUdeviceptr p, size_t count, CUmem_advise advice, int dst)
{
	int dev;
	uint64_t now;
	char name[48];
	CUresult rc = check_managed(p, count, &dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY ||
	    advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY || dst >= td.ndev)
		return CUDA_ERROR_INVALID_VALUE;
	if ((rc = td_capture_check_unsafe_unlocked()) != CUDA_SUCCESS)
		return rc;
	if (dst < 0)
		snprintf(name, sizeof(name), "host:advice%d", (int)advice);
	else
		snprintf(name, sizeof(name), "device%d:advice%d",
			 td.dev[dst].phys, (int)advice);
	now = td_now_ns();
	td_log_line(now, now, td.dev[dev].phys, 0, "advise", name, count);
	return CUDA_SUCCESS;
}

CUresult cuMemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
		     CUdevice device)
{
	return advise(devPtr, count, advice, device == CU_DEVICE_CPU ? -1 : device);
}

CUresult cuMemAdvise_v2(CUdeviceptr devPtr, size_t count, CUmem_advise advice,
			CUmemLocation location)
{
	return advise(devPtr, count, advice, td_location_dev(location));
}
