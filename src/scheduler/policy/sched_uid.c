/*
 * Per-uid accounting: what the clients of one uid hold, so that one user
 * cannot fill the tables every user shares (GPU records, queues). uid 0
 * is counted but never limited: root can stop the daemon anyway.
 */
#include <stdlib.h>

#include "grow.h"
#include "sched_int.h"

struct sched_uid *sched_uid_ref(struct sched *s, uint32_t uid)
{
	struct sched_uid *u;

	/* A node has few users: a linear search beats a hash here. */
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i]->uid == uid) {
			s->uids[i]->n_clients++;
			return s->uids[i];
		}
	if (VS_GROW(s->uids, s->n_uids, s->cap_uids, 8) != 0)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (u == NULL)
		return NULL;
	u->uid = uid;
	u->n_clients = 1;
	s->uids[s->n_uids++] = u;
	return u;
}

void sched_uid_unref(struct sched *s, struct sched_uid *u)
{
	if (--u->n_clients > 0)
		return;
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i] == u) {
			s->uids[i] = s->uids[--s->n_uids];
			break;
		}
	free(u);
}

static struct sched_gpu_uid *gpu_uid(struct sched_gpu *g, uint32_t uid)
{
	for (size_t i = 0; i < g->n_uids; i++)
		if (g->uids[i].uid == uid)
			return &g->uids[i];
	return NULL;
}

int sched_uid_gpu_add(struct sched *s, struct sched_gpu *g,
		      struct sched_client *c)
{
	struct sched_gpu_uid *e = gpu_uid(g, c->cred.uid);
	struct sched_uid *u = c->u;

	if (e != NULL) {
		e->n++;
		return 0;
	}
	if (u->uid != 0 && s->cfg.uid_gpus != 0 && u->n_gpus >= s->cfg.uid_gpus)
		return VS_E_LIMIT;
	if (VS_GROW(g->uids, g->n_uids, g->cap_uids, 4) != 0)
		return VS_E_FULL;
	g->uids[g->n_uids].uid = c->cred.uid;
	g->uids[g->n_uids].n = 1;
	g->n_uids++;
	u->n_gpus++;
	return 0;
}

void sched_uid_gpu_del(struct sched_gpu *g, struct sched_client *c)
{
	struct sched_gpu_uid *e = gpu_uid(g, c->cred.uid);

	if (e == NULL || --e->n > 0)
		return;
	*e = g->uids[--g->n_uids];
	c->u->n_gpus--;
}

int sched_uid_may_wait(const struct sched *s, const struct sched_client *c)
{
	return c->u->uid == 0 || s->cfg.uid_requests == 0 ||
	       c->u->n_waiting < s->cfg.uid_requests;
}

int sched_uid_info(const struct sched *s, uint32_t uid,
		   struct sched_uid_info *out)
{
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i]->uid == uid) {
			out->n_clients = s->uids[i]->n_clients;
			out->n_gpus = s->uids[i]->n_gpus;
			out->n_waiting = s->uids[i]->n_waiting;
			return 0;
		}
	return -1;
}

