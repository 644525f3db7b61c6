/*
 * The lower half of the policy: the injected clock, the outbox and the
 * read-only views (lookups for the transitions, status reports, tests).
 * Nothing here changes the scheduling state, so nothing here calls
 * sched.c or sched_grant.c: the
 * transitions sit above and use these (no circles: docs/scheduler.md).
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_int.h"

uint64_t sched_now(const struct sched *s)
{
	return s->clock(s->clock_arg);
}

struct sched_out *sched_out_push(struct sched *s, enum sched_out_kind kind,
				 const struct sched_member *m)
{
	struct sched_out *o;

	if (VS_GROW(s->out, s->n_out, s->cap_out, 16) != 0)
		return NULL;
	o = &s->out[s->n_out++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->client_id = m->c->id;
	o->user = m->c->user;
	memcpy(o->uuid, m->g->uuid, VS_UUID_LEN);
	return o;
}

/* A client that is going away must not be sent anything queued for it. */
void sched_out_purge(struct sched *s, uint32_t client_id)
{
	size_t j = 0;

	for (size_t i = 0; i < s->n_out; i++) {
		if (s->out[i].client_id == client_id &&
		    s->out[i].kind != SCHED_OUT_TOOK)
			continue;
		/* A take adopted as its client went is still logged. */
		if (s->out[i].client_id == client_id)
			s->out[i].user = NULL;
		s->out[j++] = s->out[i];
	}
	s->n_out = j;
}

size_t sched_out_count(const struct sched *s)
{
	return s->n_out;
}

const struct sched_out *sched_out_at(const struct sched *s, size_t i)
{
	return i < s->n_out ? &s->out[i] : NULL;
}

void sched_out_clear(struct sched *s)
{
	s->n_out = 0;
}

size_t sched_gpu_count(const struct sched *s)
{
	return s->n_gpus;
}

const struct sched_gpu *sched_gpu_at(const struct sched *s, size_t i)
{
	return i < s->n_gpus ? s->gpus[i] : NULL;
}

const struct sched_gpu *sched_gpu_find(const struct sched *s,
				       const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < s->n_gpus; i++)
		if (memcmp(s->gpus[i]->uuid, uuid, VS_UUID_LEN) == 0)
			return s->gpus[i];
	return NULL;
}

void sched_gpu_info(const struct sched_gpu *g, struct sched_gpu_info *out)
{
	out->uuid = g->uuid;
	out->index = g->shown;
	out->slot = g->index;
	out->index_nvml = g->shown_nvml;
	out->mode = g->mode;
	out->tq_ms = g->tq_ms;
	out->total_mem = g->total_mem;
	out->capacity = g->capacity;
	out->trusted = g->trusted || g->drv_total != 0;
	out->driver_total = g->drv_total;
	out->footprint = g->total_fp;
	out->held = g->held_fp;
	out->n_holders = g->n_holders;
	out->n_waiting = g->n_waiting;
	out->n_members = g->n_members;
	out->policy = g->policy;
	out->min_slice_ms = g->min_slice_ms;
	out->slice_ms = (uint32_t)(g->slice_ms ? g->slice_ms : g->min_slice_ms);
	out->swap_us = (uint64_t)g->swap_us;
	out->use_known = g->use_known;
	out->cost_ms = (uint64_t)g->cost_ms;
	out->slice_max_ms = (uint32_t)sched_fair_slice_max(g);
	out->class_cost_ms = (uint64_t)g->icost_ms;
	out->total_pct = g->total_pct;
	out->total_over = g->total_over;
}

double sched_gpu_total_used(const struct sched *s, const struct sched_gpu *g)
{
	return sched_class_total_used(s, g, sched_now(s));
}

const char *sched_why_name(uint32_t why)
{
	switch (why) {
	case SCHED_WHY_BEHIND:  return "behind";
	case SCHED_WHY_SLICE:   return "slice";
	case SCHED_WHY_QUANTUM: return "quantum";
	case SCHED_WHY_RELEASE: return "release";
	case SCHED_WHY_FIT:     return "fit";
	case SCHED_WHY_CAP:     return "cap";
	default:                return "";
	}
}

