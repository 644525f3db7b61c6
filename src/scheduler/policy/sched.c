/*
 * Policy transitions: the entry points (clients, attachment, requests,
 * releases, footprints, takes) and the GPUs' slots. Every entry point
 * changes state, then calls sched_admit() (sched_grant.c) on the GPUs it
 * touched, which grants, tells holders someone waits, and preempts.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "sched_int.h"

struct sched *sched_new(const struct sched_cfg *cfg, sched_clock_fn clock,
			void *clock_arg)
{
	struct sched *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->cfg = *cfg;
	if (cfg->n_gpus > 0) {
		s->gcfg = calloc(cfg->n_gpus, sizeof(*s->gcfg));
		if (s->gcfg == NULL) {
			free(s);
			return NULL;
		}
		memcpy(s->gcfg, cfg->gpus, cfg->n_gpus * sizeof(*s->gcfg));
	}
	s->cfg.gpus = s->gcfg;
	s->clock = clock;
	s->clock_arg = clock_arg;
	s->next_id = 1;
	dl_init(&s->clients);
	return s;
}

struct sched_client *sched_client_new(struct sched *s,
				      const struct sched_cred *cred,
				      const char *label, void *user)
{
	struct sched_client *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->id = sched_id_next(s);
	c->u = c->id != 0 ? sched_uid_ref(s, cred->uid) : NULL;
	if (c->u == NULL) {
		free(c);
		return NULL;
	}
	c->cred = *cred;
	c->weight = c->u->weight ? c->u->weight : SCHED_WEIGHT_DEFAULT;
	c->cp = c->u->cp;
	c->slot = sched_stat_slot(s, cred->uid);
	if (label != NULL)
		strncpy(c->label, label, VS_LABEL_MAX);
	c->user = user;
	dl_append(&s->clients, &c->link);
	s->n_clients++;
	return c;
}

uint32_t sched_client_id(const struct sched_client *c)
{
	return c->id;
}

void sched_client_del(struct sched *s, struct sched_client *c)
{
	/* A take it had not told yet is adopted first, so that its time on
	 * the GPU counts like any grant's. */
	for (size_t i = 0; i < c->n_m; i++)
		sched_settle(s, c->m[i]->g);
	sched_out_purge(s, c->id);
	for (size_t i = 0; i < c->n_m; i++) {
		struct sched_member *m = c->m[i];
		struct sched_gpu *g = m->g;

		if (m->state == SCHED_ST_HOLDING)
			sched_unhold(s, m);
		else if (m->state == SCHED_ST_WAITING)
			sched_wait_leave(m);
		dl_remove(&m->m_link);
		sched_class_member(g, c, -1);
		g->n_members--;
		g->total_fp -= m->fp;
		sched_uid_gpu_del(g, c);
		if (m->claim != 0 && m->claim == g->total_mem)
			sched_cap_refresh(g); /* the reported total came from m */
		free(m);
		sched_admit(s, g);
	}
	free(c->m);
	sched_uid_unref(s, c->u);
	dl_remove(&c->link);
	s->n_clients--;
	free(c);
}

static uint64_t capacity_of(uint64_t total_mem, uint64_t cap)
{
	if (cap == 0)
		return total_mem;
	if (total_mem == 0)
		return cap;
	return cap < total_mem ? cap : total_mem;
}

/* The record of a GPU that is not vouched for and that nobody is
 * attached to, to be reused; NULL when SCHED_MAX_GPUS such records are
 * not all made yet, or none is free (*full tells which). */
static struct sched_gpu *idle_unvouched(struct sched *s, int *full)
{
	struct sched_gpu *idle = NULL;
	size_t n = 0;

	for (size_t i = 0; i < s->n_gpus; i++) {
		if (s->gpus[i]->vouched)
			continue;
		n++;
		if (idle == NULL && s->gpus[i]->n_members == 0)
			idle = s->gpus[i];
	}
	*full = n >= SCHED_MAX_GPUS;
	return *full ? idle : NULL;
}

/* A zeroed GPU with its index. GPUs are kept after their last client
 * leaves (their index and settings stay). A GPU the configuration names
 * or NVML knows (vouched) always gets a record of its own; the others
 * share SCHED_MAX_GPUS records, and once those are made a new one takes
 * the record of one nobody is attached to, or is refused: peers
 * attaching made-up UUIDs can neither grow the table without bound nor
 * lock a real GPU out. */
static struct sched_gpu *gpu_slot(struct sched *s, int vouched)
{
	struct sched_gpu *g;
	int full = 0;

	g = vouched ? NULL : idle_unvouched(s, &full);
	if (g != NULL) {
		struct sched_gpu_uid *keep = g->uids;
		struct sched_usage *keep_u = g->usage;
		size_t cap = g->cap_uids, cap_u = g->cap_usage;
		uint32_t index = g->index, lslot = g->lslot;

		/* Another GPU now: its users' history goes. */
		memset(g, 0, sizeof(*g));
		g->index = index;
		g->lslot = lslot; /* reset for the new UUID (sched_lock_gpu_new) */
		g->uids = keep;
		g->cap_uids = cap;
		g->usage = keep_u;
		g->cap_usage = cap_u;
		return g;
	}
	if (full)
		return NULL;
	if (VS_GROW(s->gpus, s->n_gpus, s->cap_gpus, 8) != 0)
		return NULL;
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return NULL;
	g->index = (uint32_t)s->n_gpus;
	s->gpus[s->n_gpus++] = g;
	return g;
}

