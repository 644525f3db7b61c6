/*
 * The table of hooks generated from hooks.def, the lookups the dlsym
 * interposer (hook_dlsym.c) and cuGetProcAddress use, and the
 * cuGetProcAddress interposers themselves: they are in the table they
 * read, so they share its object (no circle between two files).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "hook_body.h"
#include "log.h"

#define H_FN_SUBMIT(sym)        (void *)sym
#define H_FN_COPY(sym)          (void *)sym
#define H_FN_CAPTURE_BEGIN(sym) (void *)sym
#define H_FN_CAPTURE_END(sym)   (void *)sym
#define H_FN_SYNC(sym)          (void *)sym
#define H_FN_QUERY(sym)         (void *)sym
#define H_FN_ALLOC(sym)         (void *)sym
#define H_FN_FREE(sym)          (void *)sym
#define H_FN_PIN(sym)           (void *)sym
#define H_FN_UNPIN(sym)         (void *)sym
#define H_FN_INFO(sym)          (void *)sym
#define H_FN_CTX(sym)           (void *)sym
#define H_FN_RESOLVE(sym)       (void *)sym
#define H_FN_REAL(sym)          NULL

const struct hook_info hook_infos[HK_COUNT] = {
#define H(kind, sym, base, since, pt, stream, params, args) \
	{ #sym, #base, H_FN_##kind(sym), since, HOOK_##kind, pt },
#include "hooks.def"
#undef H
};

/* Hook ids sorted by symbol and by base name, for binary search. Built
 * once with an insertion sort: dlsym can be called very early (by other
 * preloaded libraries, by a malloc replacement), so this must not allocate. */
static short by_name[HK_COUNT];
static short by_base[HK_COUNT];
static pthread_once_t sort_once = PTHREAD_ONCE_INIT;

static void sort_ids(short *ids, int use_base)
{
	for (int i = 0; i < HK_COUNT; i++) {
		const char *key = use_base ? hook_infos[i].base : hook_infos[i].name;
		int j = i;

		while (j > 0) {
			const struct hook_info *p = &hook_infos[ids[j - 1]];

			if (strcmp(use_base ? p->base : p->name, key) <= 0)
				break;
			ids[j] = ids[j - 1];
			j--;
		}
		ids[j] = (short)i;
	}
}

static void sort_tables(void)
{
	sort_ids(by_name, 0);
	sort_ids(by_base, 1);
}

