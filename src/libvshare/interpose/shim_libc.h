/*
 * The C library's dlsym, dlopen and dlclose, reached without going through
 * the shim's own dlsym or a sanitizer's interceptors.
 */
#ifndef VSHARE_SHIM_LIBC_H
#define VSHARE_SHIM_LIBC_H

/* A sanitizer runtime resolves its interceptors with dlsym before it has
 * set itself up, so the code on dlsym's path must not be instrumented,
 * nor call a function the sanitizer intercepts. */
#define NO_SAN __attribute__((no_sanitize("address", "undefined", "thread")))

void *shim_dlsym_real(void *handle, const char *name);
void *shim_libc_dlopen(const char *file, int mode);
int   shim_libc_dlclose(void *handle);

#endif
