/*
 * The stateful fuzz harness (sfuzz.h) on random inputs, for compilers
 * without libFuzzer: SFUZZ_SECONDS (default 5) of inputs from a seeded
 * generator (SFUZZ_SEED, default 1), so a failure can be replayed. With
 * file arguments it replays those inputs instead (tests/sched/sfuzz_inputs:
 * inputs that once broke an invariant). With SFUZZ_KEEP=FILE each random
 * input is written to FILE before it runs, so that the one that broke an
 * invariant is there to replay after the abort.
 */
#include <stdio.h>
#include <time.h>

#include "sfuzz.h"

static int replay(int argc, char **argv)
{
	static uint8_t buf[1 << 16];

	for (int i = 1; i < argc; i++) {
		FILE *fp = fopen(argv[i], "rb");
		size_t n;

		if (fp == NULL) {
			perror(argv[i]);
			return 2;
		}
		n = fread(buf, 1, sizeof(buf), fp);
		fclose(fp);
		sf_run(buf, n);
		printf("sfuzz: %s: no invariant broken\n", argv[i]);
	}
	return 0;
}

static void keep_input(const char *path, const uint8_t *buf, size_t n)
{
	FILE *fp = fopen(path, "wb");

	if (fp == NULL || fwrite(buf, 1, n, fp) != n) {
		perror(path);
		exit(2);
	}
	fclose(fp);
}

int main(int argc, char **argv)
{
	const char *e = getenv("SFUZZ_SECONDS"), *sd = getenv("SFUZZ_SEED");
	const char *keep = getenv("SFUZZ_KEEP");
	double secs = e && *e ? atof(e) : 5;
	unsigned seed = sd && *sd ? (unsigned)atoi(sd) : 1;
	time_t end = time(NULL) + (time_t)secs;
	uint8_t buf[4096];
	long runs = 0;

	if (argc > 1)
		return replay(argc, argv);
	srand(seed);
	do {
		size_t n = 1 + (size_t)rand() % sizeof(buf);

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand();
		if (keep != NULL && *keep != '\0')
			keep_input(keep, buf, n);
		sf_run(buf, n);
		runs++;
	} while (time(NULL) < end);
	printf("sfuzz: %ld runs, seed %u, no invariant broken\n", runs, seed);
	return 0;
}
