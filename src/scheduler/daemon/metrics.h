/*
 * The scheduler's metrics in the Prometheus text exposition format
 * (version 0.0.4), rendered from the policy's counters and views and from
 * the daemon's own connection counters. One text for both readers: the
 * HTTP endpoint (http.c) and VS_MSG_METRICS (vsharectl metrics).
 * docs/operations.md ("Metrics") lists every metric.
 */
#ifndef VSHARE_METRICS_H
#define VSHARE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "names.h"
#include "sched_policy.h"

/* Why the daemon refused a peer or a request: the `reason` label of
 * vshare_refusals_total, one row each (name, what it counts). */
#define METRICS_REFUSALS(X) \
	X(max_clients,  "a connection past max_clients") \
	X(uid_conns,    "a connection past its uid's uid_conns") \
	X(uid_gpus,     "an attach past its uid's uid_gpus") \
	X(client_gpus,  "an attach past the GPUs one client may attach") \
	X(gpu_table,    "an attach of a new GPU with the GPU table full") \
	X(uid_requests, "a request past its uid's uid_requests") \
	X(protocol,     "a malformed frame (the connection is closed)") \
	X(version,      "a peer of an unknown protocol version") \
	X(deadline,     "a peer past hello_ms or frame_ms") \
	X(not_admin,    "an admin request from a peer that is not an admin") \
	X(cooldown,     "a connection of a uid cooling down after a burst " \
			"of refusals (closed at once)") \
	X(evicted,      "a connection of the uid with the most connections, " \
			"closed so that another uid's connection fits in " \
			"max_clients")

#define METRICS_ENUM(name, help) METRICS_REFUSE_##name,
enum metrics_refusal { METRICS_REFUSALS(METRICS_ENUM) METRICS_REFUSE__N };
#undef METRICS_ENUM

/* What the daemon counts beside the policy: plain data, kept by srv.c and
 * conn.c, read by the renderer. */
struct metrics_daemon {
	const char *version;        /* of vshare */
	uint64_t conns;             /* open now */
	uint64_t conns_total;       /* accepted since the start */
	uint64_t refused[METRICS_REFUSE__N];
	uint32_t gpus_max;          /* metrics_gpus: series of GPUs that are
				     * not vouched for, first attached first */
	const struct names *names;  /* labels' names (names.h), or NULL */
	int totals_only;            /* leave out the series by uid and by
				     * client (named labels): what anyone
				     * may read when the status is private */
};

/* The whole exposition text, NUL-terminated, malloc'd (*len without the
 * NUL); NULL when out of memory. */
char *metrics_render(const struct sched *s, const struct metrics_daemon *d,
		     size_t *len);

/* One render served to every reader for METRICS_CACHE_MS: a scrape then
 * costs the loop a copy, however many scrapers (HTTP, VS_MSG_METRICS)
 * there are and however often they ask. Prometheus scrapes every 15 s or
 * so; a second is fresh enough for any of them, and bounds the renders
 * to one a second. */
#define METRICS_CACHE_MS 1000u
struct metrics_cache {
	char *text;                 /* NULL: none yet */
	size_t len;
	uint64_t at;                /* when it was rendered, ms */
};
/* A malloc'd copy (NUL-terminated, *len without the NUL) of the cached
 * text, rendered anew when it is METRICS_CACHE_MS old or more; NULL
 * when out of memory. */
char *metrics_cached(struct metrics_cache *c, const struct sched *s,
		     const struct metrics_daemon *d, uint64_t now_ms,
		     size_t *len);
void metrics_cache_free(struct metrics_cache *c);

/* A growing text. After a failed allocation it stays as it was and
 * `oom` is set; every later append is a no-op. */
struct metrics_buf {
	char *p;
	size_t len, cap;
	int oom;
};
/* metrics_text.c: room for `more` bytes and a NUL (0, or -1 and oom
 * set); n bytes, or a string, appended. */
int  metrics_grow(struct metrics_buf *b, size_t more);
void metrics_put(struct metrics_buf *b, const char *p, size_t n);
void metrics_put_str(struct metrics_buf *b, const char *v);
void metrics_printf(struct metrics_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A label value as the format wants it: backslash, double quote and
 * line feed escaped. */
void metrics_label_value(struct metrics_buf *b, const char *v);
/* A HELP text: backslash and line feed escaped. */
void metrics_help_text(struct metrics_buf *b, const char *v);
/* metrics_users.c: each capped user's cap and what it used of the cap
 * window, and each interactive user's budget used, by uid on the GPUs
 * that have series: n of them, each its UUID and its label prefix
 * (`{gpu="...",index="N"`). At most SCHED_STAT_USERS users per GPU. */
void metrics_user_classes(struct metrics_buf *b, const struct sched *s,
			  size_t n, const uint8_t *const *uuids,
			  const char *const *labs);

/* metrics_use.c: each user's device memory (NVML), managed footprint
 * and SM utilisation (NVML) on the GPUs that have series, as
 * metrics_user_classes; nvml[i]: NVML gave GPU i's processes. */
void metrics_user_use(struct metrics_buf *b, const struct sched *s, size_t n,
		      const uint8_t *const *uuids, const char *const *labs,
		      const int *nvml);
/* metrics_proc.c: the daemon's own process_* series, from /proc/self
 * (as Prometheus's client libraries write them). */
void metrics_process(struct metrics_buf *b);

/* metrics_names.c: the series of named clients (vshare_named_*), as
 * malloc'd text (*len its length); NULL when out of memory. */
char *metrics_names(const struct sched *s, const struct names *names,
		    size_t *len);

#endif
