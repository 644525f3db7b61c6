/*
 * The dlsym interposer: the CUDA runtime and frameworks load libcuda with
 * dlopen and look its functions up by name; hooked names get the hook.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hooks.h"
#include "shim_guard.h"
#include "shim_libc.h"

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
	for (struct link_map *lm = from->l_next; lm != NULL; lm = lm->l_next) {
		void *h, *p;

		if (lm->l_name == NULL || lm->l_name[0] == '\0')
			continue;
		h = shim_libc_dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
		if (h == NULL)
			continue;
		p = shim_dlsym_real(h, name);
		shim_libc_dlclose(h);
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
	/* No init from here: dlsym runs inside other libraries'
	 * constructors, under the loader lock that the init's dlopen would
	 * wait for. The driver's function found here is the real one. */
	real = hook_real_load((enum hook_id)id);
	if (p == real)
		return hook_infos[id].hook;
	/* Another library's function of the same name (a second
	 * interposer, a wrapper) is left alone. */
	if (!in_driver_library(p))
		return p;
	if (real == NULL)
		hook_real_claim((enum hook_id)id, p);
	return hook_infos[id].hook;
}
