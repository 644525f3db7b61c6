/*
 * Device queries. Attribute values are those of an H100 SXM where a value
 * matters to callers (compute capability 9.0, 132 SMs, managed memory with
 * concurrent access, unified addressing); everything else in range reads 0.
 */
#include "td.h"

#include <stdio.h>
#include <string.h>

static CUresult dev_check(CUdevice dev)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (dev < 0 || dev >= td.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = td.ndev;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = td_check_init();

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= td.ndev)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = dev_check(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "%s", td.dev[dev].name);
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = dev_check(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	*uuid = td.dev[dev].uuid;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = dev_check(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = td.dev[dev].total;
	return CUDA_SUCCESS;
}

CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult rc = dev_check(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = 9;
	*minor = 0;
	return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult rc = dev_check(dev);

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0",
		 0x10 + td.dev[dev].phys);
	return CUDA_SUCCESS;
}

static const struct { int attr; int value; } attr_table[] = {
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152 },
	{ CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536 },
	{ CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536 },
	{ CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000 },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512 },
	{ CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1 },
	{ CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132 },
	{ CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT },
	{ CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512 },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1 },
	{ CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120 },
	{ CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800 },
	{ CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048 },
	{ CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1 },
	{ CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0 },
	{ CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472 },
	{ CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536 },
	{ CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1 },
	{ CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2 },
	{ CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1 },
	{ CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1 },
	{ CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448 },
	{ CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32 },
	{ CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 32505856 },
	{ CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632 },
	{ CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024 },
	{ CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, 1 },
	{ CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1 },
	{ CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1 },
	{ CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1 },
	{ CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4 },
	{ CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 1 },
	{ CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 1 },
	{ CU_DEVICE_ATTRIBUTE_NUMA_ID, -1 },
	{ CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, -1 },
};

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult rc = dev_check(dev);
	size_t i;

	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pi || attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (attrib == CU_DEVICE_ATTRIBUTE_PCI_BUS_ID) {
		*pi = 0x10 + td.dev[dev].phys;
		return CUDA_SUCCESS;
	}
	*pi = 0;
	for (i = 0; i < sizeof(attr_table) / sizeof(attr_table[0]); i++)
		if (attr_table[i].attr == (int)attrib)
			*pi = attr_table[i].value;
	return CUDA_SUCCESS;
}
