/*
 * The C library's dynamic loader functions, found through dlvsym rather
 * than called by name: the shim defines its own dlsym, and a sanitizer
 * runtime intercepts dlopen and dlclose before it is ready to serve them.
 */
#include <dlfcn.h>
#include <stddef.h>

#include "log.h"
#include "shim_libc.h"

typedef void *(*dlsym_fn)(void *, const char *);
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

NO_SAN void *shim_dlsym_real(void *handle, const char *name)
{
	dlsym_fn fn = (dlsym_fn)find_libc("dlsym", (void **)&real_dlsym_fn);

	return fn != NULL ? fn(handle, name) : NULL;
}

NO_SAN void *shim_libc_dlopen(const char *file, int mode)
{
	dlopen_fn fn = (dlopen_fn)find_libc("dlopen", (void **)&real_dlopen_fn);

	return fn != NULL ? fn(file, mode) : NULL;
}

NO_SAN int shim_libc_dlclose(void *handle)
{
	dlclose_fn fn = (dlclose_fn)find_libc("dlclose",
					      (void **)&real_dlclose_fn);

	return fn != NULL ? fn(handle) : -1;
}
