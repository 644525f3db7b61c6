/*
 * Configuration: one table of keys (CONF_KEYS), from which come the
 * defaults, the parser with its range checks, --print-config and what a
 * reload keeps. Unknown keys are errors, so a typo does not silently keep
 * a default.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "conf.h"
#include "size.h"
#include "log.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

/* The largest configuration file read. */
#define CONF_FILE_MAX (1 << 20)

/* 2^53: the largest byte count that a JSON number holds exactly. */
#define JSON_INT_MAX 9007199254740992ull

/*
 * The keys, in the order --print-config writes them. A row is
 *   X(name, type, default, lo, hi, unit, scope, reload)
 * name is also the field of struct conf; default is NUM(value) or
 * STR(text); scope is GLOBAL, or GPU(field of struct sched_gpu_cfg, its
 * SCHED_GCFG_* bit, scale) for a key that "gpus" entries may set too;
 * reload is LIVE, or RESTART for what is set up once at start (the
 * socket, the lock page, the metrics listener); tests/ops/check_doc_keys.py
 * checks that the docs name these keys and their defaults.
 *
 * max_clients: with footprints clamped to SCHED_FP_MAX (2^44), 2^18
 * clients keep every per-GPU sum below 2^62. uid_* to outq_total are the
 * limits against hostile peers (docs/scheduler.md): outq_max must hold a
 * status reply (1 MiB and its header), so it starts at 2 MiB.
 *
 * policy to preempt_budget_pct are the fair share (sched_policy.h). The
 * slice's default is a floor: the slice in force grows with what
 * preemptions cost (sched_fair.c), so that a training job keeps 90% of the
 * GPU beside notebooks (preempt_budget_pct: 8% leaves room for what a
 * preemption costs beyond what is measured, the drain's bubble and the
 * running average's lag, measured on an H100 in docs/benchmarks.md);
 * 500 ms lets the first burst
 * of a notebook in wait half a second at most. preempt_pct 67: two equal
 * jobs taking turns at a quantum of up to half the half-life stay within
 * 70% of each other, so they do not preempt each other at every slice,
 * while a weight of 3 against 1 still gives about 72% of the GPU
 * (tests/sched/test_fair.c).
 *
 * metrics_listen is off ("") by default: an HTTP listener is a network
 * service, which the systemd unit does not allow until the admin says
 * so (docs/operations.md, "Metrics").
 *
 * metrics_gpus: GPUs that neither NVML nor "gpus" vouch for still get
 * series, the first this many to attach, so that a machine without NVML
 * needs no list; a peer attaching made-up UUIDs adds at most this many.
 */
