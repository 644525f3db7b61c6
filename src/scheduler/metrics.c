/*
 * The Prometheus text exposition (format 0.0.4) of the scheduler: every
 * family once, its HELP and TYPE lines, then its samples. The families
 * are tables (per-GPU gauges from the views, per-GPU counters from the
 * policy's counters); labels are bounded by construction: GPUs (at most
 * SCHED_MAX_GPUS), users (SCHED_STAT_USERS slots and "other"), and fixed
 * words (kinds, reasons, modes). Nothing here is per client or per pid.
 *
 * Times are counted in ms (us for swap-ins) and written in seconds from
 * those integers, so a sum never loses a count to rounding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

/* ---- text ---- */

static int grow(struct metrics_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->oom)
		return -1;
	while (cap - b->len < more + 1)
		cap *= 2;
	if (cap == b->cap)
		return 0;
	p = realloc(b->p, cap);
	if (p == NULL) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || grow(b, (size_t)n) != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static void put_escaped(struct metrics_buf *b, const char *v, int quote)
{
	for (; *v; v++) {
		if (*v == '\\')
			metrics_printf(b, "\\\\");
		else if (*v == '\n')
			metrics_printf(b, "\\n");
		else if (*v == '"' && quote)
			metrics_printf(b, "\\\"");
		else
			metrics_printf(b, "%c", *v);
	}
}

void metrics_label_value(struct metrics_buf *b, const char *v)
{
	put_escaped(b, v, 1);
}

void metrics_help_text(struct metrics_buf *b, const char *v)
{
	put_escaped(b, v, 0);
}

static void family(struct metrics_buf *b, const char *name, const char *type,
		   const char *help)
{
	metrics_printf(b, "# HELP %s ", name);
	metrics_help_text(b, help);
	metrics_printf(b, "\n# TYPE %s %s\n", name, type);
}

/* A value from an integer count of units: 1 (a count), 1000 (ms) or
 * 1000000 (us), written exactly. */
static void value(struct metrics_buf *b, uint64_t v, uint64_t per_unit)
{
	if (per_unit == 1)
		metrics_printf(b, " %llu\n", (unsigned long long)v);
	else
		metrics_printf(b, " %llu.%0*llu\n",
			       (unsigned long long)(v / per_unit),
			       per_unit == 1000 ? 3 : 6,
			       (unsigned long long)(v % per_unit));
}

/* `name{gpu="...",index="N"` with the closing brace left to the caller,
 * who may add labels. */
static void gpu_labels(struct metrics_buf *b, const char *name,
		       const struct sched_gpu_info *gi)
{
	char uuid[VS_UUID_STR_LEN];

	vs_uuid_format(gi->uuid, uuid);
	metrics_printf(b, "%s{gpu=\"", name);
	metrics_label_value(b, uuid);
	metrics_printf(b, "\",index=\"%u\"", gi->index);
}

/* One label more: `,key="value"`. */
static void label(struct metrics_buf *b, const char *key, const char *v)
{
	metrics_printf(b, ",%s=\"", key);
	metrics_label_value(b, v);
	metrics_printf(b, "\"");
}

/* ---- per-GPU gauges, from the views ---- */

struct gauge {
	const char *name, *help;
	uint64_t (*get)(const struct sched_gpu_info *gi);
	uint64_t per_unit;
};

static uint64_t g_tq(const struct sched_gpu_info *gi) { return gi->tq_ms; }
static uint64_t g_slice(const struct sched_gpu_info *gi) { return gi->slice_ms; }
static uint64_t g_cap(const struct sched_gpu_info *gi) { return gi->capacity; }
static uint64_t g_fp(const struct sched_gpu_info *gi) { return gi->footprint; }
static uint64_t g_held(const struct sched_gpu_info *gi) { return gi->held; }
static uint64_t g_holders(const struct sched_gpu_info *gi) { return gi->n_holders; }
static uint64_t g_waiting(const struct sched_gpu_info *gi) { return gi->n_waiting; }
static uint64_t g_members(const struct sched_gpu_info *gi) { return gi->n_members; }

