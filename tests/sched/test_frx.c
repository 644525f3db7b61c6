/*
 * The daemon's frame decoder: exact cases, then a randomized run (fixed
 * seed, a few seconds at most) of valid, mutated and random streams fed
 * in random chunks. Every frame handed out must pass the protocol's
 * checks, and the result must not depend on how the stream is chunked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "frx_gen.h"

static enum frx_result push_all(struct frx *rx, const unsigned char *p,
				size_t n, int *frames)
{
	enum frx_result r;

	*frames = 0;
	while ((r = frx_push(rx, &p, &n)) == FRX_FRAME) {
		gen_oracle(rx);
		(*frames)++;
	}
	return r;
}

static void test_valid_stream(void **state)
{
	unsigned char buf[4096];
	size_t n = 0;
	uint64_t seed = 1;
	struct frx rx;
	int frames;
	(void)state;

	for (int i = 0; i < 20; i++)
		n += gen_valid(&seed, buf + n);
	frx_init(&rx);
	assert_int_equal(push_all(&rx, buf, n, &frames), FRX_MORE);
	assert_int_equal(frames, 20);
	assert_int_equal(rx.len, 0);
	/* Byte by byte: the same frames. */
	frx_init(&rx);
	frames = 0;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = buf + i;
		size_t one = 1;

		if (frx_push(&rx, &p, &one) == FRX_FRAME)
			frames++;
		assert_int_equal(one, 0);
	}
	assert_int_equal(frames, 20);
}

static void test_bad_headers(void **state)
{
	unsigned char buf[256];
	uint64_t seed = 7;
	struct vs_hdr *h = (struct vs_hdr *)(void *)buf;
	struct frx rx;
	int frames;
	(void)state;

	gen_valid(&seed, buf);
	h->version = 9;
	frx_init(&rx);
	assert_int_equal(push_all(&rx, buf, sizeof(*h), &frames), FRX_VERSION);

	vs_hdr_init(h, VS_MSG_HELLO, 1u << 30); /* oversized */
	frx_init(&rx);
	assert_int_equal(push_all(&rx, buf, sizeof(*h), &frames), FRX_PROTO);

	vs_hdr_init(h, VS_MSG_GRANT, sizeof(struct vs_grant)); /* wrong role */
	frx_init(&rx);
	assert_int_equal(push_all(&rx, buf, sizeof(*h), &frames), FRX_PROTO);

	/* A bad payload is refused once it is complete. */
	vs_hdr_init(h, VS_MSG_REQUEST, sizeof(struct vs_gpu_ref));
	memset(buf + sizeof(*h), 0, sizeof(struct vs_gpu_ref)); /* empty UUID */
	frx_init(&rx);
	assert_int_equal(push_all(&rx, buf, sizeof(*h) + 15, &frames), FRX_MORE);
	assert_int_equal(push_all(&rx, buf + sizeof(*h) + 15, 1, &frames),
			 FRX_PROTO);
	assert_non_null(rx.why);
}

static long n_frames, n_errors;

/* Decode a stream in chunks drawn from `seed`; a signature of results. */
static uint64_t decode(const unsigned char *buf, size_t n, uint64_t seed)
{
	struct frx rx;
	uint64_t sig = 1469598103934665603ull;

	frx_init(&rx);
	while (n > 0) {
		size_t chunk = seed ? 1 + gen_rand(&seed) % 64 : n;
		const unsigned char *p = buf;
		size_t left = chunk < n ? chunk : n, before = left;
		enum frx_result r;

		while ((r = frx_push(&rx, &p, &left)) == FRX_FRAME) {
			gen_oracle(&rx);
			n_frames++;
			sig = (sig ^ rx.in.hdr.type) * 1099511628211ull;
			for (uint32_t i = 0; i < rx.in.hdr.length; i++)
				sig = (sig ^ rx.in.bytes[sizeof(struct vs_hdr) + i]) *
				      1099511628211ull;
		}
		if (r != FRX_MORE) {
			n_errors++;
			return (sig ^ (uint64_t)r) * 1099511628211ull;
		}
		buf += before;
		n -= before;
	}
	return sig;
}

static size_t gen_stream(uint64_t *s, unsigned char *buf, size_t cap)
{
	size_t n = 0;
	int pieces = 1 + (int)(gen_rand(s) % 6);

	for (int i = 0; i < pieces && n + 256 < cap; i++) {
		size_t at = n, len = gen_valid(s, buf + n);

		n += len;
		switch (gen_rand(s) % 4) {
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
		default: /* leave it valid */
			break;
		}
	}
	return n;
}

static void test_randomized(void **state)
{
	unsigned char buf[4096];
	uint64_t seed = 0x5eed2026;
	time_t end = time(NULL) + 3;
	long streams = 0;
	(void)state;

	for (long it = 0; it < 2000000 && time(NULL) < end; it++) {
		size_t n = gen_stream(&seed, buf, sizeof(buf));
		uint64_t whole = decode(buf, n, 0);
		uint64_t chunks = decode(buf, n, it + 1);

		assert_true(whole == chunks);
		streams++;
	}
	/* Both paths were exercised many times. */
	assert_true(streams > 1000);
	assert_true(n_frames > 1000 && n_errors > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_stream),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_randomized),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
