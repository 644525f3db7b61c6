/*
 * What a copy into or out of managed memory costs beside device memory,
 * plain CUDA (run it without the shim): the mechanism behind the slower
 * interactive bursts beside a training job (docs/benchmarks.md). Each
 * case is --reps copies of --bytes, each waited for, --gap-ms apart; the
 * managed buffers are resident on the GPU (prefetched and written there)
 * before each case. One JSON object: each case's median and max in ms.
 *
 *   copy_probe [--bytes N] [--reps N] [--gap-ms N]
 */
#include "vsg_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static CUstream st;
static CUdevice dev;
static size_t bytes;
static CUdeviceptr dsrc, ddst, msrc, mdst;
static void *pinned, *pageable;
static CUfunction k_empty, k_touch;

enum kind {
	H2D_DEV, H2D_MGD, H2D_MGD_2M, H2D_DEV_PAGEABLE, H2D_MGD_PAGEABLE,
	D2D_DEV, D2D_MGD, D2H_MGD, D2H_DEV, SET_MGD, KERNEL, TOUCH_MGD,
	TOUCH_DEV, H2D_ADV, D2H_ADV, B_H2D, B_H2D_OV, B_H2D_PAGE_OV,
	B_H2D_PAGE_CALL, B_D2H_OV, B_H2D_ADV_OV, PREFETCH_MGD, UVM_PATH, UVM_NOPRE, PIN_DEV_MGD, H2D_SINGLE,
	PF_ROUND, N_KIND
};
static const char *names[N_KIND] = {
	"h2d_pinned_dev", "h2d_pinned_mgd", "h2d_pinned_mgd_2m",
	"h2d_pageable_dev", "h2d_pageable_mgd", "d2d_dev", "d2d_dev_to_mgd",
	"d2h_mgd_pinned", "d2h_dev_pinned", "memset_mgd", "empty_kernel",
	"touch_mgd", "touch_dev", "h2d_pinned_mgd_advised",
	"d2h_mgd_advised_pinned", "batch_h2d_pinned_mgd",
	"batch_h2d_pinned_mgd_overlap", "batch_h2d_pageable_mgd_overlap",
	"batch_h2d_pageable_mgd_during_call", "batch_d2h_mgd_pinned_overlap",
	"batch_h2d_pinned_mgd_advised_overlap", "prefetch_resident_mgd",
	"uvm_to_cpu_memcpy_to_gpu", "uvm_memcpy_faults_to_gpu",
	"h2d_pinned_dev_then_d2d_mgd", "h2d_pinned_mgd_attach_single",
	"prefetch_cpu_then_gpu",
};
static CUdeviceptr msingle;

static void prefetch(CUdeviceptr p, int host)
{
	CUmemLocation loc = { .type = host ? CU_MEM_LOCATION_TYPE_HOST
					   : CU_MEM_LOCATION_TYPE_DEVICE,
			      .id = host ? 0 : dev };

	VSG_CK(cuMemPrefetchAsync_v2(p, bytes, loc, 0, st));
}
static CUdeviceptr madv;

static void batch(CUdeviceptr dst, CUdeviceptr src, int order, int flags)
{
	CUmemcpyAttributes a = { 0 };
	size_t n = bytes, idx = 0;

	a.srcAccessOrder = (CUmemcpySrcAccessOrder)order;
	a.srcLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
	a.dstLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
	a.dstLocHint.id = dev;
	a.flags = (unsigned)flags;
	VSG_CK(cuMemcpyBatchAsync(&dst, &src, &n, 1, &a, &idx, 1, st));
}

static void resident(CUdeviceptr p)
{
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev };

	VSG_CK(cuMemPrefetchAsync_v2(p, bytes, loc, 0, st));
	VSG_CK(cuMemsetD8Async(p, 1, bytes, st));
	VSG_CK(cuStreamSynchronize(st));
}

