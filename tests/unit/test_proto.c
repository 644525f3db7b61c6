/* Protocol table and validation: every rule of vs_check_hdr and
 * vs_check_payload, and the UUID text form. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vshare/proto.h"

static struct vs_hdr hdr_for(uint16_t type, uint32_t len)
{
	struct vs_hdr h;

	vs_hdr_init(&h, type, len);
	return h;
}

static void test_header_rules(void **state)
{
	struct vs_hdr h;
	(void)state;

	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello));
	assert_int_equal(vs_check_hdr(&h, 0), VS_OK);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_CLIENT), VS_OK);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_E_PROTO);

	h.magic ^= 1;
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello));
	h.version = VS_PROTO_VERSION + 1;
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_VERSION);
	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello));
	h.flags = 1;
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello) - 1);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello) + 1);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	h = hdr_for(0x7777, 0);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	/* The scheduler accepts no scheduler-only types from peers. */
	h = hdr_for(VS_MSG_GRANT, sizeof(struct vs_grant));
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_OK);
	/* Variable-length replies: at least the fixed part, at most the max. */
	h = hdr_for(VS_MSG_REPLY, sizeof(struct vs_reply) + 100);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_OK);
	h = hdr_for(VS_MSG_REPLY, sizeof(struct vs_reply) - 1);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_E_PROTO);
	h = hdr_for(VS_MSG_REPLY, VS_MAX_PAYLOAD + 1);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_E_PROTO);
}

/* Each header rule has its own reason, for logs and ERROR frames. */
static void test_header_reasons(void **state)
{
	struct vs_hdr h;
	const char *why = NULL;
	(void)state;

	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello));
	assert_int_equal(vs_check_hdr_why(&h, 0, &why), VS_OK);
	h.flags = 2;
	assert_int_equal(vs_check_hdr_why(&h, 0, &why), VS_E_PROTO);
	assert_string_equal(why, "header flags not zero");
	h = hdr_for(VS_MSG_HELLO, sizeof(struct vs_hello) + 1);
	assert_int_equal(vs_check_hdr_why(&h, 0, &why), VS_E_PROTO);
	assert_string_equal(why, "wrong length for its message type");
	h = hdr_for(VS_MSG_REPLY, VS_MAX_PAYLOAD + 1);
	assert_int_equal(vs_check_hdr_why(&h, VS_ROLE_SCHEDULER, &why),
			 VS_E_PROTO);
	assert_string_equal(why, "frame longer than any message");
	h = hdr_for(VS_MSG_STATUS, sizeof(struct vs_status_req));
	assert_int_equal(vs_check_hdr_why(&h, VS_ROLE_CLIENT, &why), VS_E_PROTO);
	assert_string_equal(why, "message type not sent by this peer's role");
	h.version = VS_PROTO_VERSION + 1;
	assert_int_equal(vs_check_hdr_why(&h, VS_ROLE_CLIENT, &why),
			 VS_E_VERSION);
	assert_string_equal(why, "protocol version mismatch");
	h.version = 0;
	assert_int_equal(vs_check_hdr_why(&h, VS_ROLE_ADMIN, &why),
			 VS_E_VERSION);
}

/* SipHash-2-4 against the reference vectors (key 00..0f, message the
 * first n bytes of 00 01 02 ...), and the lock page's marks: one per
 * token and opening. */
static void test_siphash(void **state)
{
	static const struct { size_t n; uint64_t h; } v[] = {
		{ 0, 0x726fdb47dd0e0e31ull }, { 1, 0x74f839c593dc67fdull },
		{ 7, 0xab0200f58b01d137ull }, { 8, 0x93f5f5799a932462ull },
		{ 9, 0x9e0082df0ba9e4b0ull },
	};
	unsigned char msg[16];
	uint64_t t = VS_LOCK_TOKEN_BIT | 12345, n = VS_LOCK_OPEN_BIT | 7;
	(void)state;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)i;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_true(vs_siphash24(0x0706050403020100ull,
					 0x0f0e0d0c0b0a0908ull, msg, v[i].n) ==
			    v[i].h);
	assert_true(vs_lock_mark(t, n) & VS_LOCK_TOKEN_BIT);
	assert_true(vs_lock_mark(t, n) == vs_lock_mark(t, n));
	assert_true(vs_lock_mark(t, n) != vs_lock_mark(t, n + 1));
	assert_true(vs_lock_mark(t, n) != vs_lock_mark(t + 1, n));
	assert_true(vs_lock_mark(t, n) != t);
}

