/*
 * Bulk prefetch of a device's managed memory on a grant (to the GPU,
 * much faster than page faults) or before an eager release (to host);
 * and the placement of each new converted allocation on its GPU. The
 * driver calls are the shim's own, through the one path (cu_query.h): a
 * bulk swap runs on the client thread, in a context of the device, with
 * its own streams, whatever capture the program has begun meanwhile.
 */
#include <stdlib.h>

#include "ctx_track.h"
#include "cu_query.h"
#include "gate.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_reg.h"

static CUresult prefetch_range(CUdeviceptr p, size_t size, int dev,
			       int to_host, CUstream s)
{
	CUmemLocation loc;

	/* CUDA 13 drivers have the CUmemLocation form only as _v2. */
	if (REAL(cuMemPrefetchAsync_v2) != NULL) {
		loc.type = to_host ? CU_MEM_LOCATION_TYPE_HOST
				   : CU_MEM_LOCATION_TYPE_DEVICE;
		loc.id = to_host ? 0 : dev;
		return CUQ(cuMemPrefetchAsync_v2, (p, size, loc, 0, s));
	}
	if (REAL(cuMemPrefetchAsync) != NULL)
		return CUQ(cuMemPrefetchAsync,
			   (p, size, to_host ? CU_DEVICE_CPU : dev, s));
	return CUDA_ERROR_NOT_SUPPORTED;
}

void mem_prefetch_new(CUdeviceptr p, size_t size, int dev, CUstream s)
{
	int tok;

	if (size < MEM_PREFETCH_NEW_MIN || gate_capturing() ||
	    (tok = gate_try_enter(dev)) == GATE_TRY_CLOSED)
		return;
	/* A hint: memory that stays unplaced is still correct. */
	(void)prefetch_range(p, size, dev, 0, s);
	gate_exit(tok);
}

/* A bulk swap is cut into chunks spread over several streams: the driver
 * works on the prefetches of different streams at once (more copy engines
 * and more of its own migration threads busy), where one prefetch per
 * allocation on one stream moves one range at a time. */
#define PREFETCH_CHUNK (64ull << 20)

/* The bytes whose prefetch the driver took; 0 when none. */
static uint64_t prefetch_entries(const struct mreg_entry *es, size_t n,
				 int dev, int to_host, int want)
{
	CUstream s[MEM_SWAP_STREAMS_MAX];
	int ns = 0, k = 0;
	uint64_t bytes = 0, chunk = want > 1 ? PREFETCH_CHUNK : UINT64_MAX;

	while (ns < want && ns < MEM_SWAP_STREAMS_MAX &&
	       CUQ(cuStreamCreate, (&s[ns], CU_STREAM_NON_BLOCKING)) ==
	       CUDA_SUCCESS)
		ns++;
	if (ns == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		for (uint64_t off = 0; off < es[i].size; off += chunk) {
			uint64_t len = es[i].size - off < chunk ? es[i].size - off
								: chunk;
			CUresult r = prefetch_range(es[i].key + off, len, dev,
						    to_host, s[k]);

			k = (k + 1) % ns;
			if (r == CUDA_SUCCESS) {
				bytes += len;
				continue;
			}
			log_once(LOG_LVL_INFO, "prefetch of managed memory "
				 "failed (CUDA error %d); pages move on demand",
				 (int)r);
			break;
		}
	}
	for (int j = 0; j < ns; j++) {
		(void)CUQ(cuStreamSynchronize, (s[j]));
		(void)CUQ(cuStreamDestroy_v2, (s[j]));
	}
	return bytes;
}

uint64_t mem_prefetch_device(int dev, int to_host, int streams)
{
	struct mreg_entry *es;
	struct cuq_scope sc;
	CUcontext ctx;
	size_t n, m;
	uint64_t bytes = 0;

	n = mreg_snapshot(dev, MREG_MANAGED, NULL, 0);
	if (n == 0 || ctx_list(dev, &ctx, 1) != 1)
		return 0;
	es = malloc(n * sizeof(*es));
	if (es == NULL)
		return 0;
	m = mreg_snapshot(dev, MREG_MANAGED, es, n);
	if (m < n)
		n = m;
	if (cuq_enter(&sc, 0, ctx) == 0) {
		bytes = prefetch_entries(es, n, dev, to_host, streams);
		cuq_leave(&sc);
	}
	free(es);
	return bytes;
}
