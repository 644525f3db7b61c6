/*
 * The hook table generated from hooks.def: one id per hooked or called
 * driver symbol, the real driver's pointer for each, and the lookups that
 * the dlsym and cuGetProcAddress interposers use. The hook bodies and the
 * init that fills the real pointers are the top's (hook_body.h, shim.c).
 */
#ifndef VSHARE_HOOKS_H
#define VSHARE_HOOKS_H

#include <cuda.h>
#include <stddef.h>

enum hook_id {
#define H(kind, sym, base, since, pt, stream, params, args) HK_##sym,
#include "hooks.def"
#undef H
	HK_COUNT
};

enum hook_kind {
	HOOK_SUBMIT, HOOK_COPY, HOOK_CAPTURE_BEGIN, HOOK_CAPTURE_END, HOOK_SYNC,
	HOOK_QUERY, HOOK_ALLOC, HOOK_FREE, HOOK_PIN, HOOK_UNPIN, HOOK_INFO,
	HOOK_CTX, HOOK_RESOLVE, HOOK_REAL
};

struct hook_info {
	const char *name;       /* the real driver's symbol */
	const char *base;       /* the name cuGetProcAddress is asked for */
	void *hook;             /* the shim's function; NULL for HOOK_REAL */
	int since;              /* CUDA version introducing this variant */
	unsigned char kind;     /* enum hook_kind */
	unsigned char per_thread;
};

extern const struct hook_info hook_infos[HK_COUNT];

/* Real driver entry points, indexed by hook id. Written at init and when a
 * lookup through the driver finds one the init did not; read with
 * hook_real_load() or REAL(). */
extern void *hook_real_tab[HK_COUNT];

static inline void *hook_real_load(enum hook_id id)
{
	return __atomic_load_n(&hook_real_tab[id], __ATOMIC_ACQUIRE);
}

/* Record p as the real function unless one is known already. */
static inline void hook_real_claim(enum hook_id id, void *p)
{
	void *none = NULL;

	__atomic_compare_exchange_n(&hook_real_tab[id], &none, p, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

/* The real function of a symbol, typed (NULL if the driver does not have
 * it). It reads the table only: code below the hooks (mem_*, the gate's
 * CUDA operations) runs after a hook made sure of the init. A hook itself
 * uses REAL_INIT (hook_body.h), which runs the init first. */
#define REAL(sym) ((__typeof__(&sym))hook_real_load(HK_##sym))

/* The stream of a per-thread (_ptsz) variant: there NULL means the calling
 * thread's default stream, not the legacy one. */
#define PTSZ(s) ((s) != NULL ? (s) : CU_STREAM_PER_THREAD)

/* Id of a hooked symbol by its exported name; -1 if not hooked. */
int hook_find(const char *name);

/*
 * What cuGetProcAddress should hand out for `base` when the real one
 * returned `fn`. Returns the hook when fn is one of the hooked variants of
 * base, identified by address, else by the driver's own rule (newest
 * variant not newer than cuda_version, per-thread variant if asked for);
 * the identified variant's real pointer is recorded if the init had none.
 * Returns fn itself for anything not hooked, and NULL (refuse it) for a
 * variant of a hooked function older than every variant hooked.
 */
void *hook_for_proc(const char *base, void *fn, int cuda_version,
		    unsigned long long flags);

/* Resolve every real pointer from the driver library handle. Returns the
 * number found. */
int hook_resolve_all(void *(*lookup)(void *handle, const char *name),
		     void *handle);

/* Every hook, exported under the driver's own name (cuda.h declares the
 * prototype; this only makes it visible). */
#define VSHARE_EXPORT __attribute__((visibility("default")))
#define H_EXPORT_SUBMIT(sym)        VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_COPY(sym)          VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_CAPTURE_BEGIN(sym) VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_CAPTURE_END(sym)   VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_SYNC(sym)          VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_QUERY(sym)         VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_ALLOC(sym)         VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_FREE(sym)          VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_PIN(sym)           VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_UNPIN(sym)         VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_INFO(sym)          VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_CTX(sym)           VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_RESOLVE(sym)       VSHARE_EXPORT __typeof__(sym) sym;
#define H_EXPORT_REAL(sym)
#define H(kind, sym, base, since, pt, stream, params, args) H_EXPORT_##kind(sym)
#include "hooks.def"
#undef H

#endif