#define CONF_KEYS(X) \
X(tq_s,              UINT,  NUM(30),                    VS_TQ_MIN_S, VS_TQ_MAX_S,  "s",       GPU(tq_ms, SCHED_GCFG_TQ, 1000),  LIVE)    \
X(mode,              MODE,  NUM(VS_MODE_AUTO),          0,           0,            "",        GPU(mode, SCHED_GCFG_MODE, 1),    LIVE)    \
X(capacity,          SIZE,  NUM(0),                     0,           JSON_INT_MAX, "bytes",   GPU(capacity, SCHED_GCFG_CAP, 1), LIVE)    \
X(grace_ms,          UINT,  NUM(5000),                  0,           3600000,      "ms",      GLOBAL,                           LIVE)    \
X(skip_unresponsive, BOOL,  NUM(1),                     0,           0,            "",        GLOBAL,                           LIVE)    \
X(socket,            PATH,  STR(""),                    0,           0,            "",        GLOBAL,                           RESTART) \
X(socket_group,      GROUP, STR(CONF_DEF_SOCKET_GROUP), 0,           0,            "",        GLOBAL,                           RESTART) \
X(socket_mode,       OCTAL, NUM(0660),                  0600,        0777,         "",        GLOBAL,                           RESTART) \
X(admin_group,       GROUP, STR(CONF_DEF_ADMIN_GROUP),  0,           0,            "",        GLOBAL,                           LIVE)    \
X(status_public,     BOOL,  NUM(1),                     0,           0,            "",        GLOBAL,                           LIVE)    \
X(lock_page,         BOOL,  NUM(1),                     0,           0,            "",        GLOBAL,                           RESTART) \
X(log_level,         LEVEL, NUM(LOG_LVL_INFO),          0,           0,            "",        GLOBAL,                           LIVE)    \
X(max_clients,       UINT,  NUM(16384),                 1,           262144,       "clients", GLOBAL,                           LIVE)    \
X(uid_conns,         UINT,  NUM(256),                   1,           262144,       "connections", GLOBAL,                       LIVE)    \
X(uid_gpus,          UINT,  NUM(64),                    1,           SCHED_MAX_GPUS, "GPUs",  GLOBAL,                           LIVE)    \
X(uid_requests,      UINT,  NUM(4096),                  1,           1u << 20,     "requests", GLOBAL,                          LIVE)    \
X(hello_ms,          UINT,  NUM(10000),                 100,         3600000,      "ms",      GLOBAL,                           LIVE)    \
X(frame_ms,          UINT,  NUM(5000),                  100,         3600000,      "ms",      GLOBAL,                           LIVE)    \
X(outq_pause,        SIZE,  NUM(16384),                 4096,        1u << 20,     "bytes",   GLOBAL,                           LIVE)    \
X(outq_max,          SIZE,  NUM(2u << 20),              2u << 20,    1u << 30,     "bytes",   GLOBAL,                           LIVE)    \
X(outq_total,        SIZE,  NUM(32u << 20),             2u << 20,    16ull << 30,  "bytes",   GLOBAL,                           LIVE)    \
X(policy,            POLICY, NUM(SCHED_POLICY_FAIR),    0,           0,            "",        GLOBAL,                           LIVE)    \
X(min_slice_ms,      UINT,  NUM(CONF_DEF_SLICE_MS),     SCHED_SLICE_MIN_MS, SCHED_SLICE_MAX_MS, "ms", GPU(min_slice_ms, SCHED_GCFG_SLICE, 1), LIVE) \
X(halflife_s,        UINT,  NUM(60),                    1,           86400,        "s",       GLOBAL,                           LIVE)    \
X(preempt_pct,       UINT,  NUM(67),                    1,           100,          "%",       GLOBAL,                           LIVE)    \
X(preempt_budget_pct, UINT, NUM(8),                     1,           50,           "%",       GLOBAL,                           LIVE)    \
X(metrics_listen,    ADDR,  STR(""),                    0,           0,            "",        GLOBAL,                           RESTART) \
X(metrics_gpus,      UINT,  NUM(16),                    0,           SCHED_MAX_GPUS, "GPUs",  GLOBAL,                           LIVE)

#define NUM(v) (v), NULL
#define STR(s) 0, (s)
#define GLOBAL 0, 0, 0, 0
#define GPU(f, bit, scale) offsetof(struct sched_gpu_cfg, f),                 \
	sizeof(((struct sched_gpu_cfg *)0)->f), (bit), (scale)
#define LIVE    0
#define RESTART 1
#define ROW(name, type, dflt, lo, hi, unit, scope, reload)                    \
	{ #name, CONF_T_##type, offsetof(struct conf, name),                   \
	  sizeof(((struct conf *)0)->name), dflt, lo, hi, unit, scope, reload },

static const struct conf_key keys[] = { CONF_KEYS(ROW) };
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const level_names[] = { "error", "warn", "info", "debug" };

const struct conf_key *conf_keys(size_t *n)
{
	*n = N_KEYS;
	return keys;
}

