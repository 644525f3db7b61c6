/*
 * A frozen copy of the policy for status reports. Rendering the status of
 * thousands of clients takes far longer than a grant, so the daemon
 * renders it on another thread from a copy taken on the loop thread: the
 * copy holds what the read-only views need (GPUs, clients, members in
 * the order of every list) and a clock stopped at the time of the copy.
 * Nothing else may be called on it; sched_snap_free releases it.
 */
#include <stdlib.h>
#include <string.h>

#include "sched_int.h"

static uint64_t frozen_clock(void *arg)
{
	return ((const struct sched *)arg)->frozen_now;
}

static struct sched_gpu *gpu_copy(const struct sched_gpu *g)
{
	struct sched_gpu *n = malloc(sizeof(*n));

	if (n == NULL)
		return NULL;
	*n = *g;
	n->uids = NULL;
	n->n_uids = n->cap_uids = 0;
	n->usage = NULL;
	n->n_usage = n->cap_usage = 0;
	if (g->n_usage > 0) {
		n->usage = malloc(g->n_usage * sizeof(*n->usage));
		if (n->usage == NULL) {
			free(n);
			return NULL;
		}
		memcpy(n->usage, g->usage, g->n_usage * sizeof(*n->usage));
		n->n_usage = n->cap_usage = g->n_usage;
	}
	dl_init(&n->members);
	dl_init(&n->queue);
	dl_init(&n->holders);
	return n;
}

/* Clients, members and member arrays of a snapshot, in one block: one
 * allocation instead of tens of thousands keeps the copy short. */
struct arena {
	struct sched_client *c;
	struct sched_member *m;
	struct sched_member **mp;
};

static void client_copy(struct sched *snap, struct arena *a,
			const struct sched_client *c)
{
	struct sched_client *n = a->c++;

	n->id = c->id;
	n->cred = c->cred;
	n->weight = c->weight;
	n->klass = c->klass;
	n->cp = c->cp;
	n->token = c->token;
	n->slot = c->slot;
	n->unshared_ms = c->unshared_ms;
	n->unshared_why = c->unshared_why;
	memcpy(n->label, c->label, sizeof(n->label));
	dl_append(&snap->clients, &n->link);
	snap->n_clients++;
	n->m = a->mp;
	a->mp += c->n_m;
	n->cap_m = c->n_m;
	for (size_t i = 0; i < c->n_m; i++) {
		struct sched_member *m = a->m++;

		*m = *c->m[i];
		m->c = n;
		m->g = snap->gpus[c->m[i]->g->index];
		dl_init(&m->m_link);
		dl_init(&m->q_link);
		dl_init(&m->h_link);
		/* The original points at its copy while the lists are
		 * rebuilt in their order. */
		c->m[i]->copy = m;
		n->m[n->n_m++] = m;
	}
}

static int arena_new(struct sched *snap, const struct sched *s,
		     struct arena *a)
{
	size_t nm = 0, nc = s->n_clients;
	const struct dlink *it;
	char *p;

	for (it = s->clients.next; it != &s->clients; it = it->next)
		nm += dl_entry(it, const struct sched_client, link)->n_m;
	p = calloc(1, nc * sizeof(*a->c) + nm * sizeof(*a->m) +
		   nm * sizeof(*a->mp) + 1);
	if (p == NULL)
		return -1;
	snap->arena = p;
	a->c = (struct sched_client *)(void *)p;
	a->m = (struct sched_member *)(void *)(a->c + nc);
	a->mp = (struct sched_member **)(void *)(a->m + nm);
	return 0;
}

#define RELINK(from, to, field) \
	for (const struct dlink *rl = (from)->next; rl != (from); \
	     rl = rl->next) \
		dl_append((to), &dl_entry(rl, const struct sched_member, \
					  field)->copy->field)

static int snap_fill(struct sched *snap, const struct sched *s)
{
	const struct dlink *it;
	struct arena a;

	snap->gpus = calloc(s->n_gpus ? s->n_gpus : 1, sizeof(*snap->gpus));
	if (snap->gpus == NULL)
		return -1;
	snap->cap_gpus = s->n_gpus;
	for (size_t i = 0; i < s->n_gpus; i++) {
		uint64_t w = sched_lock_peek(s, s->gpus[i]);

		snap->gpus[i] = gpu_copy(s->gpus[i]);
		if (snap->gpus[i] == NULL)
			return -1;
		/* Read, never settled: a report changes nothing. */
		if (s->gpus[i]->opening != 0 && (w & VS_LOCK_TOKEN_BIT))
			snap->gpus[i]->seen = w;
		snap->n_gpus++;
	}
	if (arena_new(snap, s, &a) != 0)
		return -1;
	for (it = s->clients.next; it != &s->clients; it = it->next)
		client_copy(snap, &a, dl_entry(it, const struct sched_client,
					       link));
	for (size_t i = 0; i < s->n_gpus; i++) {
		const struct sched_gpu *g = s->gpus[i];
		struct sched_gpu *n = snap->gpus[i];

		RELINK(&g->members, &n->members, m_link);
		RELINK(&g->queue, &n->queue, q_link);
		RELINK(&g->holders, &n->holders, h_link);
	}
	return 0;
}

struct sched *sched_snapshot(const struct sched *s)
{
	struct sched *snap = calloc(1, sizeof(*snap));

	if (snap == NULL)
		return NULL;
	snap->cfg = s->cfg;
	snap->cfg.gpus = NULL;
	snap->cfg.n_gpus = 0;
	snap->frozen_now = sched_now(s);
	snap->clock = frozen_clock;
	snap->clock_arg = snap;
	dl_init(&snap->clients);
	if (snap_fill(snap, s) != 0) {
		sched_snap_free(snap);
		return NULL;
	}
	return snap;
}

void sched_snap_free(struct sched *snap)
{
	if (snap == NULL)
		return;
	free(snap->arena);
	for (size_t i = 0; i < snap->n_gpus; i++) {
		free(snap->gpus[i]->usage);
		free(snap->gpus[i]);
	}
	free(snap->gpus);
	free(snap);
}
