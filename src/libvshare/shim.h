/*
 * The shim's process-wide state: configuration, one-time init (loading
 * the real driver), the reentrancy guard and fork handling.
 */
#ifndef VSHARE_SHIM_H
#define VSHARE_SHIM_H

#include <cuda.h>
#include <stdint.h>

/* VSHARE_* settings of the memory half, read once at init. */
struct shim_conf {
	int convert;              /* VSHARE_CONVERT, default 1 */
	int allow_single_oversub; /* VSHARE_ALLOW_SINGLE_OVERSUB, default 0 */
	uint64_t mem_limit;       /* VSHARE_MEM_LIMIT, 0 = none */
	uint64_t capacity;        /* VSHARE_CAPACITY, 0 = none */
	const char *libcuda;      /* VSHARE_LIBCUDA, default libcuda.so.1 */
};

extern struct shim_conf shim_conf;

/* Real pointer of a hook id, initializing the shim on first use. NULL
 * when the driver lacks the symbol or could not be loaded. */
void *shim_real(int id);

/* Make sure the one-time init has run (no-op inside the init itself). */
void shim_ensure_init(void);

/*
 * The reentrancy guard. A hook calls shim_guard_enter(): 1 means the
 * caller is the outermost shim frame on this thread and must call
 * shim_guard_leave() when done; 0 means the shim is already active on this
 * thread (its own driver calls, or a driver calling its own exported
 * entry points), so the hook goes straight to the real function.
 */
int  shim_guard_enter(void);
void shim_guard_leave(void);
int  shim_guard_active(void);

/* Return value of a hook whose real function is missing; logs once. */
CUresult shim_missing(const char *sym);

#endif
