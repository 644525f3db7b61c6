/*
 * Admin requests of the policy: quantum, mode and slice, for one GPU, one
 * index or all; the queue order of every GPU; users' weights, classes
 * and caps. A mode
 * change tells every attached client and drops or admits what the new
 * mode asks.
 */
#include <string.h>

#include "sched_int.h"

/* The GPU shown by `index` (struct sched_gpu's shown), NULL if none.
 * Where NVML knows some GPUs but not others, an unknown one's attach
 * order may equal a known one's index: the driver's index wins, so that
 * a peer attaching a made-up UUID cannot take `--gpu N` from the GPU
 * nvidia-smi calls N. */
static struct sched_gpu *gpu_by_index(struct sched *s, uint32_t index)
{
	struct sched_gpu *other = NULL;

	for (size_t i = 0; i < s->n_gpus; i++) {
		struct sched_gpu *g = s->gpus[i];

		if (g->shown != index)
			continue;
		if (g->shown_nvml)
			return g;
		if (other == NULL)
			other = g;
	}
	return other;
}

/* Call fn on each targeted GPU; the count, or VS_E_NOGPU. */
static int for_targets(struct sched *s, uint32_t target, uint32_t index,
		       const uint8_t uuid[VS_UUID_LEN],
		       void (*fn)(struct sched *, struct sched_gpu *, uint32_t),
		       uint32_t value)
{
	struct sched_gpu *g;

	if (target & VS_TARGET_ALL) {
		for (size_t i = 0; i < s->n_gpus; i++)
			fn(s, s->gpus[i], value);
		return (int)s->n_gpus;
	}
	if (target & VS_TARGET_INDEX) {
		g = gpu_by_index(s, index);
		if (g == NULL)
			return VS_E_NOGPU;
	} else {
		g = (struct sched_gpu *)sched_gpu_find(s, uuid);
		if (g == NULL)
			return VS_E_NOGPU;
	}
	fn(s, g, value);
	return 1;
}

static void gpu_set_tq(struct sched *s, struct sched_gpu *g, uint32_t tq_ms)
{
	(void)s;
	/* Running windows keep their start: a shorter quantum that is
	 * already over makes the next tick drop the holder. */
	g->tq_ms = tq_ms;
}

int sched_set_tq(struct sched *s, uint32_t target, uint32_t index,
		 const uint8_t uuid[VS_UUID_LEN], uint32_t tq_s)
{
	if (tq_s < SCHED_TQ_MIN_S || tq_s > SCHED_TQ_MAX_S)
		return VS_E_INVAL;
	if (target & VS_TARGET_ALL)
		s->cfg.tq_ms = tq_s * 1000u;
	return for_targets(s, target, index, uuid, gpu_set_tq, tq_s * 1000u);
}

void sched_gpu_mode(struct sched *s, struct sched_gpu *g, uint32_t mode)
{
	struct dlink *it;

	if (g->mode == mode)
		return;
	g->mode = mode;
	for (it = g->members.next; it != &g->members; it = it->next) {
		struct sched_member *m = dl_entry(it, struct sched_member, m_link);
		struct sched_out *o = sched_out_push(s, SCHED_OUT_MSG, m);

		if (o == NULL)
			continue;
		o->type = VS_MSG_MODE;
		memcpy(o->u.mode.uuid, g->uuid, VS_UUID_LEN);
		o->u.mode.mode = mode;
	}
	if (mode == VS_MODE_OFF) {
		/* Nobody is dropped in mode off: forget pending drops, so no
		 * holder is declared hung over a drop that no longer counts. */
		ITER_HOLDERS(g, it2, nx) {
			dl_entry(it2, struct sched_member, h_link)->hard = 0;
		}
		g->n_hard = 0;
	} else {
		sched_enforce_fit(s, g, VS_DROP_MODE);
	}
	sched_admit(s, g);
}

int sched_set_mode(struct sched *s, uint32_t target, uint32_t index,
		   const uint8_t uuid[VS_UUID_LEN], uint32_t mode)
{
	if (mode > VS_MODE_OFF)
		return VS_E_INVAL;
	if (target & VS_TARGET_ALL)
		s->cfg.mode = mode;
	return for_targets(s, target, index, uuid, sched_gpu_mode, mode);
}

static void gpu_set_slice(struct sched *s, struct sched_gpu *g, uint32_t ms)
{
	g->min_slice_ms = ms;
	/* A shorter slice may already be over for a holder: admission
	 * preempts it now if someone much less waits. */
	sched_admit(s, g);
}

