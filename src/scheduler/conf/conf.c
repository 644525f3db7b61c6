/*
 * Configuration: one table of keys (CONF_KEYS), from which come the
 * defaults, the parser with its range checks (conf_parse.c),
 * --print-config, what a reload keeps and the policy's settings. Unknown
 * keys are errors, so a typo does not silently keep a default.
 */
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "conf_int.h"
#include "size.h"
#include "log.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

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
 * interactive to cap_window_s are the classes and caps: whether users
 * may have the interactive class unless their policy entry says (its
 * "class"), the share of a GPU their interactive programs may hold while
 * others wait before they count as batch (20%: a notebook's bursts fit
 * many times over, a program that computes non-stop as interactive gets
 * a fifth of the GPU with priority, and then its fair share), and the
 * window over which a user's max_share_pct is counted (10 s: short
 * enough that a capped user waits seconds, not minutes).
 * interactive_total_pct bounds the class as a whole on a GPU, every
 * user together, over the budget's window (50%: batch work that waits
 * keeps at least half of the GPU, however many users or uids claim the
 * class, while two users at their whole budget, or notebooks by the
 * dozen at a few percent each, never reach it).
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
X(capacity,          MEM,   NUM(0),                     0,           JSON_INT_MAX, "bytes",   GPU(capacity, SCHED_GCFG_CAP, 1), LIVE)    \
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
X(interactive,       BOOL,  NUM(1),                     0,           0,            "",        GLOBAL,                           LIVE)    \
X(interactive_budget_pct, UINT, NUM(20),                1,           100,          "%",       GLOBAL,                           LIVE)    \
X(interactive_total_pct, UINT, NUM(50),                 1,           100,          "%",       GPU(total_pct, SCHED_GCFG_TOTAL, 1), LIVE) \
X(cap_window_s,      UINT,  NUM(10),                    1,           3600,         "s",       GLOBAL,                           LIVE)    \
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

const struct conf_key *conf_key_find(const char *name)
{
	for (size_t i = 0; i < N_KEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

/* A number-like field (every type but the strings) by its type's width. */
static uint64_t num_get(int type, const void *f)
{
	if (type == CONF_T_SIZE || type == CONF_T_MEM)
		return *(const uint64_t *)f;
	if (type == CONF_T_BOOL || type == CONF_T_LEVEL)
		return (uint64_t)*(const int *)f;
	return *(const uint32_t *)f;
}

void conf_num_set(int type, void *f, uint64_t v)
{
	if (type == CONF_T_SIZE || type == CONF_T_MEM)
		*(uint64_t *)f = v;
	else if (type == CONF_T_BOOL || type == CONF_T_LEVEL)
		*(int *)f = (int)v;
	else
		*(uint32_t *)f = (uint32_t)v;
}

int conf_is_text(int type)
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
			conf_num_set(k->type, f, k->dnum);
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
	case CONF_T_MEM:
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
		conf_num_set(k->type, &buf, v / k->gpu_scale);
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
		if (conf_is_text(k->type) ? strcmp(f, of) != 0 :
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
	out->budget_pct = c->interactive_budget_pct;
	out->total_pct = c->interactive_total_pct;
	out->cap_window_ms = c->cap_window_s * 1000u;
}
