/*
 * Validation of vshare frames against the table of message types. Shared
 * by the scheduler, vsharectl and the shim; it depends on libc alone.
 */
#include <stdio.h>
#include <string.h>

#include "vshare/proto.h"

/* type, role, size, variable, name, since: the version that added it. */
static const struct vs_msg_info msg_table[] = {
	{ VS_MSG_HELLO,     VS_ROLE_CLIENT,    sizeof(struct vs_hello),      0, "hello", 1 },
	{ VS_MSG_ATTACH,    VS_ROLE_CLIENT,    sizeof(struct vs_attach),     0, "attach", 1 },
	{ VS_MSG_FOOTPRINT, VS_ROLE_CLIENT,    sizeof(struct vs_footprint),  0, "footprint", 1 },
	{ VS_MSG_REQUEST,   VS_ROLE_CLIENT,    sizeof(struct vs_gpu_ref),    0, "request", 1 },
	{ VS_MSG_RELEASED,  VS_ROLE_CLIENT,    sizeof(struct vs_gpu_ref),    0, "released", 1 },
	{ VS_MSG_SWAPPED,   VS_ROLE_CLIENT,    sizeof(struct vs_swapped),    0, "swapped", 2 },
	{ VS_MSG_WAIT_QUERY, VS_ROLE_CLIENT,   sizeof(struct vs_wait_query), 0, "wait-query", 3 },
	{ VS_MSG_TOOK,      VS_ROLE_CLIENT,    sizeof(struct vs_gpu_ref),    0, "took", 4 },
	{ VS_MSG_USAGE,     VS_ROLE_CLIENT,    sizeof(struct vs_usage),      0, "usage", 9 },
	{ VS_MSG_UNSHARED,  VS_ROLE_CLIENT,    sizeof(struct vs_unshared),   0, "unshared", 9 },
	{ VS_MSG_WELCOME,   VS_ROLE_SCHEDULER, sizeof(struct vs_welcome),    0, "welcome", 1 },
	{ VS_MSG_GRANT,     VS_ROLE_SCHEDULER, sizeof(struct vs_grant),      0, "grant", 1 },
	{ VS_MSG_DROP,      VS_ROLE_SCHEDULER, sizeof(struct vs_drop),       0, "drop", 1 },
	{ VS_MSG_MODE,      VS_ROLE_SCHEDULER, sizeof(struct vs_mode),       0, "mode", 1 },
	{ VS_MSG_ERROR,     VS_ROLE_SCHEDULER, sizeof(struct vs_error),      0, "error", 1 },
	{ VS_MSG_POLICY,    VS_ROLE_SCHEDULER, sizeof(struct vs_policy),     0, "policy", 3 },
	{ VS_MSG_WAITING,   VS_ROLE_SCHEDULER, sizeof(struct vs_waiting),    0, "waiting", 3 },
	{ VS_MSG_LOCK_PAGE, VS_ROLE_SCHEDULER, sizeof(struct vs_lock_info),  0, "lock-page", 4 },
	{ VS_MSG_STATUS,    VS_ROLE_ADMIN,     sizeof(struct vs_status_req), 0, "status", 1 },
	{ VS_MSG_SET_TQ,    VS_ROLE_ADMIN,     sizeof(struct vs_admin_set),  0, "set-tq", 1 },
	{ VS_MSG_SET_MODE,  VS_ROLE_ADMIN,     sizeof(struct vs_admin_set),  0, "set-mode", 1 },
	{ VS_MSG_SET_SLICE, VS_ROLE_ADMIN,     sizeof(struct vs_admin_set),  0, "set-slice", 2 },
	{ VS_MSG_SET_POLICY, VS_ROLE_ADMIN,    sizeof(struct vs_admin_set),  0, "set-policy", 2 },
	{ VS_MSG_SET_WEIGHT, VS_ROLE_ADMIN,    sizeof(struct vs_admin_set),  0, "set-weight", 2 },
	{ VS_MSG_METRICS,   VS_ROLE_ADMIN,     sizeof(struct vs_status_req), 0, "metrics", 3 },
	{ VS_MSG_SET_NAME,  VS_ROLE_ADMIN,     sizeof(struct vs_set_name),   0, "set-name", 6 },
	{ VS_MSG_REPLY,     VS_ROLE_SCHEDULER, sizeof(struct vs_reply),      1, "reply", 1 },
};

