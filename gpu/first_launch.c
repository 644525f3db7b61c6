/*
 * Lock acquisition under the shim.
 *
 * Plain call: times the first submission of a process, which under the
 * shim takes the slow path with everything a new client does (client
 * thread, connection, hello, attach, footprint, request, grant), beside
 * the second, which takes the fast path.
 *
 * With --reacquire N --dir D: then, N times, signals D/ready.I and waits
 * for D/go.I, and times one launch. Between the two the suite has had
 * another process take the GPU and exit, so this process lost the lock
 * and the timed launch is exactly one uncontended acquisition: REQUEST to
 * an idle scheduler, GRANT, the gate opening.
 *
 * Everything that is not a submission (context, module, allocation) is
 * done first. Run with CUDA_MODULE_LOADING=EAGER so that lazy loading does
 * not add to the first launch. Prints one JSON object (times in ns).
 */
#include "vsg_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t timed_launch(CUfunction k, CUstream s)
{
	/* vsg_empty takes no parameters and ignores this one; a kernel named
	 * by VSG_EMPTY_KERNEL (the CUDA test driver's vs_sleep, for a dry run
	 * of the suite without a GPU) reads it as 0 us. */
	unsigned long long zero = 0;
	void *args[] = { &zero };
	uint64_t t0 = vsg_now_ns();

	VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	return vsg_now_ns() - t0;
}

int main(int argc, char **argv)
{
	unsigned n = (unsigned)vsg_arg_u64(argc, argv, "--reacquire", 0);
	const char *dir = vsg_arg(argc, argv, "--dir", ".");
	uint64_t *re = calloc(n + 1, sizeof(*re));
	char path[PATH_MAX];
	CUstream s;

	vsg_ctx_open();
	const char *kname = getenv("VSG_EMPTY_KERNEL");
	CUfunction k = vsg_function(vsg_module_load(), kname ? kname : "vsg_empty");
	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	uint64_t first = timed_launch(k, s);
	uint64_t second = timed_launch(k, s);
	VSG_CK(cuStreamSynchronize(s));
	for (unsigned i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/ready.%u", dir, i);
		vsg_touch_file(path);
		snprintf(path, sizeof(path), "%s/go.%u", dir, i);
		if (vsg_wait_file(path, 60000) != 0) {
			fprintf(stderr, "first_launch: no %s\n", path);
			return 2;
		}
		re[i] = timed_launch(k, s);
		VSG_CK(cuStreamSynchronize(s));
	}
	printf("{\"prog\": \"first_launch\", \"first_ns\": %llu, \"second_ns\": %llu, "
	       "\"reacquire_ns\": [", (unsigned long long)first,
	       (unsigned long long)second);
	for (unsigned i = 0; i < n; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)re[i]);
	printf("]}\n");
	VSG_CK(cuStreamDestroy(s));
	vsg_ctx_close();
	free(re);
	return 0;
}