static const struct conf_key *find_key(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* A number-like field (every type but the strings) by its type's width. */
static uint64_t num_get(int type, const void *f)
{
	if (type == CONF_T_SIZE)
		return *(const uint64_t *)f;
	if (type == CONF_T_BOOL || type == CONF_T_LEVEL)
		return (uint64_t)*(const int *)f;
	return *(const uint32_t *)f;
}

static void num_set(int type, void *f, uint64_t v)
{
	if (type == CONF_T_SIZE)
		*(uint64_t *)f = v;
	else if (type == CONF_T_BOOL || type == CONF_T_LEVEL)
		*(int *)f = (int)v;
	else
		*(uint32_t *)f = (uint32_t)v;
}

static int is_text(int type)
{
	return type == CONF_T_PATH || type == CONF_T_GROUP ||
	       type == CONF_T_ADDR;
}

void conf_defaults(struct conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &keys[i];
		char *f = (char *)c + k->off;

		if (k->type == CONF_T_GROUP)
			snprintf(f, k->size, "%s", CONF_GROUP_AUTO);
		else if (k->type == CONF_T_PATH || k->type == CONF_T_ADDR)
			snprintf(f, k->size, "%s", k->dstr);
		else
			num_set(k->type, f, k->dnum);
	}
}

void conf_free(struct conf *c)
{
	free(c->gpus);
	c->gpus = NULL;
	c->n_gpus = 0;
	conf_weights_free(c);
	conf_policy_free(c);
}

/* An integer JSON number in [lo, hi]. */
static int get_int(const cJSON *it, const char *key, uint64_t lo, uint64_t hi,
		   uint64_t *out, char *err, size_t errlen)
{
	double v;

	if (!cJSON_IsNumber(it))
		ERR("%s: must be a number", key);
	v = it->valuedouble;
	if (v != floor(v) || v < (double)lo || v > (double)hi)
		ERR("%s: must be an integer from %llu to %llu", key,
		    (unsigned long long)lo, (unsigned long long)hi);
	*out = (uint64_t)v;
	return 0;
}

static int get_str(const cJSON *it, const char *key, char *out, size_t n,
		   char *err, size_t errlen)
{
	if (!cJSON_IsString(it))
		ERR("%s: must be a string", key);
	if (strlen(it->valuestring) >= n)
		ERR("%s: longer than %zu bytes", key, n - 1);
	strcpy(out, it->valuestring);
	return 0;
}

/* Bytes: a number, or a string like "8G". */
static int get_size(const cJSON *it, const char *key, uint64_t lo,
		    uint64_t hi, uint64_t *out, char *err, size_t errlen)
{
	if (!cJSON_IsString(it))
		return get_int(it, key, lo, hi, out, err, errlen);
	if (vs_parse_size(it->valuestring, 0, out) != 0)
		ERR("%s: bad size \"%s\" (bytes, or like \"8G\")", key,
		    it->valuestring);
	if (*out < lo || *out > hi)
		ERR("%s: %s is out of range (%llu to %llu bytes)", key,
		    it->valuestring, (unsigned long long)lo,
		    (unsigned long long)hi);
	return 0;
}

/* An octal string; the range of socket_mode ("0600" to "0777") is also
 * what keeps the owner's read and write. */
static int get_octal(const cJSON *it, const struct conf_key *k,
		     const char *key, uint64_t *out, char *err, size_t errlen)
{
	char *end;
	unsigned long v;

	if (!cJSON_IsString(it))
		ERR("%s: must be an octal string like \"%04llo\"", key,
		    (unsigned long long)k->dnum);
	errno = 0;
	v = strtoul(it->valuestring, &end, 8);
	if (errno || *end || end == it->valuestring || v < k->lo || v > k->hi)
		ERR("%s: must be octal from \"%04llo\" to \"%04llo\" with "
		    "owner read and write", key, (unsigned long long)k->lo,
		    (unsigned long long)k->hi);
	*out = v;
	return 0;
}