int sched_set_slice(struct sched *s, uint32_t target, uint32_t index,
		    const uint8_t uuid[VS_UUID_LEN], uint32_t ms)
{
	if (ms < SCHED_SLICE_MIN_MS || ms > SCHED_SLICE_MAX_MS)
		return VS_E_INVAL;
	if (target & VS_TARGET_ALL)
		s->cfg.min_slice_ms = ms;
	return for_targets(s, target, index, uuid, gpu_set_slice, ms);
}

static void gpu_policy(struct sched *s, struct sched_gpu *g, uint32_t policy)
{
	g->policy = policy;
	/* The queue takes the new order now (admission sorts it). */
	sched_admit(s, g);
}

int sched_set_policy(struct sched *s, uint32_t policy)
{
	if (policy != SCHED_POLICY_FAIR && policy != SCHED_POLICY_FCFS)
		return VS_E_INVAL;
	s->cfg.policy = policy;
	for (size_t i = 0; i < s->n_gpus; i++)
		gpu_policy(s, s->gpus[i], policy);
	return 0;
}

/* ---- weights of the fair share ---- */

static uint32_t weight_clamp(uint32_t weight)
{
	if (weight == 0)
		return SCHED_WEIGHT_DEFAULT;
	return weight > SCHED_WEIGHT_MAX ? SCHED_WEIGHT_MAX : weight;
}

/* Every client takes its user's weight. Where a user that changed has
 * GPUs (`attached`), the order of the queues may change, and who
 * preempts whom; otherwise no queue moves. */
static void weights_apply(struct sched *s, int attached)
{
	struct dlink *it;

	for (it = s->clients.next; it != &s->clients; it = it->next) {
		struct sched_client *c = dl_entry(it, struct sched_client, link);

		c->weight = c->u->weight ? c->u->weight : SCHED_WEIGHT_DEFAULT;
	}
	for (size_t i = 0; attached && i < s->n_gpus; i++)
		if (s->gpus[i]->n_waiting > 0)
			sched_admit(s, s->gpus[i]);
}

/* A user's weight, on the uid's record and every one of its clients. A
 * user's first client (the daemon sets its weight at registration) has
 * attached no GPU yet: no queue is sorted again for it. */
static void uid_weight(struct sched *s, uint32_t uid, uint32_t weight)
{
	int attached = 0;

	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i]->uid == uid) {
			s->uids[i]->weight = weight_clamp(weight);
			attached = s->uids[i]->n_gpus > 0;
		}
	weights_apply(s, attached);
}

void sched_reweigh(struct sched *s, sched_weight_fn fn, void *arg)
{
	struct dlink *it;

	for (size_t i = 0; i < s->n_uids; i++)
		s->uids[i]->weight = 0;
	for (it = s->clients.next; it != &s->clients; it = it->next) {
		struct sched_client *c = dl_entry(it, struct sched_client, link);
		uint32_t w = weight_clamp(fn(arg, c->cred.uid, c->cred.gid));

		if (w > c->u->weight)
			c->u->weight = w;
	}
	weights_apply(s, 1);
}

void sched_client_set_weight(struct sched *s, struct sched_client *c,
			     uint32_t weight)
{
	uid_weight(s, c->cred.uid, weight);
}

int sched_uid_set_weight(struct sched *s, uint32_t uid, uint32_t weight)
{
	struct sched_uid_info ui;

	if (sched_uid_info(s, uid, &ui) != 0)
		return VS_E_NOGPU;
	uid_weight(s, uid, weight);
	return 0;
}

const struct sched_gpu *sched_gpu_target(struct sched *s, uint32_t target,
					 uint32_t index,
					 const uint8_t uuid[VS_UUID_LEN])
{
	if (target & VS_TARGET_ALL)
		return NULL;
	if (target & VS_TARGET_INDEX)
		return gpu_by_index(s, index);
	return sched_gpu_find(s, uuid);
}

/* The client takes its user's classes and cap; the GPUs it attached
 * count their capped members again and decide anew. */
void sched_client_set_policy(struct sched *s, struct sched_client *c,
			     const struct sched_class_pol *p)
{
	c->u->cp = *p;
	if (memcmp(&c->cp, p, sizeof(*p)) == 0)
		return;
	for (size_t i = 0; i < c->n_m; i++)
		sched_class_member(c->m[i]->g, c, -1);
	c->cp = *p;
	for (size_t i = 0; i < c->n_m; i++) {
		sched_class_member(c->m[i]->g, c, 1);
		sched_admit(s, c->m[i]->g);
	}
}