/* LOCK_PAGE's sizes by version: version 5 names the words page beside
 * the state page, version 4 (an older scheduler's one page) names none;
 * the token always has its bit. */
static void test_lock_page_sizes(void **state)
{
	struct vs_lock_info m = { VS_LOCK_TOKEN_BIT | 7,
				  sizeof(struct vs_lock_page),
				  sizeof(struct vs_lock_words) };
	const char *why = NULL;
	struct vs_hdr h;
	(void)state;

	vs_hdr_init_v(&h, 5, VS_MSG_LOCK_PAGE, sizeof(m));
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.words = 0;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	vs_hdr_init_v(&h, 4, VS_MSG_LOCK_PAGE, sizeof(m));
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.words = sizeof(struct vs_lock_words);
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	vs_hdr_init_v(&h, 5, VS_MSG_LOCK_PAGE, sizeof(m));
	m.token = 7;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	assert_string_equal(why, "lock-page: bad token or sizes");
}

/* Versions side by side: a header of any version from VS_PROTO_VERSION_MIN
 * on passes, but a type newer than its header's version does not (a
 * version-1 peer sending SWAPPED or SET_SLICE). */
static void test_versions(void **state)
{
	static const struct { uint16_t type; uint32_t len, since; } rows[] = {
		{ VS_MSG_HELLO, sizeof(struct vs_hello), 1 },
		{ VS_MSG_SWAPPED, sizeof(struct vs_swapped), 2 },
		{ VS_MSG_SET_SLICE, sizeof(struct vs_admin_set), 2 },
		{ VS_MSG_SET_POLICY, sizeof(struct vs_admin_set), 2 },
		{ VS_MSG_SET_WEIGHT, sizeof(struct vs_admin_set), 2 },
		{ VS_MSG_METRICS, sizeof(struct vs_status_req), 3 },
		{ VS_MSG_SET_TQ, sizeof(struct vs_admin_set), 1 },
		{ VS_MSG_POLICY, sizeof(struct vs_policy), 3 },
		{ VS_MSG_WAIT_QUERY, sizeof(struct vs_wait_query), 3 },
		{ VS_MSG_TOOK, sizeof(struct vs_gpu_ref), 4 },
		{ VS_MSG_LOCK_PAGE, sizeof(struct vs_lock_info), 4 },
	};
	const char *why = NULL;
	struct vs_hdr h;
	uint32_t role;
	(void)state;

	assert_int_equal(VS_PROTO_VERSION, 8);
	assert_int_equal(VS_PROTO_VERSION_MIN, 1);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(vs_msg_lookup(rows[i].type)->since,
				 rows[i].since);
		/* As the receiver checks it: the scheduler takes both
		 * other roles (0), a client hears the scheduler. */
		role = vs_msg_lookup(rows[i].type)->role == VS_ROLE_SCHEDULER ?
		       VS_ROLE_SCHEDULER : 0;
		for (uint16_t v = VS_PROTO_VERSION_MIN; v <= VS_PROTO_VERSION; v++) {
			vs_hdr_init_v(&h, v, rows[i].type, rows[i].len);
			why = NULL;
			if (v >= rows[i].since) {
				assert_int_equal(vs_check_hdr_why(&h, role, &why),
						 VS_OK);
				continue;
			}
			assert_int_equal(vs_check_hdr_why(&h, role, &why),
					 VS_E_PROTO);
			assert_string_equal(why, "message type newer than the "
					    "sender's protocol version");
		}
	}
	vs_hdr_init(&h, VS_MSG_GRANT, sizeof(struct vs_grant));
	assert_int_equal(h.version, VS_PROTO_VERSION);
	vs_hdr_init_v(&h, 1, VS_MSG_GRANT, sizeof(struct vs_grant));
	assert_int_equal(h.version, 1);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_OK);
}

