/*
 * VSHARE_* environment settings of the shim, read once. A bad value is
 * reported once and the default used: the shim never stops the host
 * program over its own configuration.
 */
#ifndef VSHARE_SHIM_ENV_H
#define VSHARE_SHIM_ENV_H

#include <stdint.h>

/* Each returns the default when the variable is unset or bad (logged). */
uint64_t    shim_env_size(const char *name, uint64_t dflt);
/* A memory limit: also refuses a number below 1 MiB with no unit
 * (VS_SIZE_NEED_UNIT), asking for the unit that was left out. */
uint64_t    shim_env_mem(const char *name, uint64_t dflt);
uint64_t    shim_env_u64(const char *name, uint64_t dflt, uint64_t min, uint64_t max);
int         shim_env_bool(const char *name, int dflt);
const char *shim_env_str(const char *name, const char *dflt);
/* CPUs this process may run on (its affinity mask), at least 1. */
int         shim_usable_cpus(void);

#endif