static void touch(CUdeviceptr p)
{
	unsigned long long n = bytes / 4;
	void *args[] = { &p, &n };

	VSG_CK(cuLaunchKernel(k_touch, (unsigned)((n + 255) / 256), 1, 1, 256,
			      1, 1, 0, st, args, NULL));
}

static void one(enum kind k)
{
	switch (k) {
	case H2D_DEV:
		VSG_CK(cuMemcpyHtoDAsync(ddst, pinned, bytes, st));
		break;
	case H2D_MGD:
		VSG_CK(cuMemcpyHtoDAsync(mdst, pinned, bytes, st));
		break;
	case H2D_MGD_2M:
		for (size_t off = 0; off < bytes; off += 2u << 20)
			VSG_CK(cuMemcpyHtoDAsync(mdst + off, (char *)pinned + off,
						 bytes - off < (2u << 20) ?
						 bytes - off : (2u << 20), st));
		break;
	case H2D_DEV_PAGEABLE:
		VSG_CK(cuMemcpyHtoDAsync(ddst, pageable, bytes, st));
		break;
	case H2D_MGD_PAGEABLE:
		VSG_CK(cuMemcpyHtoDAsync(mdst, pageable, bytes, st));
		break;
	case D2D_DEV:
		VSG_CK(cuMemcpyDtoDAsync(ddst, dsrc, bytes, st));
		break;
	case D2D_MGD:
		VSG_CK(cuMemcpyDtoDAsync(mdst, dsrc, bytes, st));
		break;
	case D2H_MGD:
		VSG_CK(cuMemcpyDtoHAsync(pinned, msrc, bytes, st));
		break;
	case D2H_DEV:
		VSG_CK(cuMemcpyDtoHAsync(pinned, dsrc, bytes, st));
		break;
	case SET_MGD:
		VSG_CK(cuMemsetD32Async(mdst, 7, bytes / 4, st));
		break;
	case KERNEL:
		VSG_CK(cuLaunchKernel(k_empty, 1, 1, 1, 1, 1, 1, 0, st, NULL,
				      NULL));
		break;
	case TOUCH_MGD:
		touch(mdst);
		break;
	case TOUCH_DEV:
		touch(ddst);
		break;
	case H2D_ADV:
		VSG_CK(cuMemcpyHtoDAsync(madv, pinned, bytes, st));
		break;
	case D2H_ADV:
		VSG_CK(cuMemcpyDtoHAsync(pinned, madv, bytes, st));
		break;
	case B_H2D:
		batch(mdst, (CUdeviceptr)pinned, 1, 0);
		break;
	case B_H2D_OV:
		batch(mdst, (CUdeviceptr)pinned, 1, 1);
		break;
	case B_H2D_PAGE_OV:
		batch(mdst, (CUdeviceptr)pageable, 1, 1);
		break;
	case B_H2D_PAGE_CALL:
		batch(mdst, (CUdeviceptr)pageable, 2, 1);
		break;
	case B_D2H_OV: {
		CUmemcpyAttributes a = { 0 };
		size_t n = bytes, idx = 0;
		CUdeviceptr d = (CUdeviceptr)pinned, s = msrc;

		a.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		a.srcLocHint.type = CU_MEM_LOCATION_TYPE_DEVICE;
		a.srcLocHint.id = dev;
		a.dstLocHint.type = CU_MEM_LOCATION_TYPE_HOST;
		a.flags = 1;
		VSG_CK(cuMemcpyBatchAsync(&d, &s, &n, 1, &a, &idx, 1, st));
		break;
	}
	case B_H2D_ADV_OV:
		batch(madv, (CUdeviceptr)pinned, 1, 1);
		break;
	case PREFETCH_MGD: {
		CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
				      .id = dev };

		VSG_CK(cuMemPrefetchAsync_v2(mdst, bytes, loc, 0, st));
		break;
	}
	case UVM_PATH:
		prefetch(mdst, 1);
		VSG_CK(cuStreamSynchronize(st));
		memcpy((void *)mdst, pageable, bytes);
		prefetch(mdst, 0);
		break;
	case UVM_NOPRE:
		memcpy((void *)mdst, pageable, bytes);
		prefetch(mdst, 0);
		break;
	case PIN_DEV_MGD:
		VSG_CK(cuMemcpyHtoDAsync(ddst, pinned, bytes, st));
		VSG_CK(cuMemcpyDtoDAsync(mdst, ddst, bytes, st));
		break;
	case H2D_SINGLE:
		VSG_CK(cuMemcpyHtoDAsync(msingle, pinned, bytes, st));
		break;
	case PF_ROUND:
		prefetch(mdst, 1);
		VSG_CK(cuStreamSynchronize(st));
		prefetch(mdst, 0);
		break;
	default:
		break;
	}
	VSG_CK(cuStreamSynchronize(st));
}

