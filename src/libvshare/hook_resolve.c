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

/* A sanitizer runtime resolves its interceptors with dlsym before it has
 * set itself up, so the code on dlsym's path must not be instrumented. */
#define NO_SAN __attribute__((no_sanitize("address", "undefined", "thread")))

typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

static dlsym_fn real_dlsym_fn;
static dlopen_fn real_dlopen_fn;
static dlclose_fn real_dlclose_fn;

/*
 * A function of the C library's dynamic loader interface, found through
 * dlvsym under the version names it has had: GLIBC_2.34 (where libdl moved
 * into libc), the x86-64 and aarch64 base versions, and the i386/arm ones
 * for completeness. Taken from the library after the shim, so that a
 * sanitizer's interceptor (not yet set up when it calls dlsym) is skipped.
 */
NO_SAN static void *find_libc(const char *name, void **cache)
{
	static const char *const versions[] = {
		"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.4",
		"GLIBC_2.0",
	};
	void *fn = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (fn != NULL)
		return fn;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		fn = dlvsym(RTLD_NEXT, name, versions[i]);
		if (fn != NULL)
			break;
	}
	if (fn == NULL) {
		log_once(LOG_LVL_ERROR, "cannot find the C library's %s; "
			 "symbol lookups through dlsym may fail", name);
		return NULL;
	}
	__atomic_store_n(cache, fn, __ATOMIC_RELEASE);
	return fn;
}

void *shim_dlsym_real(void *handle, const char *name);

NO_SAN void *shim_dlsym_real(void *handle, const char *name)
{
	dlsym_fn fn = (dlsym_fn)find_libc("dlsym", (void **)&real_dlsym_fn);

	return fn != NULL ? fn(handle, name) : NULL;
}

/* strcmp, which a sanitizer intercepts: unusable while it sets up. */
NO_SAN static int same_name(const char *a, const char *b)
{
	while (*a != '\0' && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

/* The link map of an object, by an address inside it. */
NO_SAN static struct link_map *map_of(const void *addr)
{
	struct link_map *lm = NULL;
	Dl_info info;

	if (!dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
		return NULL;
	return lm;
}

/* Objects after `from` in load order, searched through handles of their
 * own (a link_map is not a valid handle for every object). */
NO_SAN static void *search_after(struct link_map *from, const char *name)
{
	dlopen_fn open = (dlopen_fn)find_libc("dlopen", (void **)&real_dlopen_fn);
	dlclose_fn close = (dlclose_fn)find_libc("dlclose",
						 (void **)&real_dlclose_fn);

	if (open == NULL || close == NULL)
		return NULL;
	for (struct link_map *lm = from->l_next; lm != NULL; lm = lm->l_next) {
		void *h, *p;

		if (lm->l_name == NULL || lm->l_name[0] == '\0')
			continue;
		h = open(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (h == NULL)
			continue;
		p = shim_dlsym_real(h, name);
		close(h);
		if (p != NULL)
			return p;
	}
	return NULL;
}

/*
 * RTLD_NEXT means "after the caller's object", and glibc tells the caller
 * by the return address, which inside this wrapper is the shim. A caller
 * loaded before the shim (the program, a sanitizer runtime, an earlier
 * preload) gets the shim's own definition or what follows the shim: that
 * path takes no lock and allocates nothing, as a sanitizer runtime that is
 * still setting itself up requires. A caller loaded after the shim gets
 * the objects after itself, searched one by one.
 */
NO_SAN static void *dlsym_next(const char *name, const void *caller)
{
	struct link_map *self = map_of((const void *)dlsym_next);
	struct link_map *from = map_of(caller);

	if (self == NULL || from == NULL)
		return shim_dlsym_real(RTLD_NEXT, name);
	for (struct link_map *lm = from->l_next; lm != NULL; lm = lm->l_next) {
		if (lm != self)
			continue;
		if (same_name(name, "dlsym"))
			return (void *)dlsym;
		if (name[0] == 'c' && name[1] == 'u' && hook_find(name) >= 0)
			return hook_infos[hook_find(name)].hook;
		return shim_dlsym_real(RTLD_NEXT, name);
	}
	return search_after(from, name);
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

NO_SAN VSHARE_EXPORT void *dlsym(void *handle, const char *name);

NO_SAN VSHARE_EXPORT void *dlsym(void *handle, const char *name)
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
