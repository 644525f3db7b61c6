/*
 * The common frame reader (src/common/frame.c), case by case, for the
 * readers of the three programs: whole streams and byte by byte, the
 * role each reader accepts, vsharectl's long replies, a foreign error,
 * and frames refused at their header before any payload is kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "frame_gen.h"

#define HS sizeof(struct vs_hdr)

static const struct gen_reader *const sched_rd = &gen_readers[0];
static const struct gen_reader *const shim_rd = &gen_readers[1];
static const struct gen_reader *const ctl_rd = &gen_readers[2];

/* A frame built aligned: a header, then up to 256 payload bytes. */
union frame {
	struct vs_hdr h;
	uint64_t align_;
	unsigned char b[HS + 256];
};

/* A valid frame of `type` with a payload of `len` bytes. */
static size_t build(union frame *f, uint16_t type, uint32_t len)
{
	uint64_t seed = 3;

	memset(f, 0, sizeof(*f));
	vs_hdr_init(&f->h, type, len);
	gen_fill(&seed, type, f->b + HS, len);
	return HS + len;
}

static struct vs_frx reader(const struct gen_reader *k)
{
	struct vs_frx rx;

	vs_frx_init(&rx, k->role, k->max);
	return rx;
}

/* Push n bytes; the number of frames before the result. */
static enum vs_frx_result push_all(struct vs_frx *rx, const unsigned char *p,
				   size_t n, int *frames)
{
	enum vs_frx_result r;

	*frames = 0;
	while ((r = gen_push(rx, &p, &n)) == VS_FRX_FRAME) {
		gen_oracle(rx, r);
		(*frames)++;
	}
	return r;
}

/* Twenty valid frames that reader k accepts, all at once and byte by
 * byte: the same frames, every byte consumed. */
static void valid_stream(const struct gen_reader *k)
{
	static unsigned char buf[64 * GEN_FRAME_MAX];
	size_t n = 0, len;
	uint64_t seed = 1;
	struct vs_frx rx;
	int frames = 0, got;

	while (frames < 20) {
		len = gen_valid(&seed, buf + n, k->role);
		if (len - HS <= k->max) {
			n += len;
			frames++;
		}
	}
	rx = reader(k);
	assert_int_equal(push_all(&rx, buf, n, &got), VS_FRX_MORE);
	assert_int_equal(got, 20);
	assert_int_equal(rx.len, 0);
	rx = reader(k);
	got = 0;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *p = buf + i;
		size_t one = 1;
		enum vs_frx_result r = gen_push(&rx, &p, &one);

		assert_true(r == VS_FRX_MORE || r == VS_FRX_FRAME);
		if (r == VS_FRX_FRAME)
			got++;
		assert_int_equal(one, 0);
	}
	assert_int_equal(got, 20);
}

static void test_valid_streams(void **state)
{
	(void)state;
	for (size_t i = 0; i < GEN_N_READERS; i++)
		valid_stream(&gen_readers[i]);
}

/* The header alone decides: push a header and its whole payload at
 * once, expect `want` with only the header consumed; the reason. */
static const char *refused_at_header(const struct gen_reader *k, union frame *f,
			      size_t n, enum vs_frx_result want)
{
	struct vs_frx rx = reader(k);
	const unsigned char *p = f->b;
	size_t left = n;

	assert_int_equal(vs_frx_push(&rx, &p, &left), want);
	assert_int_equal(left, n - HS);
	assert_int_equal(rx.len, HS);
	if (want == VS_FRX_PROTO)
		assert_non_null(rx.why);
	assert_null(vs_frx_foreign_error(&rx));
	/* The stream is dead: the same answer, nothing more consumed. */
	assert_int_equal(vs_frx_push(&rx, &p, &left), want);
	assert_int_equal(left, n - HS);
	return rx.why;
}

static void test_bad_headers(void **state)
{
	union frame f;
	size_t n;
	(void)state;

	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.magic ^= 1;
	assert_string_equal(refused_at_header(sched_rd, &f, n, VS_FRX_PROTO),
			    "bad magic: not a vshare frame");
	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.flags = 1;
	refused_at_header(sched_rd, &f, n, VS_FRX_PROTO);
	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.type = 0x7777;
	assert_string_equal(refused_at_header(sched_rd, &f, n, VS_FRX_PROTO),
			    "unknown message type");
	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.length = sizeof(struct vs_hello) - 1; /* wrong size */
	refused_at_header(sched_rd, &f, n - 1, VS_FRX_PROTO);
}

