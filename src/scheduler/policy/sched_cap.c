/*
 * Capacity views. A client's report of a GPU's memory is a claim, not a
 * fact: a peer can send any number. So a report never changes what other
 * clients are scheduled against. A GPU whose capacity is configured for
 * it is trusted and every member sees that capacity; so is the driver's
 * own report of its memory (NVML) capped by the default; otherwise each
 * member sees its own report (capped by the default capacity), and a
 * group of co-runners must fit in the smallest view among its members.
 * A liar who reports 1 byte thus only keeps others from running beside
 * itself (which a large footprint does too), and one who reports a huge
 * card cannot raise what anyone else fits in. Views live in the member,
 * so they end with the client.
 */
#include "sched_int.h"

#define ITER(head, it) \
	for (const struct dlink *it = (head)->next; it != (head); it = it->next)

/* The smaller of two views; 0 means unknown and loses to any other. */
uint64_t sched_cap_min(uint64_t a, uint64_t b)
{
	if (a == 0)
		return b;
	if (b == 0)
		return a;
	return a < b ? a : b;
}

static uint64_t view_of(const struct sched_gpu *g, uint64_t claim)
{
	if (g->trusted)
		return g->cap_cfg;
	/* The driver's report, when there is one, replaces every claim. */
	if (g->drv_total != 0)
		claim = g->drv_total;
	if (g->cap_cfg == 0)
		return claim;
	if (claim == 0)
		return g->cap_cfg;
	return claim < g->cap_cfg ? claim : g->cap_cfg;
}

void sched_cap_hold(struct sched_gpu *g, const struct sched_member *m)
{
	if (m->cap == 0)
		return;
	if (g->hcap == 0 || m->cap < g->hcap) {
		g->hcap = m->cap;
		g->n_hcap = 1;
	} else if (m->cap == g->hcap) {
		g->n_hcap++;
	}
}

static void holders_min(struct sched_gpu *g)
{
	g->hcap = 0;
	g->n_hcap = 0;
	ITER(&g->holders, it)
		sched_cap_hold(g, dl_entry(it, const struct sched_member, h_link));
}

/* Recounting only when the last holder at the minimum leaves keeps this
 * O(1) for the usual case of many clients with the same view. */
void sched_cap_unhold(struct sched_gpu *g, const struct sched_member *m)
{
	if (m->cap == 0 || m->cap != g->hcap)
		return;
	if (--g->n_hcap == 0)
		holders_min(g);
}

uint64_t sched_cap_group(const struct sched_gpu *g, const struct sched_member *m)
{
	return sched_cap_min(g->hcap, m->cap);
}

void sched_cap_refresh(struct sched_gpu *g)
{
	g->total_mem = 0;
	ITER(&g->members, it) {
		struct sched_member *m =
			dl_entry(it, struct sched_member, m_link);

		m->cap = view_of(g, m->claim);
		if (g->total_mem == 0)
			g->total_mem = m->claim;
	}
	g->capacity = view_of(g, g->total_mem);
	holders_min(g);
}
