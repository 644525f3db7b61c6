/*
 * Stream generator and oracle shared by the randomized frame test and the
 * libFuzzer target: valid frames of either direction, the three readers
 * the programs use, and a check that a decoded frame obeys every rule of
 * the protocol table and of its reader's limits.
 */
#ifndef VSHARE_FRAME_GEN_H
#define VSHARE_FRAME_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"

/* Not assert(): release builds define NDEBUG, and this must always run. */
#define GEN_CHECK(c) do { if (!(c)) { \
	fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
	abort(); } } while (0)

/* The longest status document the generator writes into a REPLY. */
#define GEN_REPLY_MAX 700u
/* Room for any generated frame. */
#define GEN_FRAME_MAX (sizeof(struct vs_hdr) + sizeof(struct vs_reply) + \
		       GEN_REPLY_MAX)

/* The readers of the three programs: whom they read, how much they take. */
struct gen_reader {
	uint32_t role;
	uint32_t max;
	const char *name;
};

static const struct gen_reader gen_readers[] = {
	{ 0,                 VS_FRX_MAX_REQ,          "scheduler" },
	{ VS_ROLE_SCHEDULER, (uint32_t)VS_FRX_INLINE, "shim" },
	{ VS_ROLE_SCHEDULER, VS_MAX_PAYLOAD,          "vsharectl" },
};
#define GEN_N_READERS (sizeof(gen_readers) / sizeof(gen_readers[0]))