/* Each reader takes only what its peer's role sends. */
static void test_role_filter(void **state)
{
	union frame f;
	size_t n;
	(void)state;

	/* A client's and an admin's frames sent to the shim. */
	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	assert_string_equal(refused_at_header(shim_rd, &f, n, VS_FRX_PROTO),
			    "message type not sent by this peer's role");
	n = build(&f, VS_MSG_STATUS, sizeof(struct vs_status_req));
	refused_at_header(ctl_rd, &f, n, VS_FRX_PROTO);
	/* The scheduler's own frames sent to the scheduler. */
	n = build(&f, VS_MSG_GRANT, sizeof(struct vs_grant));
	assert_string_equal(refused_at_header(sched_rd, &f, n, VS_FRX_PROTO),
			    "message type not sent by this peer's role");
	n = build(&f, VS_MSG_REPLY, sizeof(struct vs_reply) + 4);
	refused_at_header(sched_rd, &f, n, VS_FRX_PROTO);
	n = build(&f, VS_MSG_ERROR, sizeof(struct vs_error));
	refused_at_header(sched_rd, &f, n, VS_FRX_PROTO);
	/* The same frames where they belong. */
	n = build(&f, VS_MSG_GRANT, sizeof(struct vs_grant));
	{
		struct vs_frx rx = reader(shim_rd);
		int frames;

		assert_int_equal(push_all(&rx, f.b, n, &frames), VS_FRX_MORE);
		assert_int_equal(frames, 1);
	}
	n = build(&f, VS_MSG_SET_MODE, sizeof(struct vs_admin_set));
	{
		struct vs_frx rx = reader(sched_rd);
		int frames;

		assert_int_equal(push_all(&rx, f.b, n, &frames), VS_FRX_MORE);
		assert_int_equal(frames, 1);
	}
}

/* Too long for the reader: refused before any payload byte is kept,
 * whether the protocol forbids the length or the caller's limit does. */
static void test_oversized(void **state)
{
	union frame f;
	struct vs_frx rx;
	size_t n;
	(void)state;

	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.length = 1u << 30;
	refused_at_header(sched_rd, &f, n, VS_FRX_PROTO);
	/* A reply is variable, but longer than anything the shim takes. */
	n = build(&f, VS_MSG_REPLY, 200);
	assert_string_equal(refused_at_header(shim_rd, &f, n, VS_FRX_PROTO),
			    "frame longer than this peer may send");
	/* Past the protocol's limit, even for vsharectl. */
	n = build(&f, VS_MSG_REPLY, 200);
	f.h.length = VS_MAX_PAYLOAD + 1;
	refused_at_header(ctl_rd, &f, n, VS_FRX_PROTO);
	/* A caller's own limit below a fixed size. */
	n = build(&f, VS_MSG_ERROR, sizeof(struct vs_error));
	vs_frx_init(&rx, VS_ROLE_SCHEDULER, 64);
	{
		const unsigned char *p = f.b;
		size_t left = n;

		assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_PROTO);
		assert_int_equal(left, n - HS);
		assert_string_equal(rx.why, "frame longer than this peer may send");
	}
}

/* A bad payload is refused once it is complete, not before. */
static void test_bad_payload(void **state)
{
	union frame f;
	struct vs_frx rx = reader(sched_rd);
	size_t n = build(&f, VS_MSG_REQUEST, sizeof(struct vs_gpu_ref));
	int frames;
	(void)state;

	memset(f.b + HS, 0, sizeof(struct vs_gpu_ref)); /* empty UUID */
	assert_int_equal(push_all(&rx, f.b, n - 1, &frames), VS_FRX_MORE);
	assert_int_equal(push_all(&rx, f.b + n - 1, 1, &frames), VS_FRX_PROTO);
	assert_string_equal(rx.why, "empty UUID");
}

/* A status reply of `json` bytes as vsharectl receives it. */
static unsigned char *long_reply(uint32_t json, size_t *n)
{
	unsigned char *b = malloc(HS + sizeof(struct vs_reply) + json);
	struct vs_hdr h;
	struct vs_reply m = { VS_OK, json };

	assert_non_null(b);
	vs_hdr_init(&h, VS_MSG_REPLY, (uint32_t)sizeof(m) + json);
	memcpy(b, &h, HS);
	memcpy(b + HS, &m, sizeof(m));
	for (uint32_t i = 0; i < json; i++)
		b[HS + sizeof(m) + i] = (unsigned char)('a' + i % 26);
	*n = HS + sizeof(m) + json;
	return b;
}

