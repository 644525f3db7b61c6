/*
 * Cost of the first submission of a process, which under the shim takes
 * the slow path (attach, request, grant), beside the second one, which
 * takes the fast path. Everything that is not a submission (context,
 * module, allocation) is done before, so the difference to a plain run is
 * the lock's round trip. Run with CUDA_MODULE_LOADING=EAGER so that lazy
 * loading does not add to the first launch.
 */
#include "vsg_util.h"

#include <stdio.h>

int main(void)
{
	CUstream s;

	vsg_ctx_open();
	CUfunction k = vsg_function(vsg_module_load(), "vsg_empty");
	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	uint64_t t0 = vsg_now_ns();
	VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
	uint64_t t1 = vsg_now_ns();
	VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
	uint64_t t2 = vsg_now_ns();
	VSG_CK(cuStreamSynchronize(s));
	printf("{\"prog\": \"first_launch\", \"first_ns\": %llu, \"second_ns\": %llu}\n",
	       (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1));
	VSG_CK(cuStreamDestroy(s));
	vsg_ctx_close();
	return 0;
}
