/*
 * How programs find the hooks: dlsym (the CUDA runtime and frameworks
 * load libcuda with dlopen), cuGetProcAddress (the runtime gets every
 * driver entry point through it since CUDA 11.3), and the exported hooks
 * themselves (programs linked against libcuda).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hooks.h"
#include "log.h"

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym_fn;

/* glibc's dlsym, found through dlvsym under the version names it has had:
 * GLIBC_2.34 (where libdl moved into libc), the x86-64 and aarch64 base
 * versions, and the i386/arm ones for completeness. */
static dlsym_fn find_real_dlsym(void)
{
	static const char *const versions[] = {
		"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.4",
		"GLIBC_2.0",
	};
	dlsym_fn fn = __atomic_load_n(&real_dlsym_fn, __ATOMIC_ACQUIRE);

	if (fn != NULL)
		return fn;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
		if (fn != NULL)
			break;
	}
	if (fn == NULL) {
		log_once(LOG_LVL_ERROR, "cannot find the C library's dlsym; "
			 "symbol lookups through dlsym fail");
		return NULL;
	}
	__atomic_store_n(&real_dlsym_fn, fn, __ATOMIC_RELEASE);
	return fn;
}

void *shim_dlsym_real(void *handle, const char *name);

void *shim_dlsym_real(void *handle, const char *name)
{
	dlsym_fn fn = find_real_dlsym();

	return fn != NULL ? fn(handle, name) : NULL;
}

/* RTLD_NEXT means "after the caller's object", and glibc tells the
 * caller by the return address, which inside this wrapper is the shim.
 * Search the objects loaded after the caller instead. */
static void *dlsym_next(const char *name, const void *caller)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || lm == NULL)
		return shim_dlsym_real(RTLD_NEXT, name);
	for (lm = lm->l_next; lm != NULL; lm = lm->l_next) {
		void *p = shim_dlsym_real(lm, name);

		if (p != NULL)
			return p;
	}
	return NULL;
}

/* Whether p lies in a library whose file name is the CUDA driver's. */
static int in_driver_library(void *p)
{
	Dl_info info;
	const char *base;

	if (!dladdr(p, &info) || info.dli_fname == NULL)
		return 0;
	base = strrchr(info.dli_fname, '/');
	base = base != NULL ? base + 1 : info.dli_fname;
	return strncmp(base, "libcuda.so", 10) == 0;
}

VSHARE_EXPORT void *dlsym(void *handle, const char *name)
{
	void *p, *real;
	int id;

	p = handle == RTLD_NEXT ? dlsym_next(name, __builtin_return_address(0))
				: shim_dlsym_real(handle, name);
	if (p == NULL || name[0] != 'c' || name[1] != 'u' ||
	    shim_guard_active())
		return p;
	id = hook_find(name);
	if (id < 0 || p == hook_infos[id].hook)
		return p;
	shim_ensure_init();
	real = hook_real_load((enum hook_id)id);
	if (real == NULL) {
		hook_real_store((enum hook_id)id, p);
		return hook_infos[id].hook;
	}
	/* Another library's function of the same name (a second
	 * interposer, a wrapper) is left alone. */
	if (p == real || in_driver_library(p))
		return hook_infos[id].hook;
	return p;
}

static void map_proc(const char *symbol, void **pfn, int version,
		     cuuint64_t flags)
{
	if (pfn != NULL && *pfn != NULL)
		*pfn = hook_for_proc(symbol, *pfn, version, flags);
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress) real = REAL(cuGetProcAddress);
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
	__typeof__(&cuGetProcAddress_v2) real = REAL(cuGetProcAddress_v2);
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