const struct vs_msg_info *vs_msg_lookup(uint16_t type)
{
	for (size_t i = 0; i < sizeof(msg_table) / sizeof(msg_table[0]); i++)
		if (msg_table[i].type == type)
			return &msg_table[i];
	return NULL;
}

#define FAIL(msg) do { if (why) *why = (msg); return VS_E_PROTO; } while (0)

int vs_check_hdr_why(const struct vs_hdr *h, uint32_t role, const char **why)
{
	const struct vs_msg_info *mi;

	if (h->magic != VS_PROTO_MAGIC)
		FAIL("bad magic: not a vshare frame");
	if (h->version < VS_PROTO_VERSION_MIN || h->version > VS_PROTO_VERSION) {
		if (why)
			*why = "protocol version mismatch";
		return VS_E_VERSION;
	}
	if (h->flags != 0)
		FAIL("header flags not zero");
	if (h->length > VS_MAX_PAYLOAD)
		FAIL("frame longer than any message");
	mi = vs_msg_lookup(h->type);
	if (mi == NULL)
		FAIL("unknown message type");
	if (role == 0 ? mi->role == VS_ROLE_SCHEDULER : mi->role != role)
		FAIL("message type not sent by this peer's role");
	if (mi->since > h->version)
		FAIL("message type newer than the sender's protocol version");
	if (mi->variable ? h->length < mi->size : h->length != mi->size)
		FAIL("wrong length for its message type");
	return VS_OK;
}

int vs_check_hdr(const struct vs_hdr *h, uint32_t role)
{
	return vs_check_hdr_why(h, role, NULL);
}

static int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

/* A fixed text field: printable bytes, then only NULs to the end. */
static int text_ok(const char *s, size_t n, int need_nul)
{
	size_t len = strnlen(s, n);

	if (need_nul && len == n)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return all_zero(s + len, n - len);
}

