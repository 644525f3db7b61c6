/*
 * The test driver's devices, contexts, memory and pointer attributes.
 * Run with VSHARE_TD_DEVICES=2 VSHARE_TD_MEM=1G (set by CTest).
 */
#include "tdt.h"

#include <stdio.h>
#include <string.h>

static void test_devices(void **state)
{
	int n, v, major;
	char name[128];
	CUuuid u0, u1;
	size_t total;

	(void)state;
	assert_int_equal(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	CK(cuDriverGetVersion(&v));
	assert_int_equal(v, 13000);
	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	assert_int_equal(n, 2);
	assert_int_equal(cuDeviceGet(&v, 2), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGetName(name, sizeof(name), 1));
	assert_string_equal(name, "vshare test device");
	CK(cuDeviceGetUuid_v2(&u0, 0));
	CK(cuDeviceGetUuid_v2(&u1, 1));
	assert_memory_equal(u0.bytes, "vstd", 4);
	assert_int_equal(u0.bytes[15], 0);
	assert_int_equal(u1.bytes[15], 1);
	CK(cuDeviceTotalMem_v2(&total, 1));
	assert_int_equal(total, 1ull << 30);
	CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
	assert_int_equal(major, 9);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 0));
	assert_int_equal(v, 1);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	assert_int_equal(v, 132);
}

static void test_contexts(void **state)
{
	CUcontext p, p2, c, cur;
	CUdevice d;
	unsigned int flags;
	int active;

	(void)state;
	CK(cuInit(0));
	CK(cuCtxGetCurrent(&cur));
	assert_null(cur);
	assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuDevicePrimaryCtxGetState(1, &flags, &active));
	assert_int_equal(active, 0);
	CK(cuDevicePrimaryCtxRetain(&p, 1));
	CK(cuDevicePrimaryCtxRetain(&p2, 1));
	assert_ptr_equal(p, p2);
	CK(cuDevicePrimaryCtxGetState(1, &flags, &active));
	assert_int_equal(active, 1);
	CK(cuCtxSetCurrent(p));
	CK(cuCtxGetDevice(&d));
	assert_int_equal(d, 1);
	CK(cuCtxCreate_v4(&c, NULL, 0, 0));
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, c);
	CK(cuCtxGetDevice(&d));
	assert_int_equal(d, 0);
	CK(cuCtxPopCurrent_v2(&cur));
	assert_ptr_equal(cur, c);
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, p);
	CK(cuCtxPushCurrent_v2(c));
	CK(cuCtxSynchronize());
	CK(cuCtxDestroy_v2(c));
	CK(cuCtxGetCurrent(&cur));
	assert_ptr_equal(cur, p);
	CK(cuDevicePrimaryCtxRelease_v2(1));
	CK(cuDevicePrimaryCtxRelease_v2(1));
	CK(cuDevicePrimaryCtxGetState(1, &flags, &active));
	assert_int_equal(active, 0);
	assert_int_equal(cuDevicePrimaryCtxRelease_v2(1), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuCtxSetCurrent(NULL));
}

static void test_memory_accounting(void **state)
{
	CUdeviceptr a, b, m;
	size_t free0, free1, total;

	(void)state;
	tdt_ctx(0);
	CK(cuMemGetInfo_v2(&free0, &total));
	assert_int_equal(total, 1ull << 30);
	CK(cuMemAlloc_v2(&a, 256 << 20));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free0 - free1, 256 << 20);
	/* Device memory cannot be oversubscribed ... */
	assert_int_equal(cuMemAlloc_v2(&b, 900u << 20), CUDA_ERROR_OUT_OF_MEMORY);
	/* ... managed memory can, and does not reduce free. */
	CK(cuMemAllocManaged(&m, 2ull << 30, CU_MEM_ATTACH_GLOBAL));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free0 - free1, 256 << 20);
	/* Real host memory backs both: write through the pointers. */
	memset((void *)(uintptr_t)a, 0x5a, 4096);
	((char *)(uintptr_t)m)[(2ull << 30) - 1] = 1;
	CK(cuMemFree_v2(a));
	CK(cuMemFree_v2(m));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free1, free0);
	assert_int_equal(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
}

