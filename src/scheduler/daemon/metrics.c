/*
 * The Prometheus text exposition (format 0.0.4) of the scheduler: every
 * family once, its HELP and TYPE lines, then its samples. The families
 * are tables (per-GPU gauges from the views, per-GPU counters from the
 * policy's counters); labels are bounded by construction: GPUs that NVML
 * or the configuration vouch for, and the first metrics_gpus others in
 * the order of first attach (past those, a made-up UUID adds no series:
 * such GPUs are only counted, in vshare_gpus_unverified), users
 * (SCHED_STAT_USERS slots and "other"), and fixed words (kinds, reasons,
 * modes). Nothing here is per client or per pid.
 *
 * A render may be large (hundreds of GPUs): each GPU's label prefix is
 * built once per render and copied, and nothing is formatted a character
 * at a time. metrics_cached serves every reader from one render a second.
 *
 * Times are counted in ms (us for swap-ins) and written in seconds from
 * those integers, so a sum never loses a count to rounding.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static void family(struct metrics_buf *b, const char *name, const char *type,
		   const char *help)
{
	metrics_put_str(b, "# HELP ");
	metrics_put_str(b, name);
	metrics_put(b, " ", 1);
	metrics_help_text(b, help);
	metrics_put_str(b, "\n# TYPE ");
	metrics_put_str(b, name);
	metrics_put(b, " ", 1);
	metrics_put_str(b, type);
	metrics_put(b, "\n", 1);
}

/* A value from an integer count of units: 1 (a count), 1000 (ms) or
 * 1000000 (us), written exactly. */
static void value(struct metrics_buf *b, uint64_t v, uint64_t per_unit)
{
	char t[48];
	int n;

	if (per_unit == 1)
		n = snprintf(t, sizeof(t), " %llu\n", (unsigned long long)v);
	else
		n = snprintf(t, sizeof(t), " %llu.%0*llu\n",
			     (unsigned long long)(v / per_unit),
			     per_unit == 1000 ? 3 : 6,
			     (unsigned long long)(v % per_unit));
	metrics_put(b, t, (size_t)n);
}

/* ---- one render ---- */

/* What a render reads of one GPU, taken once: its views, its counters,
 * and its label prefix `{gpu="...",index="N"` (the closing brace left to
 * the caller, who may add labels). */
struct row {
	struct sched_gpu_info gi;
	struct sched_gpu_stats st;
	uint64_t total_used_pm;     /* the interactive class's use, per mille */
	char lab[96];
	size_t lab_len;
};

struct render {
	struct metrics_buf b;
	const struct sched *s;
	struct row *rows;           /* the GPUs with series */
	size_t n, unverified;
	char le[SCHED_HIST_N + 1][16];
};

static void row_init(struct row *r, const struct sched *s,
		     const struct sched_gpu *g)
{
	char uuid[VS_UUID_STR_LEN];
	int n;

	sched_gpu_info(g, &r->gi);
	sched_gpu_stats(s, g, &r->st);
	r->total_used_pm = (uint64_t)(sched_gpu_total_used(s, g) * 10.0 + 0.5);
	/* Hex digits and dashes: nothing to escape. */
	vs_uuid_format(r->gi.uuid, uuid);
	n = snprintf(r->lab, sizeof(r->lab), "{gpu=\"%s\",index=\"%u\"",
		     uuid, r->gi.index);
	r->lab_len = n > 0 && (size_t)n < sizeof(r->lab) ? (size_t)n : 0;
}

/* `name{gpu="...",index="N"`, the brace left open. */
static void gpu_labels(struct metrics_buf *b, const char *name,
		       const struct row *r)
{
	metrics_put_str(b, name);
	metrics_put(b, r->lab, r->lab_len);
}

/* One label more: `,key="value"`. */
static void label(struct metrics_buf *b, const char *key, const char *v)
{
	metrics_put(b, ",", 1);
	metrics_put_str(b, key);
	metrics_put(b, "=\"", 2);
	metrics_label_value(b, v);
	metrics_put(b, "\"", 1);
}

static void close_value(struct metrics_buf *b, uint64_t v, uint64_t per_unit)
{
	metrics_put(b, "}", 1);
	value(b, v, per_unit);
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
	  "(configured, or the GPU's reported memory); no series while "
	  "neither is known.", g_cap, 1 },
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

