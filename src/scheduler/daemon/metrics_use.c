/*
 * The metrics of use by user, on the GPUs that have series: the device
 * memory the user's programs use there as NVML reports it per process,
 * their managed footprint, and their SM utilisation (NVML's per-process
 * samples, summed over the user's processes: a ratio of one GPU). Users
 * as in vshare_gpu_held_seconds_total: the first SCHED_STAT_USERS to
 * register have a uid of their own, the rest are "other", so that the
 * series stay bounded whatever the clients do. NVML's figures have
 * series only on GPUs NVML gave a process list for.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

struct acc {
	uint64_t mem, managed, sm;
	int seen, sm_seen;
};

static const struct {
	const char *name, *help;
	int nvml;                   /* only where NVML gave the figures */
} families[] = {
	{ "vshare_user_gpu_memory_bytes", "Device memory the user's programs "
	  "use on the GPU, as NVML reports it per process.", 1 },
	{ "vshare_user_managed_bytes", "Managed memory of the user's programs "
	  "on the GPU (their reported footprints).", 0 },
	{ "vshare_user_sm_utilization_ratio", "SM utilisation of the user's "
	  "programs on the GPU, from NVML's per-process samples of the last "
	  "second or so, summed over its processes (1: the whole GPU).", 1 },
};

/* One GPU's sums by user slot. */
static void sums(const struct sched *s, const uint8_t *uuid, struct acc *a)
{
	memset(a, 0, (SCHED_STAT_USERS + 1) * sizeof(*a));
	for (const struct sched_client *c = sched_client_first(s); c != NULL;
	     c = sched_client_next(s, c)) {
		struct sched_client_info ci;
		struct sched_member_info mi;

		sched_client_info(c, &ci);
		for (size_t j = 0; sched_client_gpu(s, c, j, &mi) == 0; j++) {
			struct acc *u = &a[ci.slot <= SCHED_STAT_USERS ?
					   ci.slot : SCHED_STAT_OTHER];

			if (memcmp(mi.uuid, uuid, VS_UUID_LEN) != 0)
				continue;
			u->seen = 1;
			u->managed += mi.managed;
			u->mem += mi.dev_mem;
			if (mi.use_known && mi.sm_pct >= 0) {
				u->sm += (uint64_t)mi.sm_pct;
				u->sm_seen = 1;
			}
		}
	}
}

static void sample(struct metrics_buf *b, size_t f, const char *lab,
		   const char *uid, const struct acc *u)
{
	if (f == 0)
		metrics_printf(b, "%s%s,uid=\"%s\"} %llu\n", families[f].name,
			       lab, uid, (unsigned long long)u->mem);
	else if (f == 1)
		metrics_printf(b, "%s%s,uid=\"%s\"} %llu\n", families[f].name,
			       lab, uid, (unsigned long long)u->managed);
	else if (u->sm_seen)
		metrics_printf(b, "%s%s,uid=\"%s\"} %llu.%02llu\n",
			       families[f].name, lab, uid,
			       (unsigned long long)(u->sm / 100),
			       (unsigned long long)(u->sm % 100));
}

void metrics_user_use(struct metrics_buf *b, const struct sched *s, size_t n,
		      const uint8_t *const *uuids, const char *const *labs,
		      const int *nvml)
{
	const struct sched_stat_users *su = sched_stat_users(s);
	struct acc *a = calloc((n ? n : 1) * (SCHED_STAT_USERS + 1), sizeof(*a));
	char uid[16];

	if (a == NULL) {
		b->oom = 1;
		return;
	}
	for (size_t i = 0; i < n; i++)
		sums(s, uuids[i], &a[i * (SCHED_STAT_USERS + 1)]);
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++) {
		metrics_printf(b, "# HELP %s ", families[f].name);
		metrics_help_text(b, families[f].help);
		metrics_printf(b, "\n# TYPE %s gauge\n", families[f].name);
		for (size_t i = 0; i < n; i++) {
			if (families[f].nvml && !nvml[i])
				continue;
			for (uint32_t k = 0; k <= SCHED_STAT_USERS; k++) {
				const struct acc *u =
					&a[i * (SCHED_STAT_USERS + 1) + k];

				if (!u->seen)
					continue;
				if (k == SCHED_STAT_OTHER || k >= su->n)
					snprintf(uid, sizeof(uid), "other");
				else
					snprintf(uid, sizeof(uid), "%u",
						 su->uid[k]);
				sample(b, f, labs[i], uid, u);
			}
		}
	}
	free(a);
}
