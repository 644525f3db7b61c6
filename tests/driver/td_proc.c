/*
 * cuGetProcAddress and cuGetProcAddress_v2, driven by the table in
 * td_syms.def: the caller names a base symbol ("cuMemAlloc"), a CUDA
 * version and whether it wants per-thread default stream semantics; the
 * answer is the exported variant that version's headers would have bound
 * the name to.
 */
#include "td.h"

#include <string.h>

enum { PLAIN = 0, PT = 1 };

struct td_sym {
	const char *base;
	int version;
	int pt;
	void *fn;
};

static const struct td_sym syms[] = {
#define TD_SYM(base, version, pt, fn) { #base, version, pt, (void *)fn },
#include "td_syms.def"
#undef TD_SYM
};

/* Best entry for (name, version, per-thread), or NULL; *seen tells
 * whether the name exists at all. */
static const struct td_sym *lookup(const char *name, int version, int pt,
				   int *seen)
{
	const struct td_sym *best = NULL;
	size_t i;

	*seen = 0;
	for (i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
		const struct td_sym *s = &syms[i];

		if (strcmp(s->base, name) != 0)
			continue;
		*seen = 1;
		if (s->version > version || (s->pt && !pt))
			continue;
		if (!best || s->version > best->version ||
		    (s->version == best->version && s->pt > best->pt))
			best = s;
	}
	return best;
}

static CUresult proc_address(const char *symbol, void **pfn, int version,
			     cuuint64_t flags,
			     CUdriverProcAddressQueryResult *status)
{
	const struct td_sym *s;
	int seen;
	int pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;

	if (!symbol || !pfn)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & ~(cuuint64_t)(CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
		return CUDA_ERROR_INVALID_VALUE;
	*pfn = NULL;
	s = lookup(symbol, version, pt, &seen);
	if (status)
		*status = s ? CU_GET_PROC_ADDRESS_SUCCESS :
			seen ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT :
			CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
	if (!s)
		return CUDA_ERROR_NOT_FOUND;
	*pfn = s->fn;
	return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
			  cuuint64_t flags)
{
	return proc_address(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
			     cuuint64_t flags,
			     CUdriverProcAddressQueryResult *symbolStatus)
{
	return proc_address(symbol, pfn, cudaVersion, flags, symbolStatus);
}