static void gpu_modes(struct render *r)
{
	static const uint32_t modes[] = { VS_MODE_AUTO, VS_MODE_ON, VS_MODE_OFF };

	family(&r->b, "vshare_gpu_mode", "gauge", "Mode of the GPU: 1 for the "
	       "mode in force, 0 for the others.");
	for (size_t i = 0; i < r->n; i++)
		for (size_t k = 0; k < sizeof(modes) / sizeof(modes[0]); k++) {
			gpu_labels(&r->b, "vshare_gpu_mode", &r->rows[i]);
			label(&r->b, "mode", vs_mode_name(modes[k]));
			close_value(&r->b, r->rows[i].gi.mode == modes[k], 1);
		}
}

static void gpu_gauges(struct render *r)
{
	gpu_modes(r);
	for (size_t f = 0; f < sizeof(gauges) / sizeof(gauges[0]); f++) {
		family(&r->b, gauges[f].name, "gauge", gauges[f].help);
		for (size_t i = 0; i < r->n; i++) {
			uint64_t v = gauges[f].get(&r->rows[i].gi);

			/* A capacity of 0 is one not known yet (no NVML, none
			 * configured, no client's report): no series, since 0
			 * would read as a GPU with no room. */
			if (v == 0 && gauges[f].get == g_cap)
				continue;
			gpu_labels(&r->b, gauges[f].name, &r->rows[i]);
			close_value(&r->b, v, gauges[f].per_unit);
		}
	}
}

/* The interactive class as a whole on each GPU: its bound and its use,
 * beside each user's budget (vshare_interactive_budget_used_ratio). */
