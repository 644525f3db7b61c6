/*
 * Stream memory operations, 3D and batched copies, batched prefetch and
 * discard (seen in the execution log), capture into an existing graph.
 * Run with VSHARE_TD_LOG set (by CTest) to a fresh file.
 */
#include "tdt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull

static void test_wait_write_value(void **state)
{
	CUstream s1, s2;
	CUdeviceptr flag, p;
	int n = 1;
	float v = 4.0f;
	void *args[] = { &p, &v, &n };
	CUstreamBatchMemOpParams ops[2];
	uint64_t t0;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuMemAllocManaged(&flag, 16, CU_MEM_ATTACH_GLOBAL));
	CK(cuMemAllocManaged(&p, 4, CU_MEM_ATTACH_GLOBAL));
	memset((void *)(uintptr_t)flag, 0, 16);
	*(float *)(uintptr_t)p = 0;
	t0 = tdt_now_ns();
	CK(cuStreamWaitValue32_v2(s1, flag, 1, CU_STREAM_WAIT_VALUE_GEQ));
	CK(cuLaunchKernel(tdt_func("vs_fill"), 1, 1, 1, 1, 1, 1, 0, s1, args, NULL));
	CK(tdt_sleep(s2, 80000));
	CK(cuStreamWriteValue32_v2(s2, flag, 1, 0));
	CK(cuStreamSynchronize(s1));
	assert_true(tdt_now_ns() - t0 >= 80 * MS);	/* s1 waited for s2's write */
	assert_true(*(float *)(uintptr_t)p == 4.0f);
	/* A batch: write 64-bit, then wait on it (EQ) in one call. */
	memset(ops, 0, sizeof(ops));
	ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_64;
	ops[0].writeValue.address = flag + 8;
	ops[0].writeValue.value64 = 0x1122334455667788ull;
	ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_64;
	ops[1].waitValue.address = flag + 8;
	ops[1].waitValue.value64 = 0x1122334455667788ull;
	ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_EQ;
	CK(cuStreamBatchMemOp_v2(s1, 2, ops, 0));
	CK(cuStreamSynchronize(s1));
	assert_int_equal(((uint64_t *)(uintptr_t)flag)[1], 0x1122334455667788ull);
	assert_int_equal(cuStreamWriteValue64_v2(s1, flag + 4, 1, 0),
			 CUDA_ERROR_INVALID_VALUE);	/* misaligned */
	CK(cuStreamDestroy_v2(s1));
	CK(cuStreamDestroy_v2(s2));
	CK(cuMemFree_v2(flag));
	CK(cuMemFree_v2(p));
}

static void test_3d_and_batch_copies(void **state)
{
	unsigned char src[2][4][8], dst[2][4][8];
	CUdeviceptr d, e;
	CUDA_MEMCPY3D c3;
	CUdeviceptr dsts[2], srcs[2];
	size_t sizes[2] = { 16, 16 };
	CUmemcpyAttributes attr;
	size_t attr_idx = 0;
	size_t i;

	(void)state;
	tdt_ctx(0);
	for (i = 0; i < sizeof(src); i++)
		((unsigned char *)src)[i] = (unsigned char)i;
	CK(cuMemAlloc_v2(&d, sizeof(src)));
	CK(cuMemAlloc_v2(&e, sizeof(src)));
	memset(&c3, 0, sizeof(c3));
	c3.srcMemoryType = CU_MEMORYTYPE_HOST;
	c3.srcHost = src;
	c3.srcPitch = 8;
	c3.srcHeight = 4;
	c3.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	c3.dstDevice = d;
	c3.dstPitch = 8;
	c3.dstHeight = 4;
	c3.WidthInBytes = 8;
	c3.Height = 4;
	c3.Depth = 2;
	CK(cuMemcpy3D_v2(&c3));
	CK(cuMemcpyDtoH_v2(dst, d, sizeof(dst)));
	assert_memory_equal(dst, src, sizeof(src));
	dsts[0] = e;
	srcs[0] = d + 16;
	dsts[1] = e + 16;
	srcs[1] = d;
	memset(&attr, 0, sizeof(attr));
	attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
	CK(cuMemcpyBatchAsync_v2(dsts, srcs, sizes, 2, &attr, &attr_idx, 1, NULL));
	CK(cuCtxSynchronize());
	CK(cuMemcpyDtoH_v2(dst, e, 32));
	assert_memory_equal((unsigned char *)dst, (unsigned char *)src + 16, 16);
	assert_memory_equal((unsigned char *)dst + 16, src, 16);
	CK(cuMemFree_v2(d));
	CK(cuMemFree_v2(e));
}