static void test_pointer_attributes(void **state)
{
	CUdeviceptr a, m, base;
	CUcontext c = tdt_ctx(1), pc;
	unsigned int managed = 7, type = 0;
	int ord = -1;
	size_t size;
	CUpointer_attribute attrs[] = { CU_POINTER_ATTRIBUTE_IS_MANAGED,
					CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
					CU_POINTER_ATTRIBUTE_CONTEXT };
	void *data[] = { &managed, &ord, &pc };
	int local;

	(void)state;
	CK(cuMemAlloc_v2(&a, 1000));
	CK(cuMemAllocManaged(&m, 1000, CU_MEM_ATTACH_GLOBAL));
	CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, a + 10));
	assert_int_equal(managed, 0);
	CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, m));
	assert_int_equal(managed, 1);
	CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, m));
	assert_int_equal(type, CU_MEMORYTYPE_DEVICE);
	CK(cuPointerGetAttribute(&ord, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a));
	assert_int_equal(ord, 1);
	CK(cuPointerGetAttribute(&pc, CU_POINTER_ATTRIBUTE_CONTEXT, a));
	assert_ptr_equal(pc, c);
	CK(cuMemGetAddressRange_v2(&base, &size, a + 999));
	assert_int_equal(base, a);
	assert_int_equal(size, 1000);
	assert_int_equal(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED,
					       (CUdeviceptr)(uintptr_t)&local),
			 CUDA_ERROR_INVALID_VALUE);
	CK(cuPointerGetAttributes(3, attrs, data, m));
	assert_int_equal(managed, 1);
	assert_int_equal(ord, 1);
	assert_ptr_equal(pc, c);
	/* Not a CUDA pointer: defaults, no error. */
	CK(cuPointerGetAttributes(3, attrs, data, (CUdeviceptr)(uintptr_t)&local));
	assert_int_equal(managed, 0);
	assert_null(pc);
	CK(cuMemFree_v2(a));
	CK(cuMemFree_v2(m));
}

static void test_ipc_and_host(void **state)
{
	CUdeviceptr a, m;
	CUipcMemHandle h;
	void *hp;
	unsigned int type;

	(void)state;
	tdt_ctx(0);
	CK(cuMemAlloc_v2(&a, 4096));
	CK(cuMemAllocManaged(&m, 4096, CU_MEM_ATTACH_GLOBAL));
	CK(cuIpcGetMemHandle(&h, a));
	assert_int_equal(cuIpcGetMemHandle(&h, m), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemAllocHost_v2(&hp, 4096));
	CK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				 (CUdeviceptr)(uintptr_t)hp));
	assert_int_equal(type, CU_MEMORYTYPE_HOST);
	CK(cuMemFreeHost(hp));
	CK(cuMemFree_v2(a));
	CK(cuMemFree_v2(m));
}

static void test_pitch_and_vmm(void **state)
{
	CUdeviceptr p, va;
	size_t pitch, gran, free0, free1, total;
	CUmemAllocationProp prop = { 0 };
	CUmemAccessDesc acc = { 0 };
	CUmemGenericAllocationHandle h;

	(void)state;
	tdt_ctx(0);
	CK(cuMemAllocPitch_v2(&p, &pitch, 100, 10, 4));
	assert_true(pitch >= 100);
	CK(cuMemFree_v2(p));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	CK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	CK(cuMemGetInfo_v2(&free0, &total));
	CK(cuMemCreate(&h, 2 * gran, &prop, 0));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free0 - free1, 2 * gran);
	CK(cuMemAddressReserve(&va, 4 * gran, 0, 0, 0));
	CK(cuMemMap(va, 2 * gran, 0, h, 0));
	CK(cuMemMap(va + 2 * gran, 2 * gran, 0, h, 0));
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CK(cuMemSetAccess(va, 4 * gran, &acc, 1));
	/* Two mappings of one allocation share their contents. */
	((char *)(uintptr_t)va)[5] = 42;
	assert_int_equal(((char *)(uintptr_t)va)[2 * gran + 5], 42);
	CK(cuMemUnmap(va, 4 * gran));
	CK(cuMemRelease(h));
	CK(cuMemAddressFree(va, 4 * gran));
	CK(cuMemGetInfo_v2(&free1, &total));
	assert_int_equal(free1, free0);
}

static void test_errors(void **state)
{
	const char *s;

	(void)state;
	CK(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "CUDA_ERROR_OUT_OF_MEMORY");
	CK(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s));
	assert_string_equal(s, "out of memory");
	assert_int_equal(cuGetErrorName((CUresult)12345, &s), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetExportTable((const void **)&s, NULL), CUDA_ERROR_NOT_SUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_devices),
		cmocka_unit_test(test_contexts),
		cmocka_unit_test(test_memory_accounting),
		cmocka_unit_test(test_pointer_attributes),
		cmocka_unit_test(test_ipc_and_host),
		cmocka_unit_test(test_pitch_and_vmm),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
