/*
 * The stateful fuzz harness (sfuzz.h) on random inputs, for compilers
 * without libFuzzer: SFUZZ_SECONDS (default 5) of inputs from a seeded
 * generator (SFUZZ_SEED, default 1), so a failure can be replayed.
 */
#include <time.h>

#include "sfuzz.h"

int main(void)
{
	const char *e = getenv("SFUZZ_SECONDS"), *sd = getenv("SFUZZ_SEED");
	double secs = e && *e ? atof(e) : 5;
	unsigned seed = sd && *sd ? (unsigned)atoi(sd) : 1;
	time_t end = time(NULL) + (time_t)secs;
	uint8_t buf[4096];
	long runs = 0;

	srand(seed);
	do {
		size_t n = 1 + (size_t)rand() % sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand();
		sf_run(buf, n);
		runs++;
	} while (time(NULL) < end);
	printf("sfuzz: %ld runs, seed %u, no invariant broken\n", runs, seed);
	return 0;
}