/* First position in ids whose key is >= s. */
static int lower_bound(const short *ids, int use_base, const char *s)
{
	int lo = 0, hi = HK_COUNT;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		const struct hook_info *p = &hook_infos[ids[mid]];

		if (strcmp(use_base ? p->base : p->name, s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int hook_find(const char *name)
{
	int pos;

	pthread_once(&sort_once, sort_tables);
	pos = lower_bound(by_name, 0, name);
	if (pos < HK_COUNT && strcmp(hook_infos[by_name[pos]].name, name) == 0 &&
	    hook_infos[by_name[pos]].kind != HOOK_REAL)
		return by_name[pos];
	return -1;
}

/* The variant the driver's rule selects: the newest one not newer than
 * the requested version, per-thread only if asked for and one exists. */
static int pick_variant(int first, int end, int cuda_version, int want_pt)
{
	int has_pt = 0, best = -1;

	for (int k = first; k < end; k++)
		has_pt |= hook_infos[by_base[k]].per_thread;
	want_pt = want_pt && has_pt;
	for (int k = first; k < end; k++) {
		const struct hook_info *h = &hook_infos[by_base[k]];

		if (h->per_thread != want_pt || h->since > cuda_version)
			continue;
		if (best < 0 || h->since > hook_infos[best].since)
			best = by_base[k];
	}
	return best;
}

/* Whether a variant of this kind that the shim did not hook would go
 * around it: an allocation outside the memory limit, work outside the GPU
 * lock. Any other call (a context's retain or release, a free, a query)
 * only reaches the driver past the shim's bookkeeping. */
static int escapes(unsigned char kind)
{
	return kind == HOOK_ALLOC || kind == HOOK_PIN || kind == HOOK_SUBMIT ||
	       kind == HOOK_COPY;
}

void *hook_for_proc(const char *base, void *fn, int cuda_version,
		    unsigned long long flags)
{
	int first, end, id, guarded = 0;

	if (fn == NULL || base == NULL)
		return fn;
	pthread_once(&sort_once, sort_tables);
	first = lower_bound(by_base, 1, base);
	for (end = first; end < HK_COUNT &&
	     strcmp(hook_infos[by_base[end]].base, base) == 0; end++) {
		const struct hook_info *h = &hook_infos[by_base[end]];

		if (fn == h->hook)
			return fn;
		if (h->kind != HOOK_REAL && fn == hook_real_load(by_base[end]))
			return h->hook;
		guarded |= escapes(h->kind);
	}
	if (first == end)
		return fn;
	/* The driver handed out an address that is not one of its exports:
	 * tell the variant by the driver's own selection rule. */
	id = pick_variant(first, end, cuda_version,
			  (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0);
	/* A variant older than every one the shim hooks (the 32-bit
	 * cuMemAlloc of CUDA before 3.2, ...) would be a way around it. */
	if (id < 0 && guarded)
		return NULL;
	if (id < 0)
		log_debug("%s (CUDA %d): older than every variant hooked, the "
			  "driver's own", base, cuda_version);
	if (id < 0 || hook_infos[id].kind == HOOK_REAL)
		return fn;
	hook_real_claim(id, fn);
	log_debug("%s (CUDA %d, flags %llu): driver address %p taken as %s",
		  base, cuda_version, flags, fn, hook_infos[id].name);
	return hook_infos[id].hook;
}

/* The oldest variant of base that the shim hooks (for the line that
 * says why a request was refused). */
static const struct hook_info *oldest_hook(const char *base)
{
	const struct hook_info *best = NULL;

	for (int pos = lower_bound(by_base, 1, base); pos < HK_COUNT &&
	     strcmp(hook_infos[by_base[pos]].base, base) == 0; pos++) {
		const struct hook_info *h = &hook_infos[by_base[pos]];

		if (escapes(h->kind) && (best == NULL || h->since < best->since))
			best = h;
	}
	return best;
}

/* The object the request came from, by the caller's return address:
 * the library that would have to ask for a newer variant. */
static const char *caller_object(const void *ret)
{
	Dl_info info;

	if (ret != NULL && dladdr(ret, &info) && info.dli_fname != NULL &&
	    info.dli_fname[0] != '\0')
		return info.dli_fname;
	return program_invocation_name;
}

/*
 * The cuGetProcAddress interposers: the CUDA runtime gets every driver
 * entry point through them since CUDA 11.3. The driver chooses the
 * variant; the shim hands out that variant's hook (hook_for_proc), the
 * driver's own function for a call that cannot escape the shim, and
 * refuses an allocation or submission variant older than every one it
 * hooks.
 */
static CUresult map_proc(const char *symbol, void **pfn, int version,
			 cuuint64_t flags, CUdriverProcAddressQueryResult *st,
			 const void *caller)
{
	const struct hook_info *h;
	void *fn;

	if (pfn == NULL || *pfn == NULL)
		return CUDA_SUCCESS;
	fn = hook_for_proc(symbol, *pfn, version, flags);
	if (fn != NULL) {
		*pfn = fn;
		return CUDA_SUCCESS;
	}
	/* Answered as the driver answers for a name that exists only in
	 * newer versions, which is what it is under the shim. */
	h = oldest_hook(symbol);
	log_once(LOG_LVL_ERROR, "cuGetProcAddress(\"%s\", CUDA %d) from %s: "
		 "refused: vshare intercepts %s from CUDA %d on, and the "
		 "older variant would %s; it must ask for CUDA %d or later "
		 "(further such requests are refused without a line)", symbol, version, caller_object(caller), symbol,
		 h ? h->since : 0,
		 h && (h->kind == HOOK_ALLOC || h->kind == HOOK_PIN) ?
		 "allocate outside the memory limit" :
		 "run work outside the GPU lock", h ? h->since : 0);
	*pfn = NULL;
	if (st != NULL)
		*st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	return CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags)
{
	__typeof__(&cuGetProcAddress) real = REAL_INIT(cuGetProcAddress);
	CUresult r;

	if (real == NULL)
		return shim_missing("cuGetProcAddress");
	if (!shim_guard_enter())
		return real(symbol, pfn, cudaVersion, flags);
	r = real(symbol, pfn, cudaVersion, flags);
	if (r == CUDA_SUCCESS)
		r = map_proc(symbol, pfn, cudaVersion, flags, NULL,
			     __builtin_return_address(0));
	shim_guard_leave();
	return r;
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	__typeof__(&cuGetProcAddress_v2) real = REAL_INIT(cuGetProcAddress_v2);
	CUresult r;

	if (real == NULL)
		return shim_missing("cuGetProcAddress_v2");
	if (!shim_guard_enter())
		return real(symbol, pfn, cudaVersion, flags, symbolStatus);
	r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
	if (r == CUDA_SUCCESS)
		r = map_proc(symbol, pfn, cudaVersion, flags, symbolStatus,
			     __builtin_return_address(0));
	shim_guard_leave();
	return r;
}