/* Lines of the log with this kind and name. */
static int log_count(const char *kind, const char *name)
{
	FILE *f = fopen(getenv("VSHARE_TD_LOG"), "r");
	char line[256], k[32], nm[64];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*u %*u %*d %*d %*u %31s %63s", k, nm) == 2 &&
		    strcmp(k, kind) == 0 && strcmp(nm, name) == 0)
			n++;
	fclose(f);
	return n;
}

static void test_batch_prefetch(void **state)
{
	CUdeviceptr m[3], plain;
	size_t sizes[3] = { 4096, 4096, 4096 };
	CUmemLocation locs[2] = { { CU_MEM_LOCATION_TYPE_DEVICE, 0 },
				  { CU_MEM_LOCATION_TYPE_HOST, 0 } };
	size_t idx[2] = { 0, 2 };	/* ranges 0-1 to the device, 2 to host */
	int i;

	(void)state;
	tdt_ctx(0);
	for (i = 0; i < 3; i++)
		CK(cuMemAllocManaged(&m[i], 4096, CU_MEM_ATTACH_GLOBAL));
	CK(cuMemPrefetchBatchAsync(m, sizes, 3, locs, idx, 2, 0, NULL));
	CK(cuMemDiscardAndPrefetchBatchAsync(m, sizes, 1, locs, idx, 1, 0, NULL));
	CK(cuMemDiscardBatchAsync(m + 1, sizes, 2, 0, NULL));
	CK(cuCtxSynchronize());
	assert_int_equal(log_count("prefetch", "device0"), 3);
	assert_int_equal(log_count("prefetch", "host"), 1);
	assert_int_equal(log_count("discard", "discard"), 3);
	CK(cuMemAlloc_v2(&plain, 4096));
	assert_int_equal(cuMemPrefetchBatchAsync(&plain, sizes, 1, locs, idx, 1, 0, NULL),
			 CUDA_ERROR_INVALID_VALUE);	/* not managed */
	CK(cuMemAdvise_v2(m[0], 4096, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, locs[0]));
	assert_int_equal(log_count("advise", "device0:advice3"), 1);
	for (i = 0; i < 3; i++)
		CK(cuMemFree_v2(m[i]));
	CK(cuMemFree_v2(plain));
}

static void test_capture_to_graph(void **state)
{
	CUstream s;
	CUgraph g, out;
	CUgraphExec x;
	size_t nodes;

	(void)state;
	tdt_ctx(0);
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuGraphCreate(&g, 0));
	CK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0,
				       CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(tdt_sleep(s, 10));
	CK(cuStreamEndCapture(s, &out));
	assert_ptr_equal(out, g);
	CK(cuStreamBeginCaptureToGraph(s, g, NULL, NULL, 0,
				       CU_STREAM_CAPTURE_MODE_RELAXED));
	CK(tdt_sleep(s, 10));
	CK(cuStreamEndCapture(s, &out));
	CK(cuGraphGetNodes(g, NULL, &nodes));
	assert_int_equal(nodes, 2);
	CK(cuGraphInstantiateWithFlags(&x, g, 0));
	CK(cuGraphLaunch(x, s));
	CK(cuStreamSynchronize(s));
	CK(cuGraphExecDestroy(x));
	CK(cuGraphDestroy(g));
	CK(cuStreamDestroy_v2(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wait_write_value),
		cmocka_unit_test(test_3d_and_batch_copies),
		cmocka_unit_test(test_batch_prefetch),
		cmocka_unit_test(test_capture_to_graph),
	};

	if (!getenv("VSHARE_TD_LOG"))
		return 2;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