/* SWAPPED: a GPU, some bytes, a sane time; the exact size. */
static void test_swapped(void **state)
{
	struct vs_swapped m;
	struct vs_hdr h;
	const char *why = NULL;
	(void)state;

	memset(&m, 0, sizeof(m));
	m.uuid[0] = 1;
	m.us = 1500;
	m.bytes = 1u << 30;
	h = hdr_for(VS_MSG_SWAPPED, sizeof(m));
	assert_int_equal(vs_check_hdr(&h, 0), VS_OK);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_CLIENT), VS_OK);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_ADMIN), VS_E_PROTO);
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.us = 0; /* too quick to measure: still a swap-in */
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.us = VS_SWAPPED_US_MAX;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.us = VS_SWAPPED_US_MAX + 1;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	m.us = 10;
	m.bytes = 0;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	m.bytes = 1;
	memset(m.uuid, 0, sizeof(m.uuid));
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	assert_string_equal(why, "swapped: empty UUID");
	h = hdr_for(VS_MSG_SWAPPED, sizeof(m) - 8);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	h = hdr_for(VS_MSG_SWAPPED, sizeof(m) + 8);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
}

/* WAIT_QUERY: a client's, a GPU, nothing else set. WAITING: the
 * scheduler's, a place within the queue, all zero when not waiting. */
static void test_wait_frames(void **state)
{
	struct vs_wait_query q;
	struct vs_waiting w;
	struct vs_hdr h;
	const char *why = NULL;
	(void)state;

	memset(&q, 0, sizeof(q));
	q.uuid[3] = 9;
	h = hdr_for(VS_MSG_WAIT_QUERY, sizeof(q));
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_CLIENT), VS_OK);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_E_PROTO);
	assert_int_equal(vs_check_payload(&h, &q, &why), VS_OK);
	q.flags = 1;
	assert_int_equal(vs_check_payload(&h, &q, &why), VS_E_PROTO);
	q.flags = 0;
	q.reserved = 1;
	assert_int_equal(vs_check_payload(&h, &q, &why), VS_E_PROTO);
	memset(&q, 0, sizeof(q));
	assert_int_equal(vs_check_payload(&h, &q, &why), VS_E_PROTO);
	assert_string_equal(why, "wait-query: empty UUID");
	h = hdr_for(VS_MSG_WAIT_QUERY, sizeof(q) - 8);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);

	memset(&w, 0, sizeof(w));
	w.uuid[0] = 1;
	h = hdr_for(VS_MSG_WAITING, sizeof(w));
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_SCHEDULER), VS_OK);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_OK); /* not waiting */
	w.eta_ms = 5;
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_E_PROTO);
	w.position = 2;
	w.n_waiting = 2;
	w.n_holders = 1;
	w.holder_uid = 1000;
	w.held_ms = 7000;
	w.eta_ms = UINT64_MAX;
	strcpy(w.holder_label, "jupyter:python3-vshare:1a2b3c4d");
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_OK);
	w.position = 3;
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_E_PROTO);
	w.position = 1;
	w.holder_label[3] = '\x1b';
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_E_PROTO);
	w.holder_label[3] = 'y';
	w.reserved = 1;
	assert_int_equal(vs_check_payload(&h, &w, &why), VS_E_PROTO);
}

/* METRICS (version 3) is an admin request shaped like STATUS: no flags,
 * reserved zero, a fixed size. */
