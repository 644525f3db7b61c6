/*
 * The metrics of classes and caps by user: each capped user's cap
 * (max_share_pct) and what it used of the cap window, and each
 * interactive user's budget used, on the GPUs that have series. At most
 * SCHED_STAT_USERS users per GPU, so the series stay bounded whatever
 * the clients do. Values are ratios of the GPU's time, written from
 * tenths of a percent.
 */
#include <stdio.h>
#include <string.h>

#include "metrics.h"

static const struct {
	const char *name, *help;
} families[] = {
	{ "vshare_user_cap_ratio", "A capped user's cap (max_share_pct): the "
	  "most of the GPU's wall time its programs hold over cap_window_s." },
	{ "vshare_user_cap_used_ratio", "What a capped user's programs held "
	  "of the GPU's wall time over the last cap_window_s." },
	{ "vshare_interactive_budget_used_ratio", "The GPU time a user's "
	  "interactive programs held while others waited, decayed with the "
	  "half-life, as a share of the GPU (against "
	  "interactive_budget_pct)." },
};

/* Family f's value for a member, in tenths of a percent; 0 if it has
 * none (no cap, or not interactive). */
static int member_value(size_t f, const struct sched_member_info *mi,
			uint64_t *v)
{
	if (f == 0 && mi->cap_pct != 0)
		*v = (uint64_t)mi->cap_pct * 10u;
	else if (f == 1 && mi->cap_pct != 0)
		*v = (uint64_t)(mi->cap_used_pct * 10.0 + 0.5);
	else if (f == 2 && mi->klass_want == VS_CLASS_INTERACTIVE)
		*v = (uint64_t)(mi->budget_used_pct * 10.0 + 0.5);
	else
		return 0;
	return 1;
}

/* One GPU's samples of family f: one per user, the first client's. */
static void gpu_samples(struct metrics_buf *b, const struct sched *s,
			size_t f, const uint8_t *uuid, const char *lab)
{
	uint32_t seen[SCHED_STAT_USERS];
	size_t n = 0;

	for (const struct sched_client *c = sched_client_first(s); c != NULL;
	     c = sched_client_next(s, c)) {
		struct sched_client_info ci;
		struct sched_member_info mi;
		uint64_t v;
		size_t k;

		sched_client_info(c, &ci);
		for (size_t j = 0; sched_client_gpu(s, c, j, &mi) == 0; j++) {
			if (memcmp(mi.uuid, uuid, VS_UUID_LEN) != 0 ||
			    !member_value(f, &mi, &v))
				continue;
			for (k = 0; k < n && seen[k] != ci.cred.uid; k++)
				;
			if (k < n || n == SCHED_STAT_USERS)
				continue;
			seen[n++] = ci.cred.uid;
			metrics_printf(b, "%s%s,uid=\"%u\"} %llu.%03llu\n",
				       families[f].name, lab, ci.cred.uid,
				       (unsigned long long)(v / 1000),
				       (unsigned long long)(v % 1000));
		}
	}
}

void metrics_user_classes(struct metrics_buf *b, const struct sched *s,
			  size_t n, const uint8_t *const *uuids,
			  const char *const *labs)
{
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		metrics_printf(b, "# HELP %s ", families[f].name);
		metrics_help_text(b, families[f].help);
		metrics_printf(b, "\n# TYPE %s gauge\n", families[f].name);
		for (size_t i = 0; i < n; i++)
			gpu_samples(b, s, f, uuids[i], labs[i]);
	}
}
