/*
 * The cuGetProcAddress interposers: the CUDA runtime gets every driver
 * entry point through them since CUDA 11.3. The driver chooses the
 * variant; the shim hands out that variant's hook (hook_for_proc).
 */
#include "hook_body.h"

static void map_proc(const char *symbol, void **pfn, int version,
		     cuuint64_t flags)
{
	if (pfn != NULL && *pfn != NULL)
		*pfn = hook_for_proc(symbol, *pfn, version, flags);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress) real = REAL_INIT(cuGetProcAddress);
	CUresult r;

	if (real == NULL)
		return shim_missing("cuGetProcAddress");
	if (!shim_guard_enter())
		return real(symbol, pfn, cudaVersion, flags);
	r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS)
		map_proc(symbol, pfn, cudaVersion, flags);
	shim_guard_leave();
	return r;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	__typeof__(&cuGetProcAddress_v2) real = REAL_INIT(cuGetProcAddress_v2);
	CUresult r;

	if (real == NULL)
		return shim_missing("cuGetProcAddress_v2");
	if (!shim_guard_enter())
		return real(symbol, pfn, cudaVersion, flags, symbolStatus);
	r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (r == CUDA_SUCCESS)
		map_proc(symbol, pfn, cudaVersion, flags);
	shim_guard_leave();
	return r;
}