static uint64_t driver_total(const struct sched *s,
			     const uint8_t uuid[VS_UUID_LEN])
{
	return s->cfg.total_fn != NULL ?
	       s->cfg.total_fn(s->cfg.total_arg, uuid) : 0;
}

/* The index a GPU is shown by: the driver's (nvidia-smi's, matched by
 * UUID) where NVML knows the GPU, which stays the same across restarts
 * of the daemon; else its slot in the table, the order of first attach. */
static void shown_index(const struct sched *s, struct sched_gpu *g)
{
	int64_t i = s->cfg.index_fn != NULL ?
		    s->cfg.index_fn(s->cfg.total_arg, g->uuid) : -1;

	g->shown_nvml = i >= 0 && i <= UINT32_MAX;
	g->shown = g->shown_nvml ? (uint32_t)i : g->index;
}

static struct sched_gpu *gpu_new(struct sched *s,
				 const uint8_t uuid[VS_UUID_LEN])
{
	int named = sched_gpu_named(s, uuid);
	uint64_t drv = named ? 0 : driver_total(s, uuid);
	struct sched_gpu *g = gpu_slot(s, named || drv != 0);
	uint64_t cap = s->cfg.capacity;
	int trusted = 0;

	if (g == NULL)
		return NULL;
	g->vouched = named || drv != 0;
	memcpy(g->uuid, uuid, VS_UUID_LEN);
	shown_index(s, g);
	g->mode = s->cfg.mode;
	g->tq_ms = s->cfg.tq_ms;
	g->min_slice_ms = s->cfg.min_slice_ms;
	g->slice_ms = g->min_slice_ms;
	g->policy = s->cfg.policy;
	g->total_pct = sched_class_total_cfg(&s->cfg, uuid);
	for (size_t i = 0; i < s->cfg.n_gpus; i++) {
		const struct sched_gpu_cfg *gc = &s->gcfg[i];

		if (memcmp(gc->uuid, uuid, VS_UUID_LEN) != 0)
			continue;
		if (gc->set & SCHED_GCFG_TQ)
			g->tq_ms = gc->tq_ms;
		if (gc->set & SCHED_GCFG_MODE)
			g->mode = gc->mode;
		if (gc->set & SCHED_GCFG_SLICE)
			g->min_slice_ms = gc->min_slice_ms;
		if (gc->set & SCHED_GCFG_CAP) {
			cap = gc->capacity;
			trusted = cap != 0;
		}
	}
	g->cap_cfg = cap;
	g->trusted = trusted;
	if (!trusted)
		g->drv_total = named ? driver_total(s, uuid) : drv;
	dl_init(&g->members);
	dl_init(&g->queue);
	dl_init(&g->holders);
	sched_cap_refresh(g);
	sched_lock_gpu_new(s, g);
	return g;
}

int sched_attach(struct sched *s, struct sched_client *c,
		 const uint8_t uuid[VS_UUID_LEN], uint64_t total_mem)
{
	const struct sched_gpu *cg = sched_gpu_find(s, uuid);
	struct sched_gpu *g = (struct sched_gpu *)cg;
	struct sched_member *m;

	int rc;

	if (sched_member_find(c, uuid) != NULL)
		return 0; /* attaching twice is harmless */
	if (c->n_m >= SCHED_MAX_CLIENT_GPUS)
		return VS_E_LIMIT;
	if (VS_GROW(c->m, c->n_m, c->cap_m, 2) != 0)
		return VS_E_FULL;
	/* The uid's limit is checked before a record is made: a refused
	 * made-up UUID must not take a slot. */
	if (g == NULL && c->u->uid != 0 && s->cfg.uid_gpus != 0 &&
	    c->u->n_gpus >= s->cfg.uid_gpus)
		return VS_E_LIMIT;
	if (g == NULL && (g = gpu_new(s, uuid)) == NULL)
		return VS_E_FULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return VS_E_FULL;
	rc = sched_uid_gpu_add(s, g, c);
	if (rc != 0) {
		free(m);
		return rc;
	}
	m->c = c;
	m->g = g;
	m->claim = total_mem;
	m->sm_pct = SCHED_UTIL_UNKNOWN;
	dl_init(&m->q_link);
	dl_init(&m->h_link);
	dl_append(&g->members, &m->m_link);
	sched_class_member(g, c, 1);
	g->n_members++;
	c->m[c->n_m++] = m;
	if (g->total_mem == 0 && total_mem != 0)
		sched_cap_refresh(g);
	else
		m->cap = g->trusted ? g->cap_cfg :
			 capacity_of(g->drv_total ? g->drv_total : total_mem,
				     g->cap_cfg);
	/* A capped user takes through REQUEST only (its cap is checked at
	 * each grant), and so does everyone beside an interactive program
	 * (their grants carry VS_GRANTF_PACE) or beside a member in whose
	 * view the memory used does not fit (a grant then asks for a
	 * swap-in): a word opened before it attached is closed now, and
	 * admission keeps it closed while that holds. */
	if (g->opening != 0 &&
	    (c->cp.cap_pct != 0 || sched_class_paced(s, g) ||
	     (m->cap != 0 && g->total_fp > m->cap)))
		sched_admit(s, g);
	return 0;
}