int main(int argc, char **argv)
{
	unsigned reps = (unsigned)vsg_arg_u64(argc, argv, "--reps", 20);
	unsigned gap = (unsigned)vsg_arg_u64(argc, argv, "--gap-ms", 30);
	double *ms = calloc(reps, sizeof(*ms));
	CUmodule mod;

	bytes = vsg_arg_u64(argc, argv, "--bytes", 16u << 20);
	vsg_ctx_open();
	VSG_CK(cuCtxGetDevice(&dev));
	mod = vsg_module_load();
	k_empty = vsg_function(mod, "vsg_empty");
	k_touch = vsg_function(mod, "vsg_touch");
	VSG_CK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuMemAlloc(&dsrc, bytes));
	VSG_CK(cuMemAlloc(&ddst, bytes));
	VSG_CK(cuMemAllocManaged(&msrc, bytes, CU_MEM_ATTACH_GLOBAL));
	VSG_CK(cuMemAllocManaged(&mdst, bytes, CU_MEM_ATTACH_GLOBAL));
	VSG_CK(cuMemAllocManaged(&madv, bytes, CU_MEM_ATTACH_GLOBAL));
	{
		CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE,
				      .id = dev };

		VSG_CK(cuMemAdvise_v2(madv, bytes,
				      CU_MEM_ADVISE_SET_PREFERRED_LOCATION, loc));
		VSG_CK(cuMemAdvise_v2(madv, bytes,
				      CU_MEM_ADVISE_SET_ACCESSED_BY, loc));
	}
	VSG_CK(cuMemAllocManaged(&msingle, bytes, CU_MEM_ATTACH_GLOBAL));
	VSG_CK(cuStreamAttachMemAsync(st, msingle, 0, CU_MEM_ATTACH_SINGLE));
	VSG_CK(cuStreamSynchronize(st));
	VSG_CK(cuMemAllocHost(&pinned, bytes));
	pageable = malloc(bytes);
	if (ms == NULL || pageable == NULL)
		return 1;
	memset(pinned, 3, bytes);
	memset(pageable, 5, bytes);
	VSG_CK(cuMemsetD8(dsrc, 2, bytes));
	VSG_CK(cuMemsetD8(ddst, 2, bytes));

	printf("{\"bytes\": %zu, \"reps\": %u", bytes, reps);
	for (int k = 0; k < N_KIND; k++) {
		resident(msrc);
		resident(mdst);
		resident(madv);
		resident(msingle);
		one((enum kind)k);     /* warm */
		for (unsigned i = 0; i < reps; i++) {
			uint64_t t0;

			vsg_sleep_ms(gap);
			t0 = vsg_now_ns();
			one((enum kind)k);
			ms[i] = (double)(vsg_now_ns() - t0) / 1e6;
		}
		qsort(ms, reps, sizeof(*ms), vsg_cmp_double);
		printf(", \"%s\": [%.3f, %.3f]", names[k], ms[reps / 2],
		       ms[reps - 1]);
		fflush(stdout);
	}
	printf("}\n");
	return 0;
}
