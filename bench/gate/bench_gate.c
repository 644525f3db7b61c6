/*
 * Cost of the gate's fast path: gate_enter/gate_exit pairs on an open gate
 * against an empty loop, on one thread and on several threads sharing one
 * GPU. Runs without a scheduler (the gate opens unshared), with CUDA
 * operations that do nothing.
 *   bench_gate [ITERATIONS] [THREADS] [DEVICES]
 * DEVICES (default 1) is what the fake device_count answers: with 1 the
 * fast path skips the context lookup, with more it asks for the context
 * on every entry (here a trivial function; the driver's cuCtxGetCurrent
 * costs more).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake.h"

static long iters = 20000000;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double run_empty(void)
{
	double t0 = now_s();

	for (long i = 0; i < iters; i++)
		__asm__ __volatile__("" ::: "memory");
	return (now_s() - t0) * 1e9 / (double)iters;
}

static double run_gate(void)
{
	double t0 = now_s();

	for (long i = 0; i < iters; i++) {
		int tok = gate_enter(NULL);

		__asm__ __volatile__("" ::: "memory");
		gate_exit(tok);
	}
	return (now_s() - t0) * 1e9 / (double)iters;
}

static void *thread_main(void *arg)
{
	*(double *)arg = run_gate();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 4;
	double empty, gate, sum = 0, res[64];
	pthread_t thr[64];

	if (argc > 1)
		iters = atol(argv[1]);
	if (argc > 3 && atoi(argv[3]) > 0)
		fk.device_count = atoi(argv[3]);
	if (threads < 1 || threads > 64)
		threads = 4;
	setenv("VSHARE_SOCKET", "/nonexistent/vshare-bench.sock", 0);
	if (fk.device_count < 1)
		fk.device_count = 1;
	fk.uuid_seed = 0xb0;
	fk.total_mem = 1ull << 30;
	fake_init();
	gate_exit(gate_enter(NULL)); /* first entry: slow path, opens unshared */
	empty = run_empty();
	gate = run_gate();
	printf("empty loop:            %6.2f ns/iteration\n", empty);
	printf("gate_enter+gate_exit:  %6.2f ns/pair (1 thread, %d device%s)\n",
	       gate, fk.device_count, fk.device_count > 1 ? "s" : "");
	for (int i = 0; i < threads; i++)
		pthread_create(&thr[i], NULL, thread_main, &res[i]);
	for (int i = 0; i < threads; i++) {
		pthread_join(thr[i], NULL);
		sum += res[i];
	}
	printf("gate_enter+gate_exit:  %6.2f ns/pair (%d threads, one GPU)\n",
	       sum / threads, threads);
	fake_shutdown();
	return 0;
}
