/*
 * Hand-off from an idle holder to a waiting process.
 *   --role holder: takes the GPU, signals --ready, keeps submitting short
 *     kernels for --busy-ms more, writes the time its last kernel finished
 *     to --last, then idles for --idle-ms-hold and exits.
 *   --role waiter: sets up everything but submissions, waits for --ready,
 *     then times its first launch (blocked until the holder hands over).
 * The suite computes hand-off = waiter's launch return - holder's last
 * kernel end: under the shim about VSHARE_IDLE_MS plus the round trip.
 * Both print one JSON object with CLOCK_MONOTONIC times in ns.
 */
#include "vsg_util.h"

#include <stdio.h>
#include <string.h>

static void holder(int argc, char **argv, CUfunction k, CUdeviceptr d, CUstream s)
{
	const char *ready = vsg_arg(argc, argv, "--ready", "ready");
	const char *last = vsg_arg(argc, argv, "--last", "last");
	uint64_t busy = vsg_arg_u64(argc, argv, "--busy-ms", 500) * 1000000ull;
	unsigned hold = (unsigned)vsg_arg_u64(argc, argv, "--hold-ms", 1500);
	unsigned long long spin = 200000; /* 200 us kernels */
	unsigned idx = 0, launches = 0;
	char text[64];

	void *args[] = { &d, &idx, &spin };
	VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	VSG_CK(cuStreamSynchronize(s));
	uint64_t t_ready = vsg_now_ns(), t_last;
	vsg_touch_file(ready);
	do {
		VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
		VSG_CK(cuStreamSynchronize(s));
		launches++;
		t_last = vsg_now_ns();
	} while (t_last - t_ready < busy);
	snprintf(text, sizeof(text), "%llu", (unsigned long long)t_last);
	vsg_write_text(last, text);
	vsg_sleep_ms(hold);
	printf("{\"prog\": \"handoff\", \"role\": \"holder\", \"last_ns\": %llu, "
	       "\"launches\": %u}\n", (unsigned long long)t_last, launches);
}

static void waiter(int argc, char **argv, CUfunction k, CUdeviceptr d, CUstream s)
{
	const char *ready = vsg_arg(argc, argv, "--ready", "ready");
	unsigned long long spin = 1000;
	unsigned idx = 1;

	if (vsg_wait_file(ready, 60000) != 0) {
		fprintf(stderr, "handoff: holder never got ready\n");
		return;
	}
	vsg_sleep_ms(20); /* let the holder be busy when we ask */
	void *args[] = { &d, &idx, &spin };
	uint64_t t_req = vsg_now_ns();
	VSG_CK(cuLaunchKernel(k, 1, 1, 1, 32, 1, 1, 0, s, args, NULL));
	uint64_t t_ret = vsg_now_ns();
	VSG_CK(cuStreamSynchronize(s));
	printf("{\"prog\": \"handoff\", \"role\": \"waiter\", \"request_ns\": %llu, "
	       "\"return_ns\": %llu}\n", (unsigned long long)t_req,
	       (unsigned long long)t_ret);
}

int main(int argc, char **argv)
{
	const char *role = vsg_arg(argc, argv, "--role", "holder");
	CUdeviceptr d;
	CUstream s;

	vsg_ctx_open();
	CUfunction k = vsg_function(vsg_module_load(), "vsg_stamp");
	VSG_CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	VSG_CK(cuMemAlloc(&d, 4096));
	if (strcmp(role, "holder") == 0)
		holder(argc, argv, k, d, s);
	else
		waiter(argc, argv, k, d, s);
	VSG_CK(cuMemFree(d));
	vsg_ctx_close();
	return 0;
}