static const struct gauge gauges[] = {
	{ "vshare_gpu_quantum_seconds", "Time quantum of the GPU.", g_tq, 1000 },
	{ "vshare_gpu_slice_seconds", "Slice in force before a fair "
	  "preemption (min_slice_ms, or longer by measured costs).",
	  g_slice, 1000 },
	{ "vshare_gpu_capacity_bytes", "Memory that co-runners must fit in "
	  "(configured, or the GPU's reported memory).", g_cap, 1 },
	{ "vshare_gpu_footprint_bytes", "Footprint reported by every client "
	  "attached to the GPU.", g_fp, 1 },
	{ "vshare_gpu_held_footprint_bytes", "Footprint of the clients "
	  "holding the GPU.", g_held, 1 },
	{ "vshare_gpu_holders", "Clients holding the GPU now.", g_holders, 1 },
	{ "vshare_gpu_queue_length", "Requests waiting for the GPU now.",
	  g_waiting, 1 },
	{ "vshare_gpu_clients", "Clients attached to the GPU now.",
	  g_members, 1 },
};

static void gpu_modes(struct metrics_buf *b, const struct sched *s)
{
	static const uint32_t modes[] = { VS_MODE_AUTO, VS_MODE_ON, VS_MODE_OFF };
	struct sched_gpu_info gi;

	family(b, "vshare_gpu_mode", "gauge", "Mode of the GPU: 1 for the "
	       "mode in force, 0 for the others.");
	for (size_t i = 0; i < sched_gpu_count(s); i++) {
		sched_gpu_info(sched_gpu_at(s, i), &gi);
		for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
			gpu_labels(b, "vshare_gpu_mode", &gi);
			label(b, "mode", vs_mode_name(modes[k]));
			metrics_printf(b, "}");
			value(b, gi.mode == modes[k], 1);
		}
	}
}

static void gpu_gauges(struct metrics_buf *b, const struct sched *s)
{
	struct sched_gpu_info gi;

	gpu_modes(b, s);
	for (size_t f = 0; f < sizeof(gauges) / sizeof(gauges[0]); f++) {
		family(b, gauges[f].name, "gauge", gauges[f].help);
		for (size_t i = 0; i < sched_gpu_count(s); i++) {
			sched_gpu_info(sched_gpu_at(s, i), &gi);
			gpu_labels(b, gauges[f].name, &gi);
			metrics_printf(b, "}");
			value(b, gauges[f].get(&gi), gauges[f].per_unit);
		}
	}
}

/* ---- per-GPU counters, from the policy's counters ---- */

/* A counter family with an optional label whose values are the indices
 * of an array in struct sched_gpu_stats (names[i] NULL: not written). */
struct counter {
	const char *name, *help;
	size_t off;                 /* of the first uint64_t */
	uint64_t per_unit;
	const char *key;            /* the label, NULL for none */
	const char *const *names;   /* its values by index */
	size_t n;
};

_Static_assert(VS_GRANT_SHARED == 0 && VS_GRANT_EXCLUSIVE == 1 &&
	       VS_DROP_CAPACITY + 1 == SCHED_DROP_FAIR &&
	       SCHED_DROP_FAIR + 1 == SCHED_DROP_N,
	       "the label tables below follow the protocol's numbers");
/* The HELP text of vshare_gpu_held_seconds_total says it. */
_Static_assert(SCHED_STAT_USERS == 64, "users with a series of their own");

static const char *const kind_names[] = { "shared", "exclusive" };
static const char *const drop_names[SCHED_DROP_N] = {
	NULL, "quantum", "idle", "mode", "capacity", "fair",
};