const char *sched_drop_text(uint32_t why)
{
	switch (why) {
	case SCHED_DROP_FAIR:
		return "fair share, a waiter with much less recent GPU time "
		       "(release now)";
	case SCHED_DROP_CLASS:
		return "an interactive program waits (release now)";
	case SCHED_DROP_BUDGET:
		return "interactive budget spent, others wait (release now)";
	case SCHED_DROP_CAP:
		return "the user's cap of the GPU's time reached (release now)";
	case SCHED_DROP_TOTAL:
		return "the interactive class's share of the GPU spent "
		       "(interactive_total_pct), others wait (release now)";
	default:
		return vs_drop_reason_name(why);
	}
}

static uint64_t left(uint64_t end, uint64_t now)
{
	return end > now ? end - now : 0;
}

/* Why the first in line waits, and for about how long. */
static uint32_t head_why(const struct sched *s, const struct sched_member *w,
			 uint64_t now, uint64_t *eta)
{
	const struct sched_gpu *g = w->g;
	uint64_t rel = SCHED_ETA_UNKNOWN, sl = SCHED_ETA_UNKNOWN;
	uint64_t q = SCHED_ETA_UNKNOWN;
	const struct dlink *it;

	for (it = g->holders.next; it != &g->holders; it = it->next) {
		const struct sched_member *h =
			dl_entry(it, const struct sched_member, h_link);
		uint64_t t;

		if (h->hard) {
			t = left(h->hard_at + s->cfg.grace_ms, now);
			rel = t < rel ? t : rel;
			continue;
		}
		t = left(h->q_start + g->tq_ms, now);
		q = t < q ? t : q;
		if (sched_fair_much_less(s, g, w, h, now)) {
			t = left(h->since + g->slice_ms, now);
			sl = t < sl ? t : sl;
		}
	}
	if (rel != SCHED_ETA_UNKNOWN) {
		*eta = rel;
		return SCHED_WHY_RELEASE;
	}
	if (sl != SCHED_ETA_UNKNOWN) {
		*eta = sl < q ? sl : q;
		return SCHED_WHY_SLICE;
	}
	*eta = q;
	if (g->n_holders == 0) {
		*eta = 0; /* granted at the next admission */
		return SCHED_WHY_FIT;
	}
	return g->mode == VS_MODE_AUTO ? SCHED_WHY_FIT : SCHED_WHY_QUANTUM;
}

static void wait_view(const struct sched *s, const struct sched_member *m,
		      uint64_t now, struct sched_member_info *out)
{
	const struct sched_member *w;
	uint64_t eta = SCHED_ETA_UNKNOWN;

	out->why = SCHED_WHY_NONE;
	out->position = 0;
	out->eta_ms = SCHED_ETA_UNKNOWN;
	if (m->state != SCHED_ST_WAITING || dl_empty(&m->g->queue))
		return;
	w = dl_entry(m->g->queue.next, const struct sched_member, q_link);
	out->position = m->pos ? m->pos : 1;
	out->why = head_why(s, w, now, &eta);
	if (m != w)
		out->why = SCHED_WHY_BEHIND;
	if (sched_class_capped(s, m, now)) {
		out->why = SCHED_WHY_CAP;
		eta = SCHED_ETA_UNKNOWN;
	}
	/* Each one ahead may hold up to a quantum: a bound, not a promise. */
	if (eta != SCHED_ETA_UNKNOWN)
		eta += (uint64_t)(out->position - 1) * m->g->tq_ms;
	out->eta_ms = eta;
}

static const struct sched_client *nth(const struct dlink *head, size_t i,
				      size_t off)
{
	const struct dlink *it;

	for (it = head->next; it != head; it = it->next, i--)
		if (i == 0)
			return ((const struct sched_member *)
				(const void *)((const char *)it - off))->c;
	return NULL;
}

const struct sched_client *sched_gpu_holder(const struct sched_gpu *g, size_t i)
{
	return nth(&g->holders, i, offsetof(struct sched_member, h_link));
}

const struct sched_client *sched_gpu_waiter(const struct sched_gpu *g, size_t i)
{
	return nth(&g->queue, i, offsetof(struct sched_member, q_link));
}

const struct sched_client *sched_client_first(const struct sched *s)
{
	if (dl_empty(&s->clients))
		return NULL;
	return dl_entry(s->clients.next, const struct sched_client, link);
}

const struct sched_client *sched_client_next(const struct sched *s,
					    const struct sched_client *c)
{
	if (c->link.next == &s->clients)
		return NULL;
	return dl_entry(c->link.next, const struct sched_client, link);
}

size_t sched_client_count(const struct sched *s)
{
	return s->n_clients;
}

