/*
 * Counters for the metrics: what the policy decided, as plain numbers in
 * its own state. Pure bookkeeping below the transitions (sched.c,
 * sched_grant.c), like sched_cap.c: the transitions call in here as they
 * decide, and nothing here decides.
 */

#include <string.h>

#include "sched_int.h"

/* Prometheus's le bounds in ms: 1 ms to 10 min, about three per decade
 * below a minute, where waits for a notebook's cell are told apart. */
const uint32_t sched_hist_le_ms[SCHED_HIST_N] = {
	1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000,
	60000, 120000, 300000, 600000,
};

uint32_t sched_stat_slot(struct sched *s, uint32_t uid)
{
	struct sched_stat_users *su = &s->su;

	for (uint32_t i = 0; i < su->n; i++)
		if (su->uid[i] == uid)
			return i;
	if (su->n >= SCHED_STAT_USERS)
		return SCHED_STAT_OTHER;
	su->uid[su->n] = uid;
	return su->n++;
}

void sched_stat_hist(struct sched_hist *h, uint64_t ms)
{
	size_t i = 0;

	while (i < SCHED_HIST_N && ms > sched_hist_le_ms[i])
		i++;
	h->bucket[i]++;
	h->count++;
	h->sum_ms += ms;
}

/* A waiter that stayed queued through an admission (g->blocked moved
 * since its request) waited for holders: its grant is a hand-off. */
void sched_stat_granted(struct sched_gpu *g, const struct sched_member *m,
			uint64_t now)
{
	sched_stat_hist(&g->st.wait[m->klass], now > m->since ? now - m->since : 0);
	if (m->blk != g->blocked)
		g->st.handoffs++;
}

void sched_stat_unheld(struct sched_gpu *g, const struct sched_member *m,
		       uint64_t now)
{
	sched_stat_hist(&g->st.hold[m->klass], now > m->since ? now - m->since : 0);
}

/* Taken once per oversubscribed grant (sched_swapped), its time clamped
 * to the quantum there, its bytes to SCHED_FP_MAX here: not to the
 * footprint, which a client reports in steps, so that its prefetch may
 * exceed the last report. */
void sched_stat_swapped(struct sched_gpu *g, uint64_t us, uint64_t bytes)
{
	if (bytes > SCHED_FP_MAX)
		bytes = SCHED_FP_MAX;
	g->st.swapins++;
	g->st.swap_us += us;
	g->st.swap_bytes += bytes;
}

int sched_gpu_named(const struct sched *s, const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < s->cfg.n_gpus; i++)
		if (memcmp(s->gcfg[i].uuid, uuid, VS_UUID_LEN) == 0)
			return 1;
	return 0;
}

/* NVML's report, or an entry of the configuration's "gpus": a GPU that
 * is there, not a UUID that a client made up. */
int sched_gpu_vouched(const struct sched *s, const struct sched_gpu *g)
{
	return g->drv_total != 0 || sched_gpu_named(s, g->uuid);
}

void sched_gpu_stats(const struct sched *s, const struct sched_gpu *g,
		     struct sched_gpu_stats *out)
{
	uint64_t now = sched_now(s);

	*out = g->st;
	for (const struct dlink *it = g->holders.next; it != &g->holders;
	     it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);

		if (now > h->charged_at)
			out->held_ms[h->c->slot] += now - h->charged_at;
	}
}

const struct sched_stat_users *sched_stat_users(const struct sched *s)
{
	return &s->su;
}
