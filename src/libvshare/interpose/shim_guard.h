/*
 * The reentrancy guard: whether the shim is already active on the calling
 * thread. Kept apart from the init (shim.c), so that every layer can
 * enter it without calling up into the top.
 */
#ifndef VSHARE_SHIM_GUARD_H
#define VSHARE_SHIM_GUARD_H

/*
 * A hook calls shim_guard_enter(): 1 means the caller is the outermost
 * shim frame on this thread and must call shim_guard_leave() when done; 0
 * means the shim is already active on this thread (its own driver calls,
 * a driver calling its own exported entry points, or the init), so the
 * hook goes straight to the real function.
 */
int  shim_guard_enter(void);
void shim_guard_leave(void);
int  shim_guard_active(void);

/* The one-time init runs on this thread (shim.c): every hook it reaches
 * passes straight through, and the init is not started again. */
void shim_guard_init_begin(void);
void shim_guard_init_end(void);
int  shim_guard_initializing(void);

/* Around the init's pthread_once: the thread counts as inside the shim. */
void shim_guard_depth_add(int delta);

#endif
