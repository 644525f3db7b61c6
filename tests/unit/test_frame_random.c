/*
 * The common frame reader, randomized (fixed seed, about a second per
 * reader): valid, mutated and random streams fed in random chunks to the
 * reader of each program. Every frame handed out must pass the protocol's
 * checks and its reader's limit, and the result must not depend on how
 * the stream is chunked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "frame_gen.h"

#define FNV_PRIME 1099511628211ull

static long n_frames, n_errors, n_foreign;

static uint64_t mix(uint64_t sig, uint64_t v)
{
	return (sig ^ v) * FNV_PRIME;
}

/* Decode a stream in chunks drawn from `seed` (0: all at once) with the
 * reader `k`; a signature of the results. */
static uint64_t decode(const struct gen_reader *k, const unsigned char *buf,
		       size_t n, uint64_t seed)
{
	struct vs_frx rx;
	uint64_t sig = 1469598103934665603ull;

	vs_frx_init(&rx, k->role, k->max);
	while (n > 0) {
		size_t chunk = seed ? 1 + gen_rand(&seed) % 64 : n;
		const unsigned char *p = buf, *pl;
		size_t left = chunk < n ? chunk : n, before = left;
		enum vs_frx_result r;

		while ((r = gen_push(&rx, &p, &left)) == VS_FRX_FRAME) {
			gen_oracle(&rx, r);
			n_frames++;
			sig = mix(sig, rx.in.hdr.type);
			pl = vs_frx_payload(&rx);
			for (uint32_t i = 0; i < rx.in.hdr.length; i++)
				sig = mix(sig, pl[i]);
		}
		if (r != VS_FRX_MORE) {
			gen_oracle(&rx, r);
			n_errors++;
			if (vs_frx_foreign_error(&rx) != NULL)
				n_foreign++;
			return mix(sig, (uint64_t)r);
		}
		buf += before;
		n -= before;
	}
	return sig;
}

/* A few frames for `role`, some broken on purpose. */
static size_t gen_stream(uint64_t *s, uint32_t role, unsigned char *buf,
			 size_t cap)
{
	size_t n = 0;
	int pieces = 1 + (int)(gen_rand(s) % 6);

	for (int i = 0; i < pieces && n + 2 * GEN_FRAME_MAX < cap; i++) {
		size_t at = n, len = gen_valid(s, buf + n, role);

		n += len;
		switch (gen_rand(s) % 5) {
		case 0: /* flip bits */
			for (int k = 0; k < 1 + (int)(gen_rand(s) % 3); k++)
				buf[at + gen_rand(s) % len] ^=
					(unsigned char)(1u << (gen_rand(s) % 8));
			break;
		case 1: /* random bytes after it */
			for (int k = 0, m = (int)(gen_rand(s) % 40); k < m; k++)
				buf[n++] = (unsigned char)gen_rand(s);
			break;
		case 2: /* cut it short */
			n = at + gen_rand(s) % len;
			break;
		case 3: /* another version (offsetof(struct vs_hdr, version)) */
			if (gen_rand(s) % 4 == 0)
				buf[at + 4] = 2;
			break;
		default: /* leave it valid */
			break;
		}
	}
	return n;
}

static void randomized(const struct gen_reader *k, uint64_t seed)
{
	static unsigned char buf[16384];
	time_t end = time(NULL) + 1;
	long streams = 0;

	n_frames = n_errors = n_foreign = 0;
	for (long it = 0; it < 1000000 && time(NULL) < end; it++) {
		size_t n = gen_stream(&seed, k->role, buf, sizeof(buf));
		uint64_t whole = decode(k, buf, n, 0);
		uint64_t chunks = decode(k, buf, n, (uint64_t)it + 1);

		assert_true(whole == chunks);
		streams++;
	}
	/* Both paths were exercised many times. */
	print_message("%s: %ld streams, %ld frames, %ld errors (%ld foreign "
		      "errors)\n", k->name, streams, n_frames, n_errors,
		      n_foreign);
	assert_true(streams > 1000);
	assert_true(n_frames > 1000 && n_errors > 1000);
	if (k->role == VS_ROLE_SCHEDULER)
		assert_true(n_foreign > 10);
}

static void test_scheduler(void **state)
{
	(void)state;
	randomized(&gen_readers[0], 0x5eed2026);
}

static void test_shim(void **state)
{
	(void)state;
	randomized(&gen_readers[1], 0x5eed2027);
}

static void test_vsharectl(void **state)
{
	(void)state;
	randomized(&gen_readers[2], 0x5eed2028);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scheduler),
		cmocka_unit_test(test_shim),
		cmocka_unit_test(test_vsharectl),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
