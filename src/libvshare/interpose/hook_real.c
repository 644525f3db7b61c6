/*
 * The real driver entry points (hooks.h): the table, and filling it at
 * init. Nothing here knows the hooks themselves, so that every layer can
 * read the table without reaching the top.
 */
#include <dlfcn.h>

#include "hooks.h"

void *hook_real_tab[HK_COUNT];

/* The driver's symbol names, by hook id. */
static const char *const real_names[HK_COUNT] = {
#define H(kind, sym, base, since, pt, stream, params, args) #sym,
#include "hooks.def"
#undef H
};

/* Whether p is a function of the object this code is in (the shim). */
static int in_this_object(void *p)
{
	Dl_info self, it;

	return dladdr((void *)in_this_object, &self) && dladdr(p, &it) &&
	       self.dli_fbase == it.dli_fbase;
}

int hook_resolve_all(void *(*lookup)(void *handle, const char *name),
		     void *handle)
{
	int found = 0;

	for (int i = 0; i < HK_COUNT; i++) {
		void *p = lookup(handle, real_names[i]);

		/* Never record one of the shim's own functions (its hook of
		 * this very name) as the real one: the hook would call
		 * itself. */
		if (p != NULL && !in_this_object(p)) {
			hook_real_claim((enum hook_id)i, p);
			found++;
		}
	}
	return found;
}