/* vsharectl: the header first, then the caller's buffer of its size. */
static void test_large_reply(void **state)
{
	size_t n, left, len;
	unsigned char *b = long_reply(200000, &n), *mine;
	const unsigned char *p = b;
	struct vs_frx rx = reader(ctl_rd);
	(void)state;

	left = n;
	assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_BUFFER);
	assert_int_equal(left, n - HS);
	len = rx.in.hdr.length;
	assert_int_equal(len, n - HS);
	/* Without a buffer it asks again and takes nothing. */
	assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_BUFFER);
	assert_int_equal(left, n - HS);
	mine = malloc(len);
	assert_non_null(mine);
	vs_frx_buffer(&rx, mine);
	assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_FRAME);
	assert_int_equal(left, 0);
	assert_ptr_equal(vs_frx_payload(&rx), mine);
	assert_memory_equal(mine, b + HS, len);

	/* Byte by byte: one request for a buffer, then the frame. */
	rx = reader(ctl_rd);
	memset(mine, 0, len);
	for (size_t i = 0; i < n; i++) {
		enum vs_frx_result r;

		p = b + i;
		left = 1;
		r = vs_frx_push(&rx, &p, &left);
		if (r == VS_FRX_BUFFER) {
			assert_int_equal(i, HS - 1);
			vs_frx_buffer(&rx, mine);
			r = vs_frx_push(&rx, &p, &left);
		}
		assert_int_equal(left, 0);
		assert_int_equal(r, i == n - 1 ? VS_FRX_FRAME : VS_FRX_MORE);
	}
	assert_memory_equal(mine, b + HS, len);
	free(mine);
	free(b);

	/* A short reply stays in the reader: no buffer asked for. */
	b = long_reply(20, &n);
	rx = reader(ctl_rd);
	p = b;
	left = n;
	assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_FRAME);
	assert_memory_equal(vs_frx_payload(&rx), b + HS, n - HS);
	free(b);
}

/* A scheduler of another version refuses ours: the shim and vsharectl
 * read its error whole (header layout and error frozen), whatever the
 * chunks, and get its message as safe text. */
static void test_foreign_error(void **state)
{
	union frame f;
	struct vs_error *e = (struct vs_error *)(void *)(f.b + HS);
	const struct vs_error *got;
	size_t n = build(&f, VS_MSG_ERROR, sizeof(struct vs_error));
	(void)state;

	f.h.version = VS_PROTO_VERSION + 1;
	e->code = VS_E_VERSION;
	e->detail = VS_PROTO_VERSION + 1;
	memset(e->msg, 'x', sizeof(e->msg)); /* no NUL: the reader ends it */
	e->msg[3] = '\n';
	for (size_t k = 1; k < GEN_N_READERS; k++) {
		struct vs_frx rx = reader(&gen_readers[k]);

		for (size_t i = 0; i < n; i++) {
			const unsigned char *p = f.b + i;
			size_t one = 1;

			assert_null(vs_frx_foreign_error(&rx));
			assert_int_equal(vs_frx_push(&rx, &p, &one),
					 i == n - 1 ? VS_FRX_VERSION : VS_FRX_MORE);
			assert_int_equal(one, 0);
		}
		assert_int_equal(rx.in.hdr.version, VS_PROTO_VERSION + 1);
		got = vs_frx_foreign_error(&rx);
		assert_non_null(got);
		assert_int_equal(got->code, VS_E_VERSION);
		assert_int_equal(got->detail, VS_PROTO_VERSION + 1);
		assert_int_equal(strlen(got->msg), sizeof(got->msg) - 1);
		assert_int_equal(got->msg[3], '?');
	}
	/* The scheduler reads no error from its peers: it stops at once. */
	refused_at_header(sched_rd, &f, n, VS_FRX_VERSION);
	/* Any other foreign frame: the header is all a reader can use. */
	n = build(&f, VS_MSG_GRANT, sizeof(struct vs_grant));
	f.h.version = VS_PROTO_VERSION + 1;
	refused_at_header(shim_rd, &f, n, VS_FRX_VERSION);
	n = build(&f, VS_MSG_HELLO, sizeof(struct vs_hello));
	f.h.version = VS_PROTO_VERSION + 1;
	refused_at_header(sched_rd, &f, n, VS_FRX_VERSION);
}

