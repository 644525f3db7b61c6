/*
 * cuPointerGetAttribute(s): answers from the allocation registry. Booleans
 * (IS_MANAGED, MAPPED, SYNC_MEMOPS, ...) are written as unsigned int.
 */
#include "td.h"

#include <string.h>

/* Lock held. Writes attribute attr of allocation a (NULL: not a CUDA
 * pointer, every value its default) for pointer p. */
static CUresult attr_value(const struct td_alloc *a, uintptr_t p,
			   CUpointer_attribute attr, void *data)
{
	unsigned int flag;

	switch (attr) {
	case CU_POINTER_ATTRIBUTE_CONTEXT:
		*(CUcontext *)data = a ? a->ctx : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
		*(unsigned int *)data = !a ? 0 : a->kind == TD_MEM_HOST ?
			CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
		*(CUdeviceptr *)data = a ? (CUdeviceptr)p : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_HOST_POINTER:
		*(void **)data = a && (a->kind == TD_MEM_HOST ||
				       a->kind == TD_MEM_MANAGED) ?
			(void *)p : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_BUFFER_ID:
		*(unsigned long long *)data = a ? a->id : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
		*(int *)data = a ? a->dev : -2;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
		*(CUdeviceptr *)data = a ? (CUdeviceptr)a->base : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
		*(size_t *)data = a ? a->size : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
		*(CUmemoryPool *)data = a ? a->pool : NULL;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
		*(unsigned long long *)data = 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
		*(unsigned int *)data = a ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : 0;
		return CUDA_SUCCESS;
	case CU_POINTER_ATTRIBUTE_IS_MANAGED:
		flag = a && a->kind == TD_MEM_MANAGED;
		break;
	case CU_POINTER_ATTRIBUTE_MAPPED:
		flag = a != NULL;
		break;
	case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
	case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
		flag = 0;
		break;
	case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
		flag = a && a->kind == TD_MEM_DEVICE;
		break;
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	memcpy(data, &flag, sizeof(flag));
	return CUDA_SUCCESS;
}

CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute,
			       CUdeviceptr ptr)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!data)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_alloc_find((uintptr_t)ptr);
	rc = a ? attr_value(a, (uintptr_t)ptr, attribute, data) :
		CUDA_ERROR_INVALID_VALUE;
	td_unlock();
	return rc;
}

CUresult cuPointerGetAttributes(unsigned int numAttributes,
				CUpointer_attribute *attributes, void **data,
				CUdeviceptr ptr)
{
	CUresult rc = td_check_init();
	struct td_alloc *a;
	unsigned int i;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!attributes || !data)
		return CUDA_ERROR_INVALID_VALUE;
	td_lock();
	a = td_alloc_find((uintptr_t)ptr);
	for (i = 0; i < numAttributes && rc == CUDA_SUCCESS; i++)
		if (data[i])
			rc = attr_value(a, (uintptr_t)ptr, attributes[i], data[i]);
	td_unlock();
	return rc;
}
