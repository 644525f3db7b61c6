/*
 * Uncontended lock acquisition through the real gate, client and
 * scheduler, with CUDA operations that do nothing: what a submission that
 * must take the lock waits for (REQUEST, GRANT, the gate opening).
 *   bench_acquire N        (VSHARE_SOCKET: a scheduler in mode on)
 * N times: a bumper (this program, run with "bump") takes the GPU, which
 * this process hands over after VSHARE_IDLE_MS (set it small), and exits;
 * then one gate_enter here is timed. Prints one JSON object (us).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int bump(const char *self)
{
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		execl(self, self, "bump", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 15;
	uint64_t *t;
	struct timespec pause = { 0, 20 * 1000000L };

	fk.uuid_seed = 0xc0;
	fk.total_mem = 1ull << 30;
	fk.device_count = 1;
	fk.managed[0] = 1u << 20;
	if (argc > 1 && strcmp(argv[1], "bump") == 0) {
		fake_init();
		gate_exit(gate_enter(NULL));
		fake_shutdown();
		return 0;
	}
	if (n < 1 || n > 10000)
		n = 15;
	t = calloc((size_t)n, sizeof(*t));
	fake_init();
	gate_exit(gate_enter(NULL));      /* connect, attach, first grant */
	for (int i = 0; i < n; i++) {
		uint64_t t0;

		if (bump(argv[0]) != 0) {
			fprintf(stderr, "bench_acquire: bumper failed\n");
			return 1;
		}
		nanosleep(&pause, NULL);  /* the scheduler saw it go */
		t0 = now_ns();
		gate_exit(gate_enter(NULL));
		t[i] = now_ns() - t0;
	}
	qsort(t, (size_t)n, sizeof(*t), cmp_u64);
	printf("{\"prog\": \"bench_acquire\", \"n\": %d, \"p50_us\": %.1f, "
	       "\"min_us\": %.1f, \"p90_us\": %.1f, \"max_us\": %.1f}\n", n,
	       (double)t[n / 2] / 1e3, (double)t[0] / 1e3,
	       (double)t[n * 9 / 10] / 1e3, (double)t[n - 1] / 1e3);
	fake_shutdown();
	free(t);
	return 0;
}