void sched_client_info(const struct sched_client *c,
		       struct sched_client_info *out)
{
	out->id = c->id;
	out->cred = c->cred;
	out->label = c->label;
	out->n_gpus = c->n_m;
	out->klass = c->klass;
	out->unshared_ms = c->unshared_ms;
	out->unshared_why = c->unshared_why;
	out->slot = c->slot;
}

/* What the member did with the GPU (sched_use.c keeps it). */
static void use_view(const struct sched_member *m, uint64_t now,
		     struct sched_member_info *out)
{
	out->use_known = m->g->use_known;
	out->dev_mem = m->g->use_known ? m->dev_mem : 0;
	out->sm_pct = m->g->use_known ? m->sm_pct : SCHED_UTIL_UNKNOWN;
	out->held_total_ms = m->held_total;
	if (m->state == SCHED_ST_HOLDING && now > m->charged_at)
		out->held_total_ms += now - m->charged_at;
	out->busy_ms = m->busy;
	out->idle_ms = m->idle;
	out->swapin_bytes = m->swapin_bytes;
	out->swapout_bytes = m->swapout_bytes;
}

int sched_client_gpu(const struct sched *s, const struct sched_client *c,
		     size_t i, struct sched_member_info *out)
{
	const struct sched_member *m;
	uint64_t now = sched_now(s);

	if (i >= c->n_m)
		return -1;
	m = c->m[i];
	out->uuid = m->g->uuid;
	out->managed = m->managed;
	out->pinned = m->pinned;
	out->capacity = m->cap;
	out->state = m->state;
	out->revoked = m->revoked;
	out->took = m->state == SCHED_ST_IDLE && m->g->seen != 0 &&
		    m->c->token != 0 &&
		    m->g->seen == vs_lock_mark(m->c->token, m->g->opening);
	out->held_ms = m->state == SCHED_ST_HOLDING ? now - m->since : 0;
	out->waited_ms = m->state == SCHED_ST_WAITING ? now - m->since : 0;
	out->recent_ms = (uint64_t)sched_fair_recent(s, m, now);
	out->user_recent_ms = (uint64_t)sched_fair_user_recent(s, m, now);
	out->weight = m->c->weight ? m->c->weight : SCHED_WEIGHT_DEFAULT;
	out->klass_want = m->c->klass;
	out->klass = m->state == SCHED_ST_HOLDING ? m->klass :
		     sched_class_of(s, m);
	out->budget_pct = m->c->cp.budget_pct;
	out->budget_used_pct = sched_class_budget_used(s, m, now);
	out->cap_pct = m->c->cp.cap_pct;
	out->cap_used_pct = out->cap_pct ? sched_class_cap_used(s, m, now) : 0;
	out->total_pct = m->g->total_pct;
	out->total_used_pct = sched_class_total_used(s, m->g, now);
	wait_view(s, m, now, out);
	use_view(m, now, out);
	return 0;
}

struct sched_member *sched_member_find(const struct sched_client *c,
				       const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < c->n_m; i++)
		if (memcmp(c->m[i]->g->uuid, uuid, VS_UUID_LEN) == 0)
			return c->m[i];
	return NULL;
}

/* The same view as a status report's, for the waiter alone: the first
 * holder in grant order is the one named. */
int sched_wait_info(const struct sched *s, const struct sched_client *c,
		    const uint8_t uuid[VS_UUID_LEN], struct sched_wait_info *out)
{
	const struct sched_member *m = NULL, *h;
	struct sched_member_info mi;
	uint64_t now = sched_now(s);

	memset(out, 0, sizeof(*out));
	m = sched_member_find(c, uuid);
	if (m == NULL)
		return VS_E_NOGPU;
	if (m->state != SCHED_ST_WAITING)
		return 0;
	wait_view(s, m, now, &mi);
	out->position = mi.position;
	out->eta_ms = mi.eta_ms;
	out->n_waiting = (uint32_t)m->g->n_waiting;
	out->gpu_index = m->g->shown;
	out->n_holders = (uint32_t)m->g->n_holders;
	out->waited_ms = now - m->since;
	if (!dl_empty(&m->g->holders)) {
		h = dl_entry(m->g->holders.next, const struct sched_member, h_link);
		out->holder = h->c;
		out->held_ms = now - h->since;
	}
	return 0;
}

enum sched_state sched_state_of(const struct sched_client *c,
				const uint8_t uuid[VS_UUID_LEN])
{
	const struct sched_member *m = sched_member_find(c, uuid);

	return m != NULL ? m->state : SCHED_ST_IDLE;
}