#define ST(f) offsetof(struct sched_gpu_stats, f)
static const struct counter counters[] = {
	{ "vshare_grants_total", "Grants of the GPU, by kind.", ST(grants), 1,
	  "kind", kind_names, 2 },
	{ "vshare_handoffs_total", "Grants to a client that waited for "
	  "holders to release the GPU.", ST(handoffs), 1, NULL, NULL, 1 },
	{ "vshare_drops_total", "Requests to release the GPU, by reason "
	  "(fair: a fair-share preemption).", ST(drops), 1, "reason",
	  drop_names, SCHED_DROP_N },
	{ "vshare_unresponsive_total", "Holders that did not release within "
	  "grace_ms of a drop request.", ST(unresponsive), 1, NULL, NULL, 1 },
	{ "vshare_revocations_total", "Grants taken back from unresponsive "
	  "holders (skip_unresponsive).", ST(revocations), 1, NULL, NULL, 1 },
	{ "vshare_swapins_total", "Swap-ins reported by holders after an "
	  "oversubscribed grant.", ST(swapins), 1, NULL, NULL, 1 },
	{ "vshare_swapin_bytes_total", "Bytes the holders reported "
	  "prefetching to the GPU on oversubscribed grants.", ST(swap_bytes),
	  1, NULL, NULL, 1 },
	{ "vshare_swapin_seconds_total", "Time the holders reported "
	  "prefetching (each report at most a quantum).", ST(swap_us),
	  1000000, NULL, NULL, 1 },
};

static void gpu_counter(struct metrics_buf *b, const struct counter *c,
			const struct sched_gpu_info *gi,
			const struct sched_gpu_stats *st)
{
	const uint64_t *v = (const uint64_t *)(const void *)
			    ((const char *)st + c->off);

	for (size_t k = 0; k < c->n; k++) {
		if (c->key != NULL && c->names[k] == NULL)
			continue;
		gpu_labels(b, c->name, gi);
		if (c->key != NULL)
			label(b, c->key, c->names[k]);
		metrics_printf(b, "}");
		value(b, v[k], c->per_unit);
	}
}

static void gpu_counters(struct metrics_buf *b, const struct sched *s,
			 const struct sched_gpu_stats *st)
{
	struct sched_gpu_info gi;

	for (size_t f = 0; f < sizeof(counters) / sizeof(counters[0]); f++) {
		family(b, counters[f].name, "counter", counters[f].help);
		for (size_t i = 0; i < sched_gpu_count(s); i++) {
			sched_gpu_info(sched_gpu_at(s, i), &gi);
			gpu_counter(b, &counters[f], &gi, &st[i]);
		}
	}
}

static void hist(struct metrics_buf *b, const char *name,
		 const struct sched_gpu_info *gi, const struct sched_hist *h)
{
	uint64_t cum = 0;
	char le[32];

	for (size_t k = 0; k <= SCHED_HIST_N; k++) {
		cum += h->bucket[k];
		if (k < SCHED_HIST_N)
			snprintf(le, sizeof(le), "%g",
				 sched_hist_le_ms[k] / 1000.0);
		else
			snprintf(le, sizeof(le), "+Inf");
		metrics_printf(b, "%s_bucket", name);
		gpu_labels(b, "", gi);
		label(b, "le", le);
		metrics_printf(b, "}");
		value(b, cum, 1);
	}
	metrics_printf(b, "%s_sum", name);
	gpu_labels(b, "", gi);
	metrics_printf(b, "}");
	value(b, h->sum_ms, 1000);
	metrics_printf(b, "%s_count", name);
	gpu_labels(b, "", gi);
	metrics_printf(b, "}");
	value(b, h->count, 1);
}

static void gpu_hists(struct metrics_buf *b, const struct sched *s,
		      const struct sched_gpu_stats *st)
{
	struct sched_gpu_info gi;

	family(b, "vshare_wait_seconds", "histogram", "Time from a request to "
	       "its grant.");
	for (size_t i = 0; i < sched_gpu_count(s); i++) {
		sched_gpu_info(sched_gpu_at(s, i), &gi);
		hist(b, "vshare_wait_seconds", &gi, &st[i].wait);
	}
	family(b, "vshare_hold_seconds", "histogram", "Time from a grant to "
	       "its release (or the holder's departure or revocation).");
	for (size_t i = 0; i < sched_gpu_count(s); i++) {
		sched_gpu_info(sched_gpu_at(s, i), &gi);
		hist(b, "vshare_hold_seconds", &gi, &st[i].hold);
	}
}