static int get_words(const cJSON *it, const char *key, int type,
		     uint64_t *out, char *err, size_t errlen)
{
	uint32_t m;
	int lv;

	if (type == CONF_T_MODE) {
		if (!cJSON_IsString(it) || vs_mode_parse(it->valuestring, &m))
			ERR("%s: must be \"auto\", \"on\" or \"off\"", key);
		*out = m;
		return 0;
	}
	if (type == CONF_T_POLICY) {
		if (!cJSON_IsString(it) || vs_policy_parse(it->valuestring, &m))
			ERR("%s: must be \"fair\" or \"fcfs\"", key);
		*out = m;
		return 0;
	}
	lv = cJSON_IsString(it) ? log_level_parse(it->valuestring) : -1;
	if (lv < 0)
		ERR("%s: must be \"error\", \"warn\", \"info\" or \"debug\"",
		    key);
	*out = (uint64_t)lv;
	return 0;
}

/* A number-like value of key k (named key in errors) into *v. */
static int parse_num(const struct conf_key *k, const cJSON *it,
		     const char *key, uint64_t *v, char *err, size_t errlen)
{
	switch (k->type) {
	case CONF_T_UINT:
		return get_int(it, key, k->lo, k->hi, v, err, errlen);
	case CONF_T_SIZE:
		return get_size(it, key, k->lo, k->hi, v, err, errlen);
	case CONF_T_OCTAL:
		return get_octal(it, k, key, v, err, errlen);
	case CONF_T_BOOL:
		if (!cJSON_IsBool(it))
			ERR("%s: must be true or false", key);
		*v = (uint64_t)cJSON_IsTrue(it);
		return 0;
	default:
		return get_words(it, key, k->type, v, err, errlen);
	}
}

/* A top-level key into its field of c. */
static int parse_field(struct conf *c, const struct conf_key *k,
		       const cJSON *it, char *err, size_t errlen)
{
	char *f = (char *)c + k->off;
	uint64_t v;

	if (k->type == CONF_T_GROUP && cJSON_IsNull(it)) {
		/* null: the automatic default (the usual group if it
		 * exists, else none). */
		snprintf(f, k->size, "%s", CONF_GROUP_AUTO);
		return 0;
	}
	if (is_text(k->type)) {
		if (get_str(it, k->name, f, k->size, err, errlen))
			return -1;
		if (k->type == CONF_T_PATH && f[0] != '/')
			ERR("%s: must be an absolute path", k->name);
		if (k->type == CONF_T_ADDR && f[0] != '\0') {
			struct sockaddr_storage ss;
			unsigned len;
			char why[128];

			if (conf_listen_parse(f, &ss, &len, why, sizeof(why)))
				ERR("%s: %s", k->name, why);
		}
		return 0;
	}
	if (parse_num(k, it, k->name, &v, err, errlen))
		return -1;
	num_set(k->type, f, v);
	return 0;
}

/* A key given twice would silently keep the last value: refuse it, as
 * unknown keys are refused. */
static int dup_key(const cJSON *it, char *err, size_t errlen)
{
	for (const cJSON *p = it->prev; p != NULL && p->next != NULL; p = p->prev)
		if (strcmp(p->string, it->string) == 0)
			ERR("%s: given twice", it->string);
	return 0;
}

/* One key of a "gpus" entry: a per-GPU key, scaled into g. */
static int parse_gpu_key(struct sched_gpu_cfg *g, const cJSON *it,
			 const char *key, char *err, size_t errlen)
{
	const struct conf_key *k = find_key(it->string);
	uint64_t v;

	if (k == NULL || k->gpu_bit == 0)
		ERR("%s: unknown key", key);
	if (parse_num(k, it, key, &v, err, errlen))
		return -1;
	v *= k->gpu_scale;
	if (k->gpu_size == sizeof(uint64_t))
		*(uint64_t *)(void *)((char *)g + k->gpu_off) = v;
	else
		*(uint32_t *)(void *)((char *)g + k->gpu_off) = (uint32_t)v;
	g->set |= k->gpu_bit;
	return 0;
}

