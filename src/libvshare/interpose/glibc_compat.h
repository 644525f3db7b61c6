/*
 * Bind libc symbols to old versions. The shim is preloaded into container
 * images whose glibc is older than the build machine's (Ubuntu 20.04 has
 * 2.31, UBI8 2.28). glibc 2.34 moved libdl and libpthread into libc and
 * gave their functions a new GLIBC_2.34 version, which a program built
 * here binds by default; the old versions are still exported by every
 * newer glibc. This header is force-included (-include) into every source
 * of libvshare.so by vshare_layer (src/libvshare/CMakeLists.txt), so code
 * added to any layer later is covered too; the test shim.glibc_versions
 * fails on any GLIBC_ version above 2.28.
 *
 * dlsym is not listed: the shim defines its own dlsym (hook_dlsym.c) and
 * reaches the C library's through dlvsym under each version it has had
 * (shim_libc.c). fstat is not listed either: its symbol only exists since
 * 2.33, so client_fd.c makes the system call itself.
 */
#ifndef VSHARE_GLIBC_COMPAT_H
#define VSHARE_GLIBC_COMPAT_H

#if defined(__x86_64__)
#define VSHARE_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define VSHARE_GLIBC_BASE "GLIBC_2.17"
#endif

#ifdef VSHARE_GLIBC_BASE
#define VSHARE_SYMVER(sym, ver) __asm__(".symver " #sym "," #sym "@" ver)
/* Functions that exist since the architecture's first glibc. */
#define VSHARE_SYMVER_BASE(sym) VSHARE_SYMVER(sym, VSHARE_GLIBC_BASE)

VSHARE_SYMVER_BASE(dlopen);
VSHARE_SYMVER_BASE(dlclose);
VSHARE_SYMVER_BASE(dlerror);
VSHARE_SYMVER_BASE(dlvsym);
VSHARE_SYMVER_BASE(dladdr);
VSHARE_SYMVER_BASE(pthread_once);
VSHARE_SYMVER_BASE(pthread_key_create);
VSHARE_SYMVER_BASE(pthread_key_delete);
VSHARE_SYMVER_BASE(pthread_getspecific);
VSHARE_SYMVER_BASE(pthread_setspecific);
VSHARE_SYMVER_BASE(pthread_create);
VSHARE_SYMVER_BASE(pthread_detach);
VSHARE_SYMVER_BASE(pthread_join);
VSHARE_SYMVER_BASE(pthread_kill);
VSHARE_SYMVER_BASE(pthread_cancel);
VSHARE_SYMVER_BASE(pthread_mutex_trylock);
VSHARE_SYMVER_BASE(pthread_mutexattr_init);
VSHARE_SYMVER_BASE(pthread_mutexattr_settype);
VSHARE_SYMVER_BASE(pthread_rwlock_rdlock);
VSHARE_SYMVER_BASE(pthread_rwlock_wrlock);
VSHARE_SYMVER_BASE(pthread_rwlock_unlock);
VSHARE_SYMVER_BASE(pthread_rwlock_init);
VSHARE_SYMVER_BASE(pthread_rwlock_destroy);
VSHARE_SYMVER_BASE(pthread_attr_setstacksize);
VSHARE_SYMVER_BASE(pthread_sigmask);
VSHARE_SYMVER_BASE(pthread_spin_lock);
VSHARE_SYMVER_BASE(pthread_spin_unlock);
VSHARE_SYMVER_BASE(pthread_spin_init);
VSHARE_SYMVER_BASE(sem_init);
VSHARE_SYMVER_BASE(sem_destroy);
VSHARE_SYMVER_BASE(sem_post);
VSHARE_SYMVER_BASE(sem_wait);
VSHARE_SYMVER_BASE(sem_timedwait);

#if defined(__x86_64__)
/* Added after the x86-64 base version, still far below 2.28. */
VSHARE_SYMVER(dladdr1, "GLIBC_2.3.3");
VSHARE_SYMVER(pthread_condattr_setclock, "GLIBC_2.3.3");
VSHARE_SYMVER(pthread_setname_np, "GLIBC_2.12");
VSHARE_SYMVER(pthread_getname_np, "GLIBC_2.12");
VSHARE_SYMVER(pthread_timedjoin_np, "GLIBC_2.3.3");
VSHARE_SYMVER(pthread_tryjoin_np, "GLIBC_2.3.3");
VSHARE_SYMVER(pthread_mutex_timedlock, "GLIBC_2.2.5");
#else
VSHARE_SYMVER_BASE(dladdr1);
VSHARE_SYMVER_BASE(pthread_condattr_setclock);
VSHARE_SYMVER_BASE(pthread_setname_np);
VSHARE_SYMVER_BASE(pthread_getname_np);
VSHARE_SYMVER_BASE(pthread_timedjoin_np);
VSHARE_SYMVER_BASE(pthread_tryjoin_np);
VSHARE_SYMVER_BASE(pthread_mutex_timedlock);
#endif

#endif /* VSHARE_GLIBC_BASE */
#endif