int vs_check_payload(const struct vs_hdr *h, const void *payload,
		     const char **why)
{
	switch (h->type) {
	case VS_MSG_HELLO: {
		const struct vs_hello *m = payload;
		if (m->klass > (h->version >= 6 ? VS_CLASS_MAX : 0))
			FAIL("hello: unknown class");
		if (!text_ok(m->label, sizeof(m->label), 0))
			FAIL("hello: label has control characters or junk after NUL");
		break;
	}
	case VS_MSG_ATTACH: {
		const struct vs_attach *m = payload;
		if (all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("attach: empty UUID");
		break;
	}
	case VS_MSG_FOOTPRINT:
	case VS_MSG_REQUEST:
	case VS_MSG_RELEASED:
	case VS_MSG_TOOK: {
		const struct vs_gpu_ref *m = payload; /* every one starts with the UUID */
		if (all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("empty UUID");
		break;
	}
	case VS_MSG_SWAPPED: {
		const struct vs_swapped *m = payload;
		if (all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("swapped: empty UUID");
		if (m->bytes == 0 || m->us > VS_SWAPPED_US_MAX)
			FAIL("swapped: no bytes, or longer than an hour");
		break;
	}
	case VS_MSG_USAGE: {
		const struct vs_usage *m = payload;
		if (all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("usage: empty UUID");
		if (m->flags || m->reserved)
			FAIL("usage: flags or reserved field not zero");
		if (m->swapout_us > VS_SWAPPED_US_MAX)
			FAIL("usage: swap-out longer than an hour");
		break;
	}
	case VS_MSG_UNSHARED: {
		const struct vs_unshared *m = payload;
		if (m->flags || m->reason < VS_UNSHARED_ABSENT ||
		    m->reason > VS_UNSHARED_MAX)
			FAIL("unshared: unknown reason, or flags not zero");
		break;
	}
	case VS_MSG_WAIT_QUERY: {
		const struct vs_wait_query *m = payload;
		if (all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("wait-query: empty UUID");
		if (m->flags || m->reserved)
			FAIL("wait-query: flags or reserved field not zero");
		break;
	}
	case VS_MSG_WELCOME:
		break;
	case VS_MSG_LOCK_PAGE: {
		const struct vs_lock_info *m = payload;
		/* A version-4 page is one page of the same size, with no
		 * words page beside it. */
		uint32_t words = h->version >= 5 ? sizeof(struct vs_lock_words) : 0;
		if (!(m->token & VS_LOCK_TOKEN_BIT) ||
		    m->size != sizeof(struct vs_lock_page) || m->words != words)
			FAIL("lock-page: bad token or sizes");
		break;
	}
	case VS_MSG_POLICY: {
		const struct vs_policy *m = payload;
		uint32_t known = VS_POLICYF_REQUIRE |
				 (h->version >= 6 ? VS_POLICYF_INTERACTIVE : 0);
		if (m->reserved || (m->flags & ~known) ||
		    m->weight < VS_WEIGHT_MIN || m->weight > VS_WEIGHT_MAX)
			FAIL("policy: bad flags, weight or reserved field");
		break;
	}
	case VS_MSG_WAITING: {
		const struct vs_waiting *m = payload;
		if (m->reserved)
			FAIL("waiting: reserved field not zero");
		if (m->position > m->n_waiting || (m->position == 0 &&
		    !all_zero(&m->n_waiting, sizeof(*m) - offsetof(struct vs_waiting, n_waiting))))
			FAIL("waiting: place past the queue, or data when not waiting");
		if (!text_ok(m->holder_label, sizeof(m->holder_label), 0))
			FAIL("waiting: label has control characters or junk after NUL");
		break;
	}
	case VS_MSG_GRANT: {
		const struct vs_grant *m = payload;
		uint32_t known = VS_GRANTF_OVERSUB |
				 (h->version >= 7 ? VS_GRANTF_PACE : 0);
		if (m->reserved || m->kind > VS_GRANT_EXCLUSIVE ||
		    (m->flags & ~known))
			FAIL("grant: bad kind, flags or reserved field");
		break;
	}
	case VS_MSG_DROP: {
		const struct vs_drop *m = payload;
		if (m->reserved || m->reason < VS_DROP_QUANTUM ||
		    m->reason > VS_DROP_CAPACITY)
			FAIL("drop: bad reason or reserved field");
		break;
	}
	case VS_MSG_MODE: {
		const struct vs_mode *m = payload;
		if (m->reserved || m->mode > VS_MODE_OFF)
			FAIL("mode: bad mode or reserved field");
		break;
	}
	case VS_MSG_ERROR: {
		const struct vs_error *m = payload;
		if (!text_ok(m->msg, sizeof(m->msg), 1))
			FAIL("error: message not NUL-terminated text");
		break;
	}
	case VS_MSG_STATUS:
	case VS_MSG_METRICS: {
		const struct vs_status_req *m = payload;
		if (m->flags || m->reserved)
			FAIL("status or metrics: flags or reserved field not zero");
		break;
	}
	case VS_MSG_SET_TQ:
	case VS_MSG_SET_MODE:
	case VS_MSG_SET_SLICE: {
		const struct vs_admin_set *m = payload;
		if (m->reserved || (m->target & ~(VS_TARGET_ALL | VS_TARGET_INDEX)) ||
		    m->target == (VS_TARGET_ALL | VS_TARGET_INDEX))
			FAIL("set: bad target or reserved field");
		if (m->target == 0 && all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("set: no target GPU");
		if (h->type == VS_MSG_SET_MODE && m->value > VS_MODE_OFF)
			FAIL("set-mode: unknown mode");
		break;
	}
	case VS_MSG_SET_POLICY: {
		const struct vs_admin_set *m = payload;
		if (m->reserved || m->target != VS_TARGET_ALL || m->index ||
		    !all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("set-policy: target not all GPUs, or reserved field");
		if (m->value > VS_POLICY_FCFS)
			FAIL("set-policy: unknown policy");
		break;
	}
	case VS_MSG_SET_WEIGHT: {
		const struct vs_admin_set *m = payload;
		/* The weight's range is the daemon's to check: it answers
		 * an admin with the range, rather than closing on it. */
		if (m->reserved || m->target != VS_TARGET_UID ||
		    !all_zero(m->uuid, sizeof(m->uuid)))
			FAIL("set-weight: target not a uid, or reserved field");
		if (m->index == UINT32_MAX)
			FAIL("set-weight: uid -1");
		break;
	}
	case VS_MSG_SET_NAME: {
		const struct vs_set_name *m = payload;
		if (m->reserved || (m->flags & ~VS_NAME_CLEAR))
			FAIL("set-name: bad flags or reserved field");
		if (!text_ok(m->label, sizeof(m->label), 1) ||
		    !text_ok(m->name, sizeof(m->name), 1))
			FAIL("set-name: label or name not NUL-terminated text");
		if (m->label[0] == '\0' ||
		    ((m->flags & VS_NAME_CLEAR) && m->name[0] != '\0'))
			FAIL("set-name: no label, or a name with VS_NAME_CLEAR");
		break;
	}
	case VS_MSG_REPLY: {
		const struct vs_reply *m = payload;
		if (m->json_len != h->length - sizeof(*m))
			FAIL("reply: json_len does not match the frame length");
		break;
	}
	default:
		FAIL("unknown message type");
	}
	return VS_OK;
}

void vs_hdr_init_v(struct vs_hdr *h, uint16_t version, uint16_t type,
		   uint32_t len)
{
	memset(h, 0, sizeof(*h));
	h->magic = VS_PROTO_MAGIC;
	h->version = version;
	h->type = type;
	h->length = len;
}

void vs_hdr_init(struct vs_hdr *h, uint16_t type, uint32_t len)
{
	vs_hdr_init_v(h, VS_PROTO_VERSION, type, len);
}

const char *vs_mode_name(uint32_t mode)
{
	switch (mode) {
	case VS_MODE_AUTO: return "auto";
	case VS_MODE_ON:   return "on";
	case VS_MODE_OFF:  return "off";
	default:           return "?";
	}
}

int vs_mode_parse(const char *s, uint32_t *mode)
{
	if (strcmp(s, "auto") == 0)
		*mode = VS_MODE_AUTO;
	else if (strcmp(s, "on") == 0)
		*mode = VS_MODE_ON;
	else if (strcmp(s, "off") == 0)
		*mode = VS_MODE_OFF;
	else
		return -1;
	return 0;
}

const char *vs_class_name(uint32_t klass)
{
	switch (klass) {
	case VS_CLASS_BATCH:       return "batch";
	case VS_CLASS_INTERACTIVE: return "interactive";
	default:                   return "?";
	}
}

const char *vs_drop_reason_name(uint32_t reason)
{
	switch (reason) {
	case VS_DROP_QUANTUM:  return "quantum over";
	case VS_DROP_IDLE:     return "someone waiting, release when idle";
	case VS_DROP_MODE:     return "mode change";
	case VS_DROP_CAPACITY: return "over capacity";
	default:               return "?";
	}
}

const char *vs_unshared_name(uint32_t reason)
{
	switch (reason) {
	case VS_UNSHARED_ABSENT: return "absent";
	case VS_UNSHARED_LOST:   return "lost";
	default:                 return "?";
	}
}

const char *vs_policy_name(uint32_t policy)
{
	switch (policy) {
	case VS_POLICY_FAIR: return "fair";
	case VS_POLICY_FCFS: return "fcfs";
	default:             return "?";
	}
}

int vs_policy_parse(const char *s, uint32_t *policy)
{
	if (strcmp(s, "fair") == 0)
		*policy = VS_POLICY_FAIR;
	else if (strcmp(s, "fcfs") == 0)
		*policy = VS_POLICY_FCFS;
	else
		return -1;
	return 0;
}

const char *vs_err_name(int32_t code)
{
	switch (code) {
	case VS_OK:        return "ok";
	case VS_E_PROTO:   return "malformed frame";
	case VS_E_VERSION: return "protocol version mismatch";
	case VS_E_PERM:    return "permission denied";
	case VS_E_NOGPU:   return "no such GPU";
	case VS_E_INVAL:   return "invalid value";
	case VS_E_STATE:   return "not valid in this state";
	case VS_E_LIMIT:   return "limit reached";
	case VS_E_FULL:    return "scheduler full";
	default:           return "unknown error";
	}
}

void vs_uuid_format(const uint8_t u[VS_UUID_LEN], char out[VS_UUID_STR_LEN])
{
	snprintf(out, VS_UUID_STR_LEN,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int vs_uuid_parse(const char *s, uint8_t uuid[VS_UUID_LEN])
{
	static const int dash_after[] = { 4, 6, 8, 10 }; /* byte counts */
	size_t d = 0;

	if (strncmp(s, "GPU-", 4) == 0)
		s += 4;
	for (int i = 0; i < VS_UUID_LEN; i++) {
		int hi, lo;

		if (d < 4 && i == dash_after[d]) {
			if (*s != '-')
				return -1;
			s++;
			d++;
		}
		hi = hexval(s[0]);
		lo = hi < 0 ? -1 : hexval(s[1]);
		if (lo < 0)
			return -1;
		uuid[i] = (uint8_t)(hi << 4 | lo);
		s += 2;
	}
	return *s == '\0' ? 0 : -1;
}
