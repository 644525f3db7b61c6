/*
 * The reentrancy guard's per-thread state (shim_guard.h).
 */
#include "shim_guard.h"

/* Initial-exec TLS: the shim is preloaded, so its few bytes come from the
 * static TLS block and each access is a plain load, not a call. */
#define SHIM_TLS __thread __attribute__((tls_model("initial-exec")))

static SHIM_TLS int shim_depth;
static SHIM_TLS int shim_initializing;

int shim_guard_enter(void)
{
	if (shim_depth != 0 || shim_initializing)
		return 0;
	shim_depth = 1;
	return 1;
}

void shim_guard_leave(void)
{
	shim_depth = 0;
}

int shim_guard_active(void)
{
	return shim_depth > 0 || shim_initializing;
}

void shim_guard_init_begin(void)
{
	shim_initializing = 1;
}

void shim_guard_init_end(void)
{
	shim_initializing = 0;
}

int shim_guard_initializing(void)
{
	return shim_initializing;
}

void shim_guard_depth_add(int delta)
{
	shim_depth += delta;
}
