/*
 * Kernel intervals on the GPU's own clock, for the serialization check.
 * Launches --n kernels (fewer if --seconds of host time pass first) that
 * each spin --spin-us microseconds and record
 * %globaltimer at their start and end, in batches of --batch followed by a
 * synchronize (so a holder keeps asking for the GPU and the scheduler can
 * hand it over between batches). Writes one "start end" line per kernel to
 * --out. With --ready/--go two processes start their work together.
 * Prints one JSON object: kernels, first/last timestamps, host span.
 */
#include "vsg_util.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned n = (unsigned)vsg_arg_u64(argc, argv, "--n", 100);
	unsigned batch = (unsigned)vsg_arg_u64(argc, argv, "--batch", 4);
	unsigned long long spin = vsg_arg_u64(argc, argv, "--spin-us", 5000) * 1000ull;
	uint64_t limit_ns = vsg_arg_u64(argc, argv, "--seconds", 0) * 1000000000ull;
	const char *out = vsg_arg(argc, argv, "--out", "stamps.txt");
	const char *ready = vsg_arg(argc, argv, "--ready", NULL);
	const char *go = vsg_arg(argc, argv, "--go", NULL);
	size_t bytes = 2ull * n * sizeof(unsigned long long);
	unsigned long long *h = calloc(2ull * n, sizeof(*h));
	CUdeviceptr d;
	CUstream s;
	FILE *f;

	vsg_ctx_open();
	CUfunction k = vsg_function(vsg_module_load(), "vsg_stamp");
	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuMemAlloc(&d, bytes));
	if (ready)
		vsg_touch_file(ready);
	if (go && vsg_wait_file(go, 60000) != 0) {
		fprintf(stderr, "stamp: no go signal\n");
		return 2;
	}
	uint64_t t0 = vsg_now_ns();
	unsigned ran = 0;
	for (unsigned i = 0; i < n; i++) {
		void *args[] = { &d, &i, &spin };

		VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
		ran = i + 1;
		if ((i + 1) % batch == 0 || i + 1 == n) {
			VSG_CK(cuStreamSynchronize(s));
			if (limit_ns && vsg_now_ns() - t0 >= limit_ns)
				break;
		}
	}
	n = ran;
	uint64_t t1 = vsg_now_ns();
	VSG_CK(cuMemcpyDtoH(h, d, bytes));
	f = fopen(out, "w");
	if (!f) {
		perror(out);
		return 2;
	}
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%llu %llu\n", h[2 * i], h[2 * i + 1]);
	fclose(f);
	printf("{\"prog\": \"stamp\", \"kernels\": %u, \"host_start_ns\": %llu, "
	       "\"host_end_ns\": %llu, \"managed\": %d}\n", n,
	       (unsigned long long)t0, (unsigned long long)t1, vsg_is_managed(d));
	VSG_CK(cuMemFree(d));
	vsg_ctx_close();
	free(h);
	return 0;
}