/* GPU time per user: users with a slot by uid, the rest as "other";
 * series only for users that held this GPU. */
static void gpu_users(struct metrics_buf *b, const struct sched *s,
		      const struct sched_gpu_stats *st)
{
	const struct sched_stat_users *su = sched_stat_users(s);
	struct sched_gpu_info gi;
	char uid[16];

	family(b, "vshare_gpu_held_seconds_total", "counter", "GPU time held, "
	       "by user (uid; users past the first 64 since the start are "
	       "folded into uid \"other\").");
	for (size_t i = 0; i < sched_gpu_count(s); i++) {
		sched_gpu_info(sched_gpu_at(s, i), &gi);
		for (uint32_t k = 0; k <= SCHED_STAT_USERS; k++) {
			if (st[i].held_ms[k] == 0 || (k < SCHED_STAT_USERS &&
						      k >= su->n))
				continue;
			if (k == SCHED_STAT_OTHER)
				snprintf(uid, sizeof(uid), "other");
			else
				snprintf(uid, sizeof(uid), "%u", su->uid[k]);
			gpu_labels(b, "vshare_gpu_held_seconds_total", &gi);
			label(b, "uid", uid);
			metrics_printf(b, "}");
			value(b, st[i].held_ms[k], 1000);
		}
	}
}

/* ---- the daemon ---- */

#define METRICS_NAME(name, help) #name,
static const char *const refusal_names[] = { METRICS_REFUSALS(METRICS_NAME) };
#undef METRICS_NAME

static void daemon_part(struct metrics_buf *b, const struct sched *s,
			const struct metrics_daemon *d)
{
	family(b, "vshare_build_info", "gauge", "The running vshare and its "
	       "protocol version.");
	metrics_printf(b, "vshare_build_info{version=\"");
	metrics_label_value(b, d->version ? d->version : "");
	metrics_printf(b, "\",protocol=\"%u\"} 1\n", VS_PROTO_VERSION);
	family(b, "vshare_connections", "gauge", "Peer connections open now.");
	metrics_printf(b, "vshare_connections");
	value(b, d->conns, 1);
	family(b, "vshare_connections_total", "counter", "Peer connections "
	       "accepted.");
	metrics_printf(b, "vshare_connections_total");
	value(b, d->conns_total, 1);
	family(b, "vshare_clients", "gauge", "Registered clients (programs "
	       "under the shim) now.");
	metrics_printf(b, "vshare_clients");
	value(b, sched_client_count(s), 1);
	family(b, "vshare_refusals_total", "counter", "Peers and requests "
	       "refused, by reason.");
	for (size_t k = 0; k < METRICS_REFUSE__N; k++) {
		metrics_printf(b, "vshare_refusals_total{reason=\"%s\"}",
			       refusal_names[k]);
		value(b, d->refused[k], 1);
	}
}

char *metrics_render(const struct sched *s, const struct metrics_daemon *d,
		     size_t *len)
{
	struct metrics_buf b = { NULL, 0, 0, 0 };
	size_t n = sched_gpu_count(s);
	struct sched_gpu_stats *st = calloc(n ? n : 1, sizeof(*st));

	if (st == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++)
		sched_gpu_stats(s, sched_gpu_at(s, i), &st[i]);
	daemon_part(&b, s, d);
	gpu_gauges(&b, s);
	gpu_counters(&b, s, st);
	gpu_hists(&b, s, st);
	gpu_users(&b, s, st);
	free(st);
	if (b.oom || grow(&b, 0) != 0) {
		free(b.p);
		return NULL;
	}
	b.p[b.len] = '\0';
	*len = b.len;
	return b.p;
}