static inline uint64_t gen_rand(uint64_t *s)
{
	/* xorshift64*: deterministic across platforms for a fixed seed. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* A type that `role` receives (0: what the scheduler receives). */
static inline uint16_t gen_type(uint64_t *s, uint32_t role)
{
	static const uint16_t to_sched[] = {
		VS_MSG_HELLO, VS_MSG_ATTACH, VS_MSG_FOOTPRINT, VS_MSG_REQUEST,
		VS_MSG_RELEASED, VS_MSG_STATUS, VS_MSG_SET_TQ, VS_MSG_SET_MODE,
		VS_MSG_SWAPPED, VS_MSG_SET_SLICE, VS_MSG_SET_POLICY,
		VS_MSG_SET_WEIGHT, VS_MSG_METRICS,
	};
	static const uint16_t from_sched[] = {
		VS_MSG_WELCOME, VS_MSG_GRANT, VS_MSG_DROP, VS_MSG_MODE,
		VS_MSG_ERROR, VS_MSG_REPLY,
	};

	if (role == VS_ROLE_SCHEDULER)
		return from_sched[gen_rand(s) % (sizeof(from_sched) / 2)];
	return to_sched[gen_rand(s) % (sizeof(to_sched) / 2)];
}

/* Fill a payload of `type` (zeroed, `len` bytes) so that it is valid. */
static inline void gen_fill(uint64_t *s, uint16_t type, unsigned char *p,
			    uint32_t len)
{
	switch (type) {
	case VS_MSG_HELLO:
		((struct vs_hello *)(void *)p)->proto_version = VS_PROTO_VERSION;
		memcpy(((struct vs_hello *)(void *)p)->label, "job", 3);
		break;
	case VS_MSG_STATUS:
	case VS_MSG_METRICS:
	case VS_MSG_WELCOME:
	case VS_MSG_GRANT:
		break;
	case VS_MSG_SET_TQ:
	case VS_MSG_SET_MODE:
	case VS_MSG_SET_SLICE:
		((struct vs_admin_set *)(void *)p)->target = VS_TARGET_ALL;
		((struct vs_admin_set *)(void *)p)->value = (uint32_t)(gen_rand(s) % 3);
		break;
	case VS_MSG_SET_POLICY:
		((struct vs_admin_set *)(void *)p)->target = VS_TARGET_ALL;
		((struct vs_admin_set *)(void *)p)->value = (uint32_t)(gen_rand(s) % 2);
		break;
	case VS_MSG_SET_WEIGHT:
		((struct vs_admin_set *)(void *)p)->target = VS_TARGET_UID;
		((struct vs_admin_set *)(void *)p)->index = (uint32_t)(gen_rand(s) % 70000);
		((struct vs_admin_set *)(void *)p)->value = (uint32_t)(gen_rand(s) % 1001);
		break;
	case VS_MSG_SWAPPED:
		p[0] = (unsigned char)(1 + gen_rand(s) % 255);
		((struct vs_swapped *)(void *)p)->us = gen_rand(s) % 100000000u;
		((struct vs_swapped *)(void *)p)->bytes = 1 + gen_rand(s) % (1ull << 40);
		break;
	case VS_MSG_DROP:
		((struct vs_drop *)(void *)p)->reason = VS_DROP_QUANTUM;
		break;
	case VS_MSG_ERROR:
		((struct vs_error *)(void *)p)->code = VS_E_STATE;
		memcpy(((struct vs_error *)(void *)p)->msg, "busy", 4);
		break;
	case VS_MSG_REPLY:
		((struct vs_reply *)(void *)p)->json_len =
			len - (uint32_t)sizeof(struct vs_reply);
		for (uint32_t i = sizeof(struct vs_reply); i < len; i++)
			p[i] = (unsigned char)('a' + gen_rand(s) % 26);
		break;
	default: /* every other one starts with a UUID */
		p[0] = (unsigned char)(1 + gen_rand(s) % 255);
		break;
	}
}

/* One valid frame that `role` receives, into out (GEN_FRAME_MAX bytes);
 * its length. */
static inline size_t gen_valid(uint64_t *s, unsigned char *out, uint32_t role)
{
	uint16_t type = gen_type(s, role);
	const struct vs_msg_info *mi = vs_msg_lookup(type);
	uint32_t len = mi->size;
	/* Built aligned, then copied: out may be at any offset. */
	union {
		struct vs_hdr h;
		uint64_t align;
		unsigned char b[GEN_FRAME_MAX];
	} f;

	if (mi->variable)
		len += (uint32_t)(gen_rand(s) % (GEN_REPLY_MAX + 1));
	vs_hdr_init(&f.h, type, len);
	memset(f.b + sizeof(struct vs_hdr), 0, len);
	gen_fill(s, type, f.b + sizeof(struct vs_hdr), len);
	memcpy(out, f.b, sizeof(struct vs_hdr) + len);
	return sizeof(struct vs_hdr) + len;
}

/* Where a reader that may see VS_FRX_BUFFER puts a long payload. */
static union {
	uint64_t align;
	unsigned char b[VS_MAX_PAYLOAD];
} gen_big;

/* vs_frx_push, answering VS_FRX_BUFFER as vsharectl does. */
static inline enum vs_frx_result gen_push(struct vs_frx *rx,
					  const unsigned char **p, size_t *n)
{
	enum vs_frx_result r = vs_frx_push(rx, p, n);

	if (r == VS_FRX_BUFFER) {
		GEN_CHECK(rx->in.hdr.length > VS_FRX_INLINE);
		GEN_CHECK(rx->in.hdr.length <= rx->max);
		vs_frx_buffer(rx, gen_big.b);
		r = vs_frx_push(rx, p, n);
	}
	GEN_CHECK(r != VS_FRX_BUFFER);
	return r;
}

/* What a reader may hand out: a frame that passes every check, within
 * its reader's limit; a foreign error whose message is safe to print. */
static inline void gen_oracle(const struct vs_frx *rx, enum vs_frx_result r)
{
	const struct vs_msg_info *mi = vs_msg_lookup(rx->in.hdr.type);
	const struct vs_error *e = vs_frx_foreign_error(rx);

	if (r == VS_FRX_VERSION) {
		GEN_CHECK(rx->in.hdr.magic == VS_PROTO_MAGIC);
		GEN_CHECK(rx->in.hdr.version < VS_PROTO_VERSION_MIN ||
			  rx->in.hdr.version > VS_PROTO_VERSION);
		if (e != NULL) {
			GEN_CHECK(rx->role == VS_ROLE_SCHEDULER);
			GEN_CHECK(strlen(e->msg) < sizeof(e->msg));
			for (const char *c = e->msg; *c; c++)
				GEN_CHECK((unsigned char)*c >= 0x20 && *c != 0x7f);
		}
		return;
	}
	if (r != VS_FRX_FRAME)
		return;
	GEN_CHECK(e == NULL);
	GEN_CHECK(vs_check_hdr(&rx->in.hdr, rx->role) == VS_OK);
	/* One version per stream, and the type exists in it. */
	GEN_CHECK(rx->in.hdr.version == rx->version);
	GEN_CHECK(mi == NULL || mi->since <= rx->in.hdr.version);
	GEN_CHECK(mi != NULL);
	GEN_CHECK(rx->role ? mi->role == rx->role : mi->role != VS_ROLE_SCHEDULER);
	GEN_CHECK(rx->in.hdr.length <= rx->max);
	GEN_CHECK(vs_frx_payload(rx) != NULL);
	GEN_CHECK(vs_check_payload(&rx->in.hdr, vs_frx_payload(rx), NULL) == VS_OK);
}

#endif