/* Peers of version 1 beside version 2 (include/vshare/proto.h): a
 * version-1 stream is read, a version-2 type in it is malformed, and a
 * stream keeps the version of its first frame. */
static void test_versions(void **state)
{
	union frame f[3];
	unsigned char buf[3 * sizeof(union frame)];
	size_t n = 0, len;
	struct vs_frx rx;
	int frames;
	(void)state;

	/* A version-1 shim: HELLO, ATTACH, REQUEST in version-1 headers. */
	len = build(&f[0], VS_MSG_HELLO, sizeof(struct vs_hello));
	f[0].h.version = 1;
	memcpy(buf + n, f[0].b, len);
	n += len;
	len = build(&f[1], VS_MSG_ATTACH, sizeof(struct vs_attach));
	f[1].h.version = 1;
	memcpy(buf + n, f[1].b, len);
	n += len;
	len = build(&f[2], VS_MSG_REQUEST, sizeof(struct vs_gpu_ref));
	f[2].h.version = 1;
	memcpy(buf + n, f[2].b, len);
	n += len;
	rx = reader(sched_rd);
	assert_int_equal(push_all(&rx, buf, n, &frames), VS_FRX_MORE);
	assert_int_equal(frames, 3);
	assert_int_equal(rx.version, 1);

	/* Then SWAPPED, which version 1 does not have: refused at its
	 * header, before any payload byte is kept. */
	len = build(&f[0], VS_MSG_SWAPPED, sizeof(struct vs_swapped));
	f[0].h.version = 1;
	refused_at_header(sched_rd, &f[0], len, VS_FRX_PROTO);
	rx = reader(sched_rd);
	assert_int_equal(push_all(&rx, buf, n, &frames), VS_FRX_MORE);
	{
		const unsigned char *p = f[0].b;
		size_t left = len;

		assert_int_equal(vs_frx_push(&rx, &p, &left), VS_FRX_PROTO);
		assert_string_equal(rx.why, "message type newer than the "
				    "sender's protocol version");
	}
	/* The same in a version-2 stream is a frame. */
	f[0].h.version = 2;
	rx = reader(sched_rd);
	assert_int_equal(push_all(&rx, f[0].b, len, &frames), VS_FRX_MORE);
	assert_int_equal(frames, 1);

	/* A version-1 admin's SET_SLICE, too, is refused; its SET_TQ not. */
	len = build(&f[1], VS_MSG_SET_SLICE, sizeof(struct vs_admin_set));
	f[1].h.version = 1;
	refused_at_header(sched_rd, &f[1], len, VS_FRX_PROTO);
	len = build(&f[1], VS_MSG_SET_TQ, sizeof(struct vs_admin_set));
	f[1].h.version = 1;
	rx = reader(sched_rd);
	assert_int_equal(push_all(&rx, f[1].b, len, &frames), VS_FRX_MORE);
	assert_int_equal(frames, 1);

	/* A version-2 frame after a version-1 one: the peer changed its
	 * version mid-stream. */
	len = build(&f[2], VS_MSG_REQUEST, sizeof(struct vs_gpu_ref));
	f[2].h.version = 2;
	assert_int_equal(push_all(&rx, f[2].b, len, &frames), VS_FRX_PROTO);
	assert_int_equal(frames, 0);
	assert_string_equal(rx.why, "protocol version changed within the "
			    "connection");

	/* The shim and vsharectl read a version-1 scheduler's frames. */
	len = build(&f[0], VS_MSG_GRANT, sizeof(struct vs_grant));
	f[0].h.version = 1;
	for (size_t k = 1; k < GEN_N_READERS; k++) {
		rx = reader(&gen_readers[k]);
		assert_int_equal(push_all(&rx, f[0].b, len, &frames),
				 VS_FRX_MORE);
		assert_int_equal(frames, 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_streams),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_role_filter),
		cmocka_unit_test(test_oversized),
		cmocka_unit_test(test_bad_payload),
		cmocka_unit_test(test_large_reply),
		cmocka_unit_test(test_foreign_error),
		cmocka_unit_test(test_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
