/*
 * The shim's top: one-time init (loading the real driver, wiring the
 * layers together), exit and fork handling, and what the hook bodies need
 * from it.
 */
#ifndef VSHARE_SHIM_H
#define VSHARE_SHIM_H

#include <cuda.h>

/* Real pointer of a hook id, initializing the shim on first use. NULL
 * when the driver lacks the symbol or could not be loaded. */
void *shim_real(int id);

/* Make sure the one-time init has run (no-op inside the init itself). */
void shim_ensure_init(void);

/* Return value of a hook whose real function is missing; logs once. */
CUresult shim_missing(const char *sym);

#endif