static void class_total(struct render *r)
{
	family(&r->b, "vshare_interactive_total_ratio", "gauge", "The share "
	       "of the GPU the interactive class as a whole may hold while "
	       "others wait (interactive_total_pct).");
	for (size_t i = 0; i < r->n; i++) {
		gpu_labels(&r->b, "vshare_interactive_total_ratio", &r->rows[i]);
		close_value(&r->b, r->rows[i].gi.total_pct * 10u, 1000);
	}
	family(&r->b, "vshare_interactive_total_used_ratio", "gauge", "The "
	       "share of the GPU every user's interactive programs held while "
	       "others waited, over the half-life (a sliding window), summed "
	       "over the holders; at vshare_interactive_total_ratio they count "
	       "as batch.");
	for (size_t i = 0; i < r->n; i++) {
		gpu_labels(&r->b, "vshare_interactive_total_used_ratio",
			   &r->rows[i]);
		close_value(&r->b, r->rows[i].total_used_pm, 1000);
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
	       SCHED_DROP_TOTAL + 1 == SCHED_DROP_N,
	       "the label tables below follow the protocol's numbers");
/* The HELP text of vshare_gpu_held_seconds_total says it. */
_Static_assert(SCHED_STAT_USERS == 64, "users with a series of their own");

static const char *const kind_names[] = { "shared", "exclusive" };
static const char *const class_names[SCHED_CLASS_N] = { "batch",
							 "interactive" };
static const char *const drop_names[SCHED_DROP_N] = {
	NULL, "quantum", "idle", "mode", "capacity", "fair", "class", "budget",
	"cap", "class_total",
};

#define ST(f) offsetof(struct sched_gpu_stats, f)
static const struct counter counters[] = {
	{ "vshare_grants_total", "Grants of the GPU, by kind.", ST(grants), 1,
	  "kind", kind_names, 2 },
	{ "vshare_class_grants_total", "Grants of the GPU, by the class the "
	  "holder was granted in.", ST(class_grants), 1, "class", class_names,
	  SCHED_CLASS_N },
	{ "vshare_class_held_seconds_total", "GPU time held, by the class in "
	  "force while it was held (an interactive holder past its budget "
	  "counts as batch from then on). Summed over the holders.",
	  ST(class_held_ms), 1000, "class", class_names, SCHED_CLASS_N },
	{ "vshare_handoffs_total", "Grants to a client that waited for "
	  "holders to release the GPU.", ST(handoffs), 1, NULL, NULL, 1 },
	{ "vshare_lock_takes_total", "Grants a client took through the lock "
	  "page (a free GPU, no round trip).", ST(took), 1, NULL, NULL, 1 },
	{ "vshare_lock_resets_total", "Open lock page words closed that held "
	  "neither their opening nor an idle client's mark for it (a taker "
	  "gone, or junk).", ST(lock_resets), 1, NULL, NULL, 1 },
	{ "vshare_lock_tampered_total", "Closed lock page words found written "
	  "(a value written over a held or closed GPU's word: it takes "
	  "nothing).",
	  ST(lock_tampered), 1, NULL, NULL, 1 },
	{ "vshare_lock_took_refused_total", "TOOK messages refused: the "
	  "client's token was not found in the word (a take nobody saw, or "
	  "none).", ST(took_refused), 1, NULL, NULL, 1 },
	{ "vshare_drops_total", "Requests to release the GPU, by reason "
	  "(fair: a fair-share preemption).", ST(drops), 1, "reason",
	  drop_names, SCHED_DROP_N },
	{ "vshare_unresponsive_total", "Holders that did not release within "
	  "grace_ms of a drop request.", ST(unresponsive), 1, NULL, NULL, 1 },
	{ "vshare_revocations_total", "Grants taken back from unresponsive "
	  "holders (skip_unresponsive).", ST(revocations), 1, NULL, NULL, 1 },
	{ "vshare_swapins_total", "Swap-ins reported by holders after an "
	  "oversubscribed grant (one per grant).", ST(swapins), 1, NULL, NULL,
	  1 },
	{ "vshare_swapin_bytes_total", "Bytes the holders reported "
	  "prefetching to the GPU on oversubscribed grants (each report at "
	  "most 16 TiB).", ST(swap_bytes), 1, NULL, NULL, 1 },
	{ "vshare_swapin_seconds_total", "Time the holders reported "
	  "prefetching (each report at most a quantum).", ST(swap_us),
	  1000000, NULL, NULL, 1 },
	{ "vshare_swapouts_total", "Swap-outs reported by holders: their "
	  "managed memory prefetched to the host at a release "
	  "(VSHARE_SWAP_OUT=eager).", ST(swapouts), 1, NULL, NULL, 1 },
	{ "vshare_swapout_bytes_total", "Bytes the holders reported "
	  "prefetching to the host at their releases.", ST(swapout_bytes), 1,
	  NULL, NULL, 1 },
	{ "vshare_swapout_seconds_total", "Time the holders reported "
	  "prefetching to the host at their releases.", ST(swapout_us),
	  1000000, NULL, NULL, 1 },
};

static void gpu_counter(struct metrics_buf *b, const struct counter *c,
			const struct row *r)
{
	const uint64_t *v = (const uint64_t *)(const void *)
			    ((const char *)&r->st + c->off);

	for (size_t k = 0; k < c->n; k++) {
		if (c->key != NULL && c->names[k] == NULL)
			continue;
		gpu_labels(b, c->name, r);
		if (c->key != NULL)
			label(b, c->key, c->names[k]);
		close_value(b, v[k], c->per_unit);
	}
}

static void gpu_counters(struct render *r)
{
	for (size_t f = 0; f < sizeof(counters) / sizeof(counters[0]); f++) {
		family(&r->b, counters[f].name, "counter", counters[f].help);
		for (size_t i = 0; i < r->n; i++)
			gpu_counter(&r->b, &counters[f], &r->rows[i]);
	}
}

/* `name_suffix{gpu="...",index="N"`. */
static void hist_labels(struct metrics_buf *b, const char *name,
			const char *suffix, const struct row *row)
{
	metrics_put_str(b, name);
	gpu_labels(b, suffix, row);
}

/* One histogram per class. */
static void hist(struct render *r, const char *name, const struct row *row,
		 const struct sched_hist *hs)
{
	for (size_t c = 0; c < SCHED_CLASS_N; c++) {
		const struct sched_hist *h = &hs[c];
		uint64_t cum = 0;

		for (size_t k = 0; k <= SCHED_HIST_N; k++) {
			cum += h->bucket[k];
			hist_labels(&r->b, name, "_bucket", row);
			label(&r->b, "class", class_names[c]);
			label(&r->b, "le", r->le[k]);
			close_value(&r->b, cum, 1);
		}
		hist_labels(&r->b, name, "_sum", row);
		label(&r->b, "class", class_names[c]);
		close_value(&r->b, h->sum_ms, 1000);
		hist_labels(&r->b, name, "_count", row);
		label(&r->b, "class", class_names[c]);
		close_value(&r->b, h->count, 1);
	}
}

static void gpu_hists(struct render *r)
{
	family(&r->b, "vshare_wait_seconds", "histogram", "Time from a request "
	       "to its grant; only waits that ended in a grant (a request "
	       "withdrawn, or whose client left, is not counted).");
	for (size_t i = 0; i < r->n; i++)
		hist(r, "vshare_wait_seconds", &r->rows[i], r->rows[i].st.wait);
	family(&r->b, "vshare_hold_seconds", "histogram", "Time from a grant "
	       "to its release (or the holder's departure or revocation).");
	for (size_t i = 0; i < r->n; i++)
		hist(r, "vshare_hold_seconds", &r->rows[i], r->rows[i].st.hold);
}

/* GPU time per user: users with a slot by uid, the rest as "other";
 * series only for users with time on this GPU. */
static const struct {
	const char *name, *help;
	size_t off;
} user_times[] = {
	{ "vshare_gpu_held_seconds_total", "GPU time held, by user (uid; "
	  "users past the first 64 since the start are folded into uid "
	  "\"other\"). Summed over the holders: where several hold a GPU "
	  "at once (shared grants), their times add up, so a GPU's sum may "
	  "exceed the time elapsed.", ST(held_ms) },
	{ "vshare_gpu_busy_seconds_total", "Of the GPU time held, what the "
	  "holders' shims reported busy: calls in flight, or submissions "
	  "less than the program's idle gap apart. By user, as "
	  "vshare_gpu_held_seconds_total.", ST(busy_ms) },
	{ "vshare_gpu_idle_held_seconds_total", "Of the GPU time held, what "
	  "the holders' shims reported idle: held with nothing in flight "
	  "and no submission for the idle gap. By user, as "
	  "vshare_gpu_held_seconds_total.", ST(idle_ms) },
};

static void gpu_users(struct render *r)
{
	const struct sched_stat_users *su = sched_stat_users(r->s);
	char uid[16];

	for (size_t f = 0; f < sizeof(user_times) / sizeof(user_times[0]); f++) {
		family(&r->b, user_times[f].name, "counter", user_times[f].help);
		for (size_t i = 0; i < r->n; i++) {
			const uint64_t *v = (const uint64_t *)(const void *)
				((const char *)&r->rows[i].st + user_times[f].off);

			for (uint32_t k = 0; k <= SCHED_STAT_USERS; k++) {
				if (v[k] == 0 || (k < SCHED_STAT_USERS &&
						  k >= su->n))
					continue;
				if (k == SCHED_STAT_OTHER)
					snprintf(uid, sizeof(uid), "other");
				else
					snprintf(uid, sizeof(uid), "%u",
						 su->uid[k]);
				gpu_labels(&r->b, user_times[f].name,
					   &r->rows[i]);
				label(&r->b, "uid", uid);
				close_value(&r->b, v[k], 1000);
			}
		}
	}
}

static void user_classes(struct render *r)
{
	const uint8_t **uuids = calloc(r->n ? r->n : 1, sizeof(*uuids));
	const char **labs = calloc(r->n ? r->n : 1, sizeof(*labs));
	int *nvml = calloc(r->n ? r->n : 1, sizeof(*nvml));

	if (uuids == NULL || labs == NULL || nvml == NULL) {
		r->b.oom = 1;
	} else {
		for (size_t i = 0; i < r->n; i++) {
			uuids[i] = r->rows[i].gi.uuid;
			labs[i] = r->rows[i].lab;
			nvml[i] = r->rows[i].gi.use_known;
		}
		metrics_user_classes(&r->b, r->s, r->n, uuids, labs);
		metrics_user_use(&r->b, r->s, r->n, uuids, labs, nvml);
	}
	free(uuids);
	free(labs);
	free(nvml);
}

/* ---- the daemon ---- */

#define METRICS_NAME(name, help) #name,
static const char *const refusal_names[] = { METRICS_REFUSALS(METRICS_NAME) };
#undef METRICS_NAME

static void one(struct metrics_buf *b, const char *name, const char *type,
		const char *help, uint64_t v)
{
	family(b, name, type, help);
	metrics_put_str(b, name);
	value(b, v, 1);
}

/* Programs that ran unshared before they connected, as they told. */
static void unshared(struct render *r)
{
	const struct sched_unshared_stats *u = sched_unshared_stats(r->s);

	family(&r->b, "vshare_unshared_runs_total", "counter", "Programs that "
	       "told, when they connected, that they had run unshared (their "
	       "GPU work not gated), by reason: absent (no scheduler could be "
	       "reached) or lost (their connection had ended).");
	for (uint32_t k = VS_UNSHARED_ABSENT; k <= VS_UNSHARED_MAX; k++) {
		metrics_printf(&r->b, "vshare_unshared_runs_total{reason=\"%s\"}",
			       vs_unshared_name(k));
		value(&r->b, u->runs[k], 1);
	}
	family(&r->b, "vshare_unshared_seconds_total", "counter", "How long "
	       "those programs ran unshared, by reason.");
	for (uint32_t k = VS_UNSHARED_ABSENT; k <= VS_UNSHARED_MAX; k++) {
		metrics_printf(&r->b, "vshare_unshared_seconds_total{reason=\"%s\"}",
			       vs_unshared_name(k));
		value(&r->b, u->ms[k], 1000);
	}
}

static void daemon_part(struct render *r, const struct metrics_daemon *d)
{
	struct metrics_buf *b = &r->b;

	family(b, "vshare_build_info", "gauge", "The running vshare and its "
	       "protocol version.");
	metrics_put_str(b, "vshare_build_info{version=\"");
	metrics_label_value(b, d->version ? d->version : "");
	metrics_printf(b, "\",protocol=\"%u\"} 1\n", VS_PROTO_VERSION);
	one(b, "vshare_connections_open", "gauge", "Peer connections open "
	    "now.", d->conns);
	one(b, "vshare_connections_total", "counter", "Peer connections "
	    "accepted.", d->conns_total);
	one(b, "vshare_clients", "gauge", "Registered clients (programs "
	    "under the shim) now.", sched_client_count(r->s));
	one(b, "vshare_gpus_unverified", "gauge", "GPUs attached that neither "
	    "NVML nor the configuration's \"gpus\" vouch for, past the "
	    "first metrics_gpus of them: they have no series of their own.",
	    r->unverified);
	family(b, "vshare_refusals_total", "counter", "Peers and requests "
	       "refused, by reason.");
	for (size_t k = 0; k < METRICS_REFUSE__N; k++) {
		metrics_put_str(b, "vshare_refusals_total{reason=\"");
		metrics_put_str(b, refusal_names[k]);
		metrics_put(b, "\"}", 2);
		value(b, d->refused[k], 1);
	}
	unshared(r);
	metrics_process(b);
}

static int render_init(struct render *r, const struct sched *s,
		       const struct metrics_daemon *d)
{
	size_t n = sched_gpu_count(s), others = 0;

	memset(r, 0, sizeof(*r));
	r->s = s;
	r->rows = calloc(n ? n : 1, sizeof(*r->rows));
	if (r->rows == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct sched_gpu *g = sched_gpu_at(s, i);

		/* The table keeps its order (a record is reused in place,
		 * and only once SCHED_MAX_GPUS are made), so the same GPUs
		 * keep their series from one render to the next. */
		if (sched_gpu_vouched(s, g) || others++ < d->gpus_max)
			row_init(&r->rows[r->n++], s, g);
		else
			r->unverified++;
	}
	for (size_t k = 0; k < SCHED_HIST_N; k++)
		snprintf(r->le[k], sizeof(r->le[k]), "%g",
			 sched_hist_le_ms[k] / 1000.0);
	snprintf(r->le[SCHED_HIST_N], sizeof(r->le[0]), "+Inf");
	return 0;
}

static void named(struct metrics_buf *b, const struct sched *s,
		  const struct names *names)
{
	size_t n = 0;
	char *t = metrics_names(s, names, &n);

	if (t == NULL)
		b->oom = 1;
	else
		metrics_put(b, t, n);
	free(t);
}

char *metrics_render(const struct sched *s, const struct metrics_daemon *d,
		     size_t *len)
{
	struct render r;

	if (render_init(&r, s, d) != 0)
		return NULL;
	daemon_part(&r, d);
	gpu_gauges(&r);
	class_total(&r);
	gpu_counters(&r);
	gpu_hists(&r);
	if (!d->totals_only) {
		gpu_users(&r);
		user_classes(&r);
		named(&r.b, s, d->names);
	}
	free(r.rows);
	if (r.b.oom || metrics_grow(&r.b, 0) != 0) {
		free(r.b.p);
		return NULL;
	}
	r.b.p[r.b.len] = '\0';
	*len = r.b.len;
	return r.b.p;
}

/* ---- the cache ---- */

char *metrics_cached(struct metrics_cache *c, const struct sched *s,
		     const struct metrics_daemon *d, uint64_t now_ms,
		     size_t *len)
{
	char *copy;

	if (c->text == NULL || now_ms >= c->at + METRICS_CACHE_MS ||
	    now_ms < c->at) {
		size_t n = 0;
		char *t = metrics_render(s, d, &n);

		if (t == NULL)
			return NULL;
		free(c->text);
		c->text = t;
		c->len = n;
		c->at = now_ms;
	}
	copy = malloc(c->len + 1);
	if (copy == NULL)
		return NULL;
	memcpy(copy, c->text, c->len + 1);
	*len = c->len;
	return copy;
}

void metrics_cache_free(struct metrics_cache *c)
{
	free(c->text);
	c->text = NULL;
}