static void test_metrics_request(void **state)
{
	struct vs_status_req m;
	struct vs_hdr h;
	const char *why = NULL;
	(void)state;

	memset(&m, 0, sizeof(m));
	h = hdr_for(VS_MSG_METRICS, sizeof(m));
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_ADMIN), VS_OK);
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_OK);
	m.reserved = 1;
	assert_int_equal(vs_check_payload(&h, &m, &why), VS_E_PROTO);
	assert_string_equal(why, "status or metrics: flags or reserved field "
			    "not zero");
	h = hdr_for(VS_MSG_METRICS, sizeof(m) + 1);
	assert_int_equal(vs_check_hdr(&h, VS_ROLE_ADMIN), VS_E_PROTO);
	h = hdr_for(VS_MSG_METRICS, sizeof(m));
	h.version = 2;
	assert_int_equal(vs_check_hdr_why(&h, VS_ROLE_ADMIN, &why), VS_E_PROTO);
	assert_string_equal(why, "message type newer than the sender's "
			    "protocol version");
	assert_string_equal(vs_msg_lookup(VS_MSG_METRICS)->name, "metrics");
}

/* SET_SLICE targets a GPU like SET_TQ; SET_POLICY every GPU, with a
 * known policy; SET_WEIGHT a uid. */
static void test_admin_sets(void **state)
{
	struct vs_admin_set m;
	struct vs_hdr h;
	(void)state;

	memset(&m, 0, sizeof(m));
	h = hdr_for(VS_MSG_SET_SLICE, sizeof(m));
	m.target = VS_TARGET_INDEX;
	m.value = VS_SLICE_MIN_MS;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	m.target = 0;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	m.uuid[4] = 9;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	m.target = VS_TARGET_UID;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	h = hdr_for(VS_MSG_SET_SLICE, sizeof(m) - 4);
	assert_int_equal(vs_check_hdr(&h, 0), VS_E_PROTO);

	memset(&m, 0, sizeof(m));
	h = hdr_for(VS_MSG_SET_POLICY, sizeof(m));
	m.target = VS_TARGET_ALL;
	m.value = VS_POLICY_FCFS;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	m.value = 2;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	m.value = VS_POLICY_FAIR;
	m.target = VS_TARGET_INDEX;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	m.target = VS_TARGET_ALL;
	m.reserved = 1;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);

	memset(&m, 0, sizeof(m));
	h = hdr_for(VS_MSG_SET_WEIGHT, sizeof(m));
	m.target = VS_TARGET_UID;
	m.index = 1000;
	m.value = 5;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	m.index = UINT32_MAX;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	m.index = 0;
	m.target = VS_TARGET_ALL;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
	m.target = VS_TARGET_UID;
	m.uuid[0] = 1;
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_E_PROTO);
}

static void test_policy_names(void **state)
{
	uint32_t p;
	(void)state;

	assert_int_equal(vs_policy_parse("fcfs", &p), 0);
	assert_int_equal(p, VS_POLICY_FCFS);
	assert_string_equal(vs_policy_name(p), "fcfs");
	assert_int_equal(vs_policy_parse("fair", &p), 0);
	assert_string_equal(vs_policy_name(p), "fair");
	assert_int_equal(vs_policy_parse("FAIR", &p), -1);
	assert_string_equal(vs_policy_name(7), "?");
}

static void test_every_type_has_a_row(void **state)
{
	static const uint16_t types[] = {
		VS_MSG_HELLO, VS_MSG_ATTACH, VS_MSG_FOOTPRINT, VS_MSG_REQUEST,
		VS_MSG_RELEASED, VS_MSG_WELCOME, VS_MSG_GRANT, VS_MSG_DROP,
		VS_MSG_MODE, VS_MSG_ERROR, VS_MSG_STATUS, VS_MSG_SET_TQ,
		VS_MSG_SET_MODE, VS_MSG_REPLY, VS_MSG_SWAPPED,
		VS_MSG_SET_SLICE, VS_MSG_SET_POLICY, VS_MSG_SET_WEIGHT,
		VS_MSG_METRICS, VS_MSG_POLICY,
		VS_MSG_WAIT_QUERY, VS_MSG_WAITING,
	};
	(void)state;
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const struct vs_msg_info *mi = vs_msg_lookup(types[i]);
		assert_non_null(mi);
		assert_non_null(mi->name);
		assert_true(mi->size > 0);
		assert_true(mi->since >= 1 && mi->since <= VS_PROTO_VERSION);
	}
	assert_null(vs_msg_lookup(0));
}

