/*
 * A GPU program in miniature for integration tests against the real
 * scheduler: the real gate and client, the fake CUDA side (fake_ops.c),
 * and "kernels"
 * that are sleeps inside the gate's bracket. Each kernel is logged in the
 * test driver's execution-log format (start_ns end_ns pid device stream
 * kind name bytes), so the same checker reads both.
 *   gate_sim -l LOG [-n KERNELS] [-k KERNEL_MS] [-g GAP_MS] [-m MANAGED_MB]
 *            [-w WAIT_MS_BEFORE_FIRST] [-M MB_AFTER_HALF] [-P PAUSE_MS]
 * After half of the kernels it pauses PAUSE_MS; with -M it first grows
 * the footprint to MB and logs the rest under the name "big".
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"


static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	long n = 10, k = 10, gap = 0, wait = 0, grow = -1, pause = 0;
	const char *logpath = NULL;
	int opt, fd;

	while ((opt = getopt(argc, argv, "l:n:k:g:m:w:M:P:")) != -1) {
		switch (opt) {
		case 'l': logpath = optarg; break;
		case 'n': n = atol(optarg); break;
		case 'k': k = atol(optarg); break;
		case 'g': gap = atol(optarg); break;
		case 'm': fk.managed[0] = (uint64_t)atol(optarg) << 20; break;
		case 'w': wait = atol(optarg); break;
		case 'M': grow = atol(optarg); break;
		case 'P': pause = atol(optarg); break;
		default: return 2;
		}
	}
	if (logpath == NULL)
		return 2;
	fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0)
		return 2;
	/* One UUID and 1 GiB for every gate_sim: the scheduler sees the
	 * processes of a test share one GPU. */
	fk.uuid_seed = 0x5a;
	fk.total_mem = 1ull << 30;
	fake_init();
	nap_ms(wait);
	printf("first %llu\n", (unsigned long long)now_ns());
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		const char *name = grow >= 0 && i >= n / 2 ? "big" : "sim";
		uint64_t t0, t1;
		char line[128];
		int tok, len;

		if (i == n / 2 && grow >= 0) {
			__atomic_store_n(&fk.managed[0], (uint64_t)grow << 20,
					 __ATOMIC_SEQ_CST);
			client_footprint_changed(0);
		}
		if (i == n / 2)
			nap_ms(pause);
		tok = gate_enter(NULL);
		t0 = now_ns();
		nap_ms(k);
		t1 = now_ns();
		gate_exit(tok);
		len = snprintf(line, sizeof(line), "%llu %llu %d 0 0 kernel %s 0\n",
			       (unsigned long long)t0, (unsigned long long)t1,
			       (int)getpid(), name);
		(void)!write(fd, line, (size_t)len);
		if (gap)
			nap_ms(gap);
	}
	fake_shutdown();
	return 0;
}