static int parse_gpu(struct sched_gpu_cfg *g, const cJSON *obj,
		     const char *uuid, char *err, size_t errlen)
{
	const cJSON *it;
	char key[160];

	if (vs_uuid_parse(uuid, g->uuid) != 0)
		ERR("gpus: \"%s\" is not a GPU UUID", uuid);
	if (!cJSON_IsObject(obj))
		ERR("gpus.%s: must be an object", uuid);
	cJSON_ArrayForEach(it, obj) {
		snprintf(key, sizeof(key), "gpus.%s.%s", uuid, it->string);
		if (dup_key(it, err, errlen) ||
		    parse_gpu_key(g, it, key, err, errlen))
			return -1;
	}
	return 0;
}

static int parse_gpus(struct conf *c, const cJSON *obj, char *err,
		      size_t errlen)
{
	const cJSON *it;
	size_t n = (size_t)cJSON_GetArraySize(obj), i = 0;

	if (!cJSON_IsObject(obj))
		ERR("gpus: must be an object of GPU UUID to settings");
	free(c->gpus);
	c->gpus = NULL;
	c->n_gpus = 0;
	if (n == 0)
		return 0;
	c->gpus = calloc(n, sizeof(*c->gpus));
	if (c->gpus == NULL)
		ERR("gpus: out of memory");
	cJSON_ArrayForEach(it, obj) {
		if (dup_key(it, err, errlen) ||
		    parse_gpu(&c->gpus[i], it, it->string, err, errlen))
			return -1;
		i++;
	}
	c->n_gpus = n;
	return 0;
}

/* One top-level key. */
static int parse_key(struct conf *c, const cJSON *it, char *err, size_t errlen)
{
	const struct conf_key *k = find_key(it->string);

	if (k != NULL)
		return parse_field(c, k, it, err, errlen);
	if (strcmp(it->string, "gpus") == 0)
		return parse_gpus(c, it, err, errlen);
	if (strcmp(it->string, "weights") == 0)
		return conf_weights_parse(c, it, err, errlen);
	if (strcmp(it->string, "policy_users") == 0 ||
	    strcmp(it->string, "policy_groups") == 0)
		return conf_policy_parse(c, it, strcmp(it->string,
					 "policy_groups") == 0, err, errlen);
	ERR("%s: unknown key", it->string);
}

/* "line 3, column 7" of where cJSON stopped, for a syntax error. */
static void json_where_at(const char *text, const char *at, char *out,
			  size_t n)
{
	const char *p;
	int line = 1, col = 1;

	if (at == NULL || at < text || at > text + strlen(text)) {
		snprintf(out, n, "somewhere");
		return;
	}
	for (p = text; p < at; p++) {
		col++;
		if (*p == '\n') {
			line++;
			col = 1;
		}
	}
	if (*at == '\0')
		snprintf(out, n, "at the end (line %d): unfinished", line);
	else
		snprintf(out, n, "at line %d, column %d", line, col);
}

static void json_where(const char *text, char *out, size_t n)
{
	json_where_at(text, cJSON_GetErrorPtr(), out, n);
}

/* Anything but white space after the object is an error: a file that
 * two edits left with two objects must not load the first one quietly. */
static int trailing(const char *text, const char *end, char *err,
		    size_t errlen)
{
	char where[64];

	while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
		end++;
	if (*end == '\0')
		return 0;
	json_where_at(text, end, where, sizeof(where));
	ERR("data after the JSON object, %s", where);
}