static void test_payload_rules(void **state)
{
	struct vs_hdr h;
	struct vs_hello hello;
	struct vs_gpu_ref ref;
	struct vs_admin_set set;
	struct vs_reply reply;
	struct vs_policy pol;
	const char *why = NULL;
	(void)state;

	memset(&hello, 0, sizeof(hello));
	strcpy(hello.label, "train-job");
	hello.proto_version = VS_PROTO_VERSION;
	h = hdr_for(VS_MSG_HELLO, sizeof(hello));
	assert_int_equal(vs_check_payload(&h, &hello, &why), VS_OK);
	/* A class from version 6 on, and only a known one. */
	hello.klass = VS_CLASS_INTERACTIVE;
	assert_int_equal(vs_check_payload(&h, &hello, &why), VS_OK);
	hello.klass = VS_CLASS_MAX + 1;
	assert_int_equal(vs_check_payload(&h, &hello, &why), VS_E_PROTO);
	assert_non_null(why);
	hello.klass = VS_CLASS_INTERACTIVE;
	h.version = 5;
	assert_int_equal(vs_check_payload(&h, &hello, &why), VS_E_PROTO);
	h.version = VS_PROTO_VERSION;
	hello.klass = 0;
	hello.label[20] = 'x'; /* junk after the NUL */
	assert_int_equal(vs_check_payload(&h, &hello, NULL), VS_E_PROTO);
	hello.label[20] = 0;
	hello.label[2] = '\n';
	assert_int_equal(vs_check_payload(&h, &hello, NULL), VS_E_PROTO);

	memset(&ref, 0, sizeof(ref));
	h = hdr_for(VS_MSG_REQUEST, sizeof(ref));
	assert_int_equal(vs_check_payload(&h, &ref, NULL), VS_E_PROTO);
	ref.uuid[3] = 7;
	assert_int_equal(vs_check_payload(&h, &ref, NULL), VS_OK);

	memset(&set, 0, sizeof(set));
	h = hdr_for(VS_MSG_SET_MODE, sizeof(set));
	set.target = VS_TARGET_ALL;
	set.value = VS_MODE_OFF;
	assert_int_equal(vs_check_payload(&h, &set, NULL), VS_OK);
	set.value = 3;
	assert_int_equal(vs_check_payload(&h, &set, NULL), VS_E_PROTO);
	set.value = VS_MODE_ON;
	set.target = VS_TARGET_ALL | VS_TARGET_INDEX;
	assert_int_equal(vs_check_payload(&h, &set, NULL), VS_E_PROTO);
	set.target = 0; /* by UUID, but the UUID is empty */
	assert_int_equal(vs_check_payload(&h, &set, NULL), VS_E_PROTO);

	memset(&pol, 0, sizeof(pol));
	h = hdr_for(VS_MSG_POLICY, sizeof(pol));
	pol.weight = 1;
	pol.mem_limit = 8ull << 30;
	pol.flags = VS_POLICYF_REQUIRE;
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_OK);
	pol.weight = 0; /* every user has a weight */
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_E_PROTO);
	pol.weight = VS_WEIGHT_MAX + 1;
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_E_PROTO);
	pol.weight = VS_WEIGHT_MAX;
	pol.flags = VS_POLICYF_INTERACTIVE;
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_OK);
	h.version = 5; /* no classes before version 6 */
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_E_PROTO);
	h.version = VS_PROTO_VERSION;
	pol.flags = 0x4;
	assert_int_equal(vs_check_payload(&h, &pol, NULL), VS_E_PROTO);
	pol.flags = 0;
	pol.reserved = 1;
	assert_int_equal(vs_check_payload(&h, &pol, &why), VS_E_PROTO);
	assert_string_equal(why, "policy: bad flags, weight or reserved field");

	reply.status = 0;
	reply.json_len = 10;
	h = hdr_for(VS_MSG_REPLY, sizeof(reply) + 10);
	assert_int_equal(vs_check_payload(&h, &reply, NULL), VS_OK);
	reply.json_len = 11;
	assert_int_equal(vs_check_payload(&h, &reply, NULL), VS_E_PROTO);
}

