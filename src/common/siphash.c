/*
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed hash that gives
 * nothing of its key away however many outputs are seen. The lock page
 * uses it so that the value a client writes into a word for one opening
 * says nothing of the value it would write for another
 * (include/vshare/proto.h, "The lock page"). Checked against the
 * reference vectors in tests/unit/test_proto.c.
 */
#include <string.h>

#include "vshare/proto.h"

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                      \
	do {                                                          \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

static uint64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t vs_siphash24(uint64_t k0, uint64_t k1, const void *msg, size_t len)
{
	const unsigned char *p = msg;
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
	uint64_t b = (uint64_t)len << 56, m;
	unsigned char tail[8] = { 0 };
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		m = le64(p + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	memcpy(tail, p + i, len - i); /* fewer than 8 bytes, the rest 0 */
	b |= le64(tail);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t vs_lock_mark(uint64_t token, uint64_t opening)
{
	unsigned char m[8];

	for (int i = 0; i < 8; i++)
		m[i] = (unsigned char)(opening >> (8 * i));
	return VS_LOCK_TOKEN_BIT |
	       vs_siphash24(token, token ^ VS_LOCK_MARK_K1, m, sizeof(m));
}
