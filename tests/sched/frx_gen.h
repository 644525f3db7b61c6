/*
 * Stream generator and oracle shared by the randomized frame test and the
 * libFuzzer target: valid request frames, mutations of them, and a check
 * that a decoded frame obeys every rule of the protocol table.
 */
#ifndef VSHARE_FRX_GEN_H
#define VSHARE_FRX_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frx.h"

/* Not assert(): release builds define NDEBUG, and this must always run. */
#define GEN_CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

static inline uint64_t gen_rand(uint64_t *s)
{
	/* xorshift64*: deterministic across platforms for a fixed seed. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* One valid request frame of a random type; its length. */
static inline size_t gen_valid(uint64_t *s, unsigned char *out)
{
	static const uint16_t types[] = {
		VS_MSG_HELLO, VS_MSG_ATTACH, VS_MSG_FOOTPRINT, VS_MSG_REQUEST,
		VS_MSG_RELEASED, VS_MSG_STATUS, VS_MSG_SET_TQ, VS_MSG_SET_MODE,
	};
	uint16_t type = types[gen_rand(s) % 8];
	const struct vs_msg_info *mi = vs_msg_lookup(type);
	unsigned char *p = out + sizeof(struct vs_hdr);

	vs_hdr_init((struct vs_hdr *)(void *)out, type, mi->size);
	memset(p, 0, mi->size);
	switch (type) {
	case VS_MSG_HELLO:
		((struct vs_hello *)(void *)p)->proto_version = VS_PROTO_VERSION;
		memcpy(((struct vs_hello *)(void *)p)->label, "job", 3);
		break;
	case VS_MSG_STATUS:
		break;
	case VS_MSG_SET_TQ:
	case VS_MSG_SET_MODE:
		((struct vs_admin_set *)(void *)p)->target = VS_TARGET_ALL;
		((struct vs_admin_set *)(void *)p)->value = (uint32_t)(gen_rand(s) % 3);
		break;
	default: /* every other one starts with a UUID */
		p[0] = (unsigned char)(1 + gen_rand(s) % 255);
		break;
	}
	return sizeof(struct vs_hdr) + mi->size;
}

/* What a decoder may hand out: a frame that passes every check. */
static inline void gen_oracle(const struct frx *rx)
{
	const struct vs_msg_info *mi = vs_msg_lookup(rx->in.hdr.type);

	GEN_CHECK(vs_check_hdr(&rx->in.hdr, 0) == VS_OK);
	GEN_CHECK(mi != NULL && mi->role != VS_ROLE_SCHEDULER);
	GEN_CHECK(rx->in.hdr.length == mi->size);
	GEN_CHECK(rx->in.hdr.length <= FRX_MAX_REQ);
	GEN_CHECK(vs_check_payload(&rx->in.hdr, frx_payload(rx), NULL) == VS_OK);
}

#endif
