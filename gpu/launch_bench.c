/*
 * Empty-kernel launch cost through cuLaunchKernel. Times only the launch
 * calls of each batch (the GPU drains between batches, so a full launch
 * queue never stalls the host) and reports the median ns per launch.
 */
#include "vsg_util.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned batch = (unsigned)vsg_arg_u64(argc, argv, "--batch", 256);
	unsigned rounds = (unsigned)vsg_arg_u64(argc, argv, "--rounds", 200);
	double *per = calloc(rounds, sizeof(*per));
	const char *kname = getenv("VSG_EMPTY_KERNEL");
	unsigned long long zero = 0;   /* see first_launch.c */
	void *args[] = { &zero };
	CUstream s;

	vsg_ctx_open();
	CUfunction k = vsg_function(vsg_module_load(), kname ? kname : "vsg_empty");
	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	for (unsigned i = 0; i < 2000; i++)   /* warm-up: lock, lazy loading */
		VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	VSG_CK(cuStreamSynchronize(s));
	for (unsigned r = 0; r < rounds; r++) {
		uint64_t t0 = vsg_now_ns();

		for (unsigned i = 0; i < batch; i++)
			VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
		per[r] = (double)(vsg_now_ns() - t0) / batch;
		VSG_CK(cuStreamSynchronize(s));
	}
	qsort(per, rounds, sizeof(*per), vsg_cmp_double);
	printf("{\"prog\": \"launch_bench\", \"ns_per_launch_p50\": %.1f, "
	       "\"ns_per_launch_p10\": %.1f, \"ns_per_launch_p90\": %.1f, "
	       "\"batch\": %u, \"rounds\": %u}\n", per[rounds / 2],
	       per[rounds / 10], per[rounds * 9 / 10], batch, rounds);
	VSG_CK(cuStreamDestroy(s));
	vsg_ctx_close();
	free(per);
	return 0;
}