/* GRANT's flags: OVERSUB in any version, PACE from version 7 on (a peer
 * of version 6 never hears it), any other bit never. */
static void test_grant_flags(void **state)
{
	struct vs_grant g;
	struct vs_hdr h;
	const char *why = NULL;
	(void)state;

	memset(&g, 0, sizeof(g));
	g.kind = VS_GRANT_EXCLUSIVE;
	h = hdr_for(VS_MSG_GRANT, sizeof(g));
	g.flags = VS_GRANTF_OVERSUB | VS_GRANTF_PACE;
	assert_int_equal(vs_check_payload(&h, &g, NULL), VS_OK);
	g.flags = VS_GRANTF_PACE;
	assert_int_equal(vs_check_payload(&h, &g, NULL), VS_OK);
	h.version = 6; /* no pacing before version 7 */
	assert_int_equal(vs_check_payload(&h, &g, &why), VS_E_PROTO);
	assert_string_equal(why, "grant: bad kind, flags or reserved field");
	g.flags = VS_GRANTF_OVERSUB;
	assert_int_equal(vs_check_payload(&h, &g, NULL), VS_OK);
	h.version = 1;
	assert_int_equal(vs_check_payload(&h, &g, NULL), VS_OK);
	h.version = VS_PROTO_VERSION;
	/* Bits no version defines stay malformed. */
	for (uint32_t bit = 0x4; bit; bit <<= 1) {
		g.flags = VS_GRANTF_PACE | bit;
		assert_int_equal(vs_check_payload(&h, &g, NULL), VS_E_PROTO);
	}
}

static void test_uuid_text(void **state)
{
	uint8_t u[VS_UUID_LEN], back[VS_UUID_LEN];
	char s[VS_UUID_STR_LEN];
	(void)state;

	for (int i = 0; i < VS_UUID_LEN; i++)
		u[i] = (uint8_t)(i * 17 + 3);
	vs_uuid_format(u, s);
	assert_int_equal(strlen(s), VS_UUID_STR_LEN - 1);
	assert_int_equal(strncmp(s, "GPU-", 4), 0);
	assert_int_equal(vs_uuid_parse(s, back), 0);
	assert_memory_equal(u, back, sizeof(u));
	assert_int_equal(vs_uuid_parse(s + 4, back), 0);
	assert_int_equal(vs_uuid_parse("GPU-1234", back), -1);
	s[10] = 'z';
	assert_int_equal(vs_uuid_parse(s, back), -1);
}

static void test_mode_names(void **state)
{
	uint32_t m;
	(void)state;

	assert_int_equal(vs_mode_parse("auto", &m), 0);
	assert_int_equal(m, VS_MODE_AUTO);
	assert_int_equal(vs_mode_parse("off", &m), 0);
	assert_string_equal(vs_mode_name(m), "off");
	assert_int_equal(vs_mode_parse("maybe", &m), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_rules),
		cmocka_unit_test(test_header_reasons),
		cmocka_unit_test(test_every_type_has_a_row),
		cmocka_unit_test(test_payload_rules),
		cmocka_unit_test(test_grant_flags),
		cmocka_unit_test(test_uuid_text),
		cmocka_unit_test(test_mode_names),
		cmocka_unit_test(test_versions),
		cmocka_unit_test(test_lock_page_sizes),
		cmocka_unit_test(test_siphash),
		cmocka_unit_test(test_swapped),
		cmocka_unit_test(test_metrics_request),
		cmocka_unit_test(test_wait_frames),
		cmocka_unit_test(test_admin_sets),
		cmocka_unit_test(test_policy_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