int conf_parse(struct conf *c, const char *text, char *err, size_t errlen)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithOpts(text, &end, 0), *it;
	char where[64];
	int rc = 0;

	if (root == NULL) {
		json_where(text, where, sizeof(where));
		ERR("not valid JSON: error %s", where);
	}
	if (trailing(text, end, err, errlen) != 0) {
		cJSON_Delete(root);
		return -1;
	}
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		ERR("the top level must be a JSON object");
	}
	cJSON_ArrayForEach(it, root) {
		rc = dup_key(it, err, errlen);
		if (rc == 0)
			rc = parse_key(c, it, err, errlen);
		if (rc != 0)
			break;
	}
	cJSON_Delete(root);
	return rc;
}

/* The whole file, NUL-terminated, in *text. Opened without blocking and
 * read only if it is a regular file: a FIFO (or a device) named as the
 * configuration would otherwise stop the daemon in open() or read() at a
 * reload, with every client waiting. 0, 1 (missing, and may be), -1. */
static int read_file(const char *path, int must_exist, char **text,
		     char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	size_t n = 0;
	char *t;

	if (fd < 0) {
		if (errno == ENOENT && !must_exist)
			return 1;
		ERR("%s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		ERR("%s: %s", path, S_ISDIR(st.st_mode) ? "is a directory" :
		    "not a regular file");
	}
	if (st.st_size > CONF_FILE_MAX || (t = malloc((size_t)st.st_size + 1))
	    == NULL) {
		close(fd);
		ERR("%s: larger than 1 MiB", path);
	}
	/* The size may change under us: read what there is, up to it. */
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, t + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	t[n] = '\0';
	if (memchr(t, '\0', n) != NULL) {
		free(t);
		ERR("%s: contains a NUL byte: not a JSON text file", path);
	}
	*text = t;
	return 0;
}

int conf_load(struct conf *c, const char *path, int must_exist, char *err,
	      size_t errlen)
{
	char *text = NULL;
	int rc = read_file(path, must_exist, &text, err, errlen);

	if (rc != 0)
		return rc;
	rc = conf_parse(c, text, err, errlen);
	free(text);
	if (rc != 0) {
		char tmp[256];

		snprintf(tmp, sizeof(tmp), "%s", err);
		snprintf(err, errlen, "%s: %s", path, tmp);
	}
	return rc;
}

int conf_group(const char *setting, const char *dflt, gid_t *gid,
	       const char *key, char *err, size_t errlen)
{
	int autodef = strcmp(setting, CONF_GROUP_AUTO) == 0;
	const char *name = autodef ? dflt : setting;
	struct group *gr;

	if (name[0] == '\0')
		return 1;
	gr = getgrnam(name);
	if (gr == NULL) {
		if (autodef)
			return 1;
		ERR("%s: no group named \"%s\"", key, name);
	}
	*gid = gr->gr_gid;
	return 0;
}

static const char *group_name(const char *setting, const char *dflt)
{
	gid_t gid;
	char err[128];

	if (strcmp(setting, CONF_GROUP_AUTO) != 0)
		return setting;
	return conf_group(setting, dflt, &gid, "", err, sizeof(err)) == 0 ?
	       dflt : "";
}

/* The JSON value of a field of key k. */
static cJSON *field_json(const struct conf_key *k, const void *f)
{
	char buf[24];
	uint64_t v;

	if (k->type == CONF_T_PATH || k->type == CONF_T_ADDR)
		return cJSON_CreateString(f);
	if (k->type == CONF_T_GROUP)
		return cJSON_CreateString(group_name(f, k->dstr));
	v = num_get(k->type, f);
	switch (k->type) {
	case CONF_T_BOOL:
		return cJSON_CreateBool(v != 0);
	case CONF_T_OCTAL:
		snprintf(buf, sizeof(buf), "%04o", (unsigned)v);
		return cJSON_CreateString(buf);
	case CONF_T_MODE:
		return cJSON_CreateString(vs_mode_name((uint32_t)v));
	case CONF_T_POLICY:
		return cJSON_CreateString(vs_policy_name((uint32_t)v));
	case CONF_T_LEVEL:
		return cJSON_CreateString(level_names[v < 4 ? v : 2]);
	case CONF_T_SIZE:
		/* cJSON writes 15 significant digits: a byte count from 10^15
		 * up would not read back the same. Below, the text is the
		 * same as cJSON's. */
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
		return cJSON_CreateRaw(buf);
	default:
		return cJSON_CreateNumber((double)v);
	}
}