int sched_footprint(struct sched *s, struct sched_client *c,
		    const uint8_t uuid[VS_UUID_LEN], uint64_t managed,
		    uint64_t pinned)
{
	struct sched_member *m = sched_member_find(c, uuid);
	uint64_t fp;

	if (m == NULL)
		return VS_E_NOGPU;
	managed = managed > SCHED_FP_MAX ? SCHED_FP_MAX : managed;
	pinned = pinned > SCHED_FP_MAX ? SCHED_FP_MAX : pinned;
	fp = managed + pinned;
	fp = fp > SCHED_FP_MAX ? SCHED_FP_MAX : fp;
	m->g->total_fp = m->g->total_fp - m->fp + fp;
	if (m->state == SCHED_ST_HOLDING)
		m->g->held_fp = m->g->held_fp - m->fp + fp;
	m->managed = managed;
	m->pinned = pinned;
	if (fp > m->fp && m->state == SCHED_ST_HOLDING) {
		m->fp = fp;
		sched_enforce_fit(s, m->g, VS_DROP_CAPACITY);
	}
	m->fp = fp;
	sched_admit(s, m->g);
	return 0;
}

int sched_request(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	if (m->state != SCHED_ST_IDLE)
		return VS_E_STATE;
	if (!sched_uid_may_wait(s, c))
		return VS_E_LIMIT;
	m->revoked = 0;
	m->since = sched_now(s);
	m->seq = s->next_seq++;
	m->blk = m->g->blocked;
	sched_wait_enter(m);
	sched_admit(s, m->g);
	return 0;
}

int sched_released(struct sched *s, struct sched_client *c,
		   const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	switch (m->state) {
	case SCHED_ST_HOLDING:
		sched_unhold(s, m);
		break;
	case SCHED_ST_WAITING: /* gave up waiting */
		sched_wait_leave(m);
		break;
	default:
		/* The release of a grant we took back after a hang is late,
		 * not wrong. */
		if (!m->revoked)
			return VS_E_STATE;
		m->revoked = 0;
		return 0;
	}
	sched_admit(s, m->g);
	return 0;
}

int sched_swapped(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN], uint64_t us, uint64_t bytes)
{
	struct sched_member *m = sched_member_find(c, uuid);

	if (m == NULL)
		return VS_E_NOGPU;
	if (m->state != SCHED_ST_HOLDING)
		return VS_E_STATE;
	/* One report per oversubscribed grant: others are no swap-in of
	 * ours, and are ignored (a holder must not inflate the counters or
	 * the slice). A report longer than a quantum is clamped to it. */
	if (!m->swap_due)
		return 0;
	m->swap_due = 0;
	if (us > (uint64_t)m->g->tq_ms * 1000u)
		us = (uint64_t)m->g->tq_ms * 1000u;
	sched_fair_swapped(m->g, us);
	sched_stat_swapped(m->g, us, bytes);
	m->swapin_bytes += bytes < SCHED_FP_MAX ? bytes : SCHED_FP_MAX;
	m->g->slice_ms = sched_fair_slice(s, m->g);
	return 0;
}

int sched_took(struct sched *s, struct sched_client *c,
	       const uint8_t uuid[VS_UUID_LEN])
{
	struct sched_member *m = sched_member_find(c, uuid);
	struct sched_gpu *g;

	if (m == NULL)
		return VS_E_NOGPU;
	g = m->g;
	/* Adopted here when the word holds its mark, or at an earlier
	 * decision that found it there. Otherwise nobody saw a take: junk
	 * or another's mark was written over it, or it took none. Its
	 * word says nothing about who runs, so it is refused (the client
	 * gives the GPU back and asks) rather than adopted: adopting a bare
	 * TOOK let a client jump the queue at will. */
	sched_settle(s, g);
	if (!m->took_untold || m->state != SCHED_ST_HOLDING) {
		m->took_untold = 0;
		g->st.took_refused++;
		sched_admit(s, g);
		return VS_E_STATE;
	}
	m->took_untold = 0;
	sched_admit(s, g);
	return 0;
}

/* For sched_conf.c and sched_admin.c. */
void sched_free(struct sched *s)
{
	if (s == NULL)
		return;
	while (!dl_empty(&s->clients))
		sched_client_del(s, dl_entry(s->clients.next,
					     struct sched_client, link));
	for (size_t i = 0; i < s->n_gpus; i++) {
		free(s->gpus[i]->uids);
		free(s->gpus[i]->usage);
		free(s->gpus[i]);
	}
	free(s->gpus);
	free(s->uids);
	free(s->gcfg);
	free(s->out);
	free(s);
}
