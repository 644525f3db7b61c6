/*
 * The frame of every hook body (hook_*.c): the real function, found after
 * making sure of the init, the pass-through when it is missing or the shim
 * is already active on this thread, and the end.
 */
#ifndef VSHARE_HOOK_BODY_H
#define VSHARE_HOOK_BODY_H

#include "hooks.h"
#include "shim.h"
#include "shim_guard.h"

/* The real function of a symbol, typed, once the shim is initialized
 * (NULL if the driver does not have it). */
#define REAL_INIT(sym) ((__typeof__(&sym))shim_real(HK_##sym))

/* Start of a hand-written hook: the real function, a result, and the
 * pass-through when the real function is missing or the shim is already
 * active on this thread. HOOK_LEAVE ends it. */
#define HOOK_ENTER(sym, args)                                   \
	__typeof__(&sym) real_ = REAL_INIT(sym);                \
	CUresult r_;                                            \
	if (real_ == NULL)                                      \
		return shim_missing(#sym);                      \
	if (!shim_guard_enter())                                \
		return real_ args

/* End of a hook that HOOK_ENTER started: guard left, result returned. */
#define HOOK_LEAVE()                                            \
	shim_guard_leave();                                     \
	return r_

#endif
