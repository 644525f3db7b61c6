/*
 * Use, not only holding: what the clients did with the GPUs they held,
 * as they and the driver report it. Pure bookkeeping beside the
 * transitions, like sched_stat.c: nothing here grants, drops or orders,
 * so nothing a client reports here changes what anyone is scheduled
 * against. Each report is bounded by what the scheduler saw itself: a
 * member's busy and idle time never add up to more than the time it
 * held the GPU, bytes never exceed SCHED_FP_MAX per report.
 */
#include <string.h>

#include "sched_int.h"

static struct sched_member *member_of(const struct sched_client *c,
				      const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < c->n_m; i++)
		if (memcmp(c->m[i]->g->uuid, uuid, VS_UUID_LEN) == 0)
			return c->m[i];
	return NULL;
}

static uint64_t clamp(uint64_t v, uint64_t max)
{
	return v < max ? v : max;
}

int sched_usage(struct sched *s, struct sched_client *c,
		const uint8_t uuid[VS_UUID_LEN], uint64_t busy_ms,
		uint64_t idle_ms, uint64_t swapout_bytes, uint64_t swapout_us)
{
	struct sched_member *m = member_of(c, uuid);
	uint64_t now = sched_now(s), held, room;

	if (m == NULL)
		return VS_E_NOGPU;
	held = m->held_total;
	if (m->state == SCHED_ST_HOLDING && now > m->charged_at)
		held += now - m->charged_at;
	/* The client's clock starts at the GRANT it read and stops at the
	 * RELEASED it sent, both inside the scheduler's view of the hold:
	 * what goes past it is a made-up figure, and is cut. */
	room = held > m->busy + m->idle ? held - (m->busy + m->idle) : 0;
	busy_ms = clamp(busy_ms, room);
	idle_ms = clamp(idle_ms, room - busy_ms);
	m->busy += busy_ms;
	m->idle += idle_ms;
	m->g->st.busy_ms[c->slot] += busy_ms;
	m->g->st.idle_ms[c->slot] += idle_ms;
	if (swapout_bytes > 0) {
		swapout_bytes = clamp(swapout_bytes, SCHED_FP_MAX);
		m->swapout_bytes += swapout_bytes;
		m->g->st.swapouts++;
		m->g->st.swapout_bytes += swapout_bytes;
		m->g->st.swapout_us += clamp(swapout_us, VS_SWAPPED_US_MAX);
	}
	return 0;
}

int sched_unshared(struct sched *s, struct sched_client *c, uint64_t ms,
		   uint32_t reason)
{
	if (reason < VS_UNSHARED_ABSENT || reason > VS_UNSHARED_MAX)
		return VS_E_INVAL;
	/* One report per connection: the program says it once, after its
	 * WELCOME; a second one would only inflate the counts, and is
	 * ignored. */
	if (c->unshared_why != 0)
		return 0;
	/* A program cannot have run unshared for longer than a year before
	 * it connected: a bound on what one report adds. */
	ms = clamp(ms, 365ull * 86400u * 1000u);
	c->unshared_ms = ms;
	c->unshared_why = reason;
	s->ust.runs[reason]++;
	s->ust.ms[reason] += ms;
	return 1;
}

const struct sched_unshared_stats *sched_unshared_stats(const struct sched *s)
{
	return &s->ust;
}

void sched_gpu_use(struct sched *s, const uint8_t uuid[VS_UUID_LEN], int known,
		   const struct sched_proc_use *p, size_t n)
{
	struct sched_gpu *g = NULL;

	for (size_t i = 0; i < s->n_gpus && g == NULL; i++)
		if (memcmp(s->gpus[i]->uuid, uuid, VS_UUID_LEN) == 0)
			g = s->gpus[i];
	if (g == NULL)
		return;
	g->use_known = known;
	for (struct dlink *it = g->members.next; it != &g->members;
	     it = it->next) {
		struct sched_member *m = dl_entry(it, struct sched_member,
						  m_link);
		size_t k = 0;

		while (known && k < n && p[k].pid != m->c->cred.pid)
			k++;
		m->dev_mem = known && k < n ? p[k].mem : 0;
		m->sm_pct = known && k < n && p[k].sm_pct >= 0 &&
			    p[k].sm_pct <= 100 ? p[k].sm_pct :
			    SCHED_UTIL_UNKNOWN;
	}
}