/* A "gpus" entry: the per-GPU keys it sets. */
static void gpu_json(cJSON *e, const struct sched_gpu_cfg *g)
{
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &keys[i];
		const char *f = (const char *)g + k->gpu_off;
		uint64_t v, buf = 0;

		if (k->gpu_bit == 0 || !(g->set & k->gpu_bit))
			continue;
		v = k->gpu_size == sizeof(uint64_t) ? *(const uint64_t *)
		    (const void *)f : *(const uint32_t *)(const void *)f;
		/* The value in the width of the key's type, unscaled. */
		num_set(k->type, &buf, v / k->gpu_scale);
		cJSON_AddItemToObject(e, k->name, field_json(k, &buf));
	}
}

char *conf_to_json(const struct conf *c, const char *socket_path)
{
	cJSON *o = cJSON_CreateObject(), *gpus;
	char uuid[VS_UUID_STR_LEN];
	struct conf eff = *c;
	char *text;

	if (o == NULL)
		return NULL;
	/* The socket as the daemon uses it: the file's, or the default. */
	snprintf(eff.socket, sizeof(eff.socket), "%s", socket_path);
	for (size_t i = 0; i < N_KEYS; i++)
		cJSON_AddItemToObject(o, keys[i].name, field_json(&keys[i],
				      (const char *)&eff + keys[i].off));
	gpus = cJSON_AddObjectToObject(o, "gpus");
	for (size_t i = 0; gpus && i < c->n_gpus; i++) {
		cJSON *e;

		vs_uuid_format(c->gpus[i].uuid, uuid);
		e = cJSON_AddObjectToObject(gpus, uuid);
		if (e != NULL)
			gpu_json(e, &c->gpus[i]);
	}
	text = conf_weights_json(o, c) == 0 && conf_policy_json(o, c) == 0 ?
	       cJSON_Print(o) : NULL;
	cJSON_Delete(o);
	return text;
}

int conf_keep_restart(const struct conf *old, struct conf *nc, char *changed,
		      size_t n)
{
	int count = 0;
	size_t len = 0;

	changed[0] = '\0';
	for (size_t i = 0; i < N_KEYS; i++) {
		const struct conf_key *k = &keys[i];
		char *f = (char *)nc + k->off;
		const char *of = (const char *)old + k->off;

		if (!k->restart)
			continue;
		if (is_text(k->type) ? strcmp(f, of) != 0 :
		    num_get(k->type, f) != num_get(k->type, of)) {
			if (len < n)
				len += (size_t)snprintf(changed + len, n - len,
					"%s%s", count ? ", " : "", k->name);
			count++;
		}
		memcpy(f, of, k->size);
	}
	return count;
}

void conf_sched_cfg(const struct conf *c, struct sched_cfg *out)
{
	memset(out, 0, sizeof(*out));
	out->tq_ms = c->tq_s * 1000u;
	out->mode = c->mode;
	out->capacity = c->capacity;
	out->grace_ms = c->grace_ms;
	out->skip_unresponsive = c->skip_unresponsive;
	out->uid_gpus = c->uid_gpus;
	out->uid_requests = c->uid_requests;
	out->gpus = c->gpus;
	out->n_gpus = c->n_gpus;
	out->policy = c->policy;
	out->min_slice_ms = c->min_slice_ms;
	out->halflife_ms = c->halflife_s * 1000u;
	out->preempt_pct = c->preempt_pct;
	out->preempt_budget_pct = c->preempt_budget_pct;
}
