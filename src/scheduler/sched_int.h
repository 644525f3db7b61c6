/*
 * Private structures of the policy module, shared by its files: sched.c
 * (transitions) above sched_view.c (clock, outbox and read-only views),
 * and sched_conf.c (reconfiguration) above both.
 */
#ifndef VSHARE_SCHED_INT_H
#define VSHARE_SCHED_INT_H

#include "sched_policy.h"

/* Intrusive circular doubly linked list with a sentinel head. */
struct dlink {
	struct dlink *prev, *next;
};

static inline void dl_init(struct dlink *h) { h->prev = h->next = h; }
static inline int dl_empty(const struct dlink *h) { return h->next == h; }
static inline void dl_append(struct dlink *h, struct dlink *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}
static inline void dl_remove(struct dlink *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->prev = n->next = n;
}

#define dl_entry(p, type, field) \
	((type *)(void *)((char *)(p) - offsetof(type, field)))

/* One client attached to one GPU. */
struct sched_member {
	struct sched_client *c;
	struct sched_gpu *g;
	struct dlink m_link;      /* g->members, in attach order */
	struct dlink q_link;      /* g->queue while waiting */
	struct dlink h_link;      /* g->holders while holding, in grant order */
	uint64_t managed, pinned;
	uint64_t fp;              /* managed + pinned, clamped */
	enum sched_state state;
	uint64_t since;           /* request or grant time */
	uint64_t q_start;         /* start of the current quantum window */
	int idle_sent;            /* DROP IDLE sent in this grant */
	uint32_t hard;            /* hard DROP reason sent, 0 if none */
	uint64_t hard_at;
	int hung_reported;
	int revoked;
};

struct sched_client {
	uint32_t id;
	struct sched_cred cred;
	char label[VS_LABEL_MAX + 1];
	void *user;
	struct dlink link;        /* s->clients */
	struct sched_member **m;  /* attached GPUs */
	size_t n_m, cap_m;
};

struct sched_gpu {
	uint8_t uuid[VS_UUID_LEN];
	uint32_t index;
	uint32_t mode;
	uint32_t tq_ms;
	uint64_t total_mem;
	uint64_t capacity;
	uint64_t cap_cfg;         /* configured cap, 0: none */
	uint64_t total_fp;        /* every member */
	uint64_t held_fp;         /* holders */
	struct dlink members, queue, holders;
	size_t n_members, n_waiting, n_holders;
	size_t n_hard;            /* holders with a hard drop pending */
	int contended;            /* someone waits behind the holders */
};

struct sched {
	struct sched_cfg cfg;
	struct sched_gpu_cfg *gcfg;
	sched_clock_fn clock;
	void *clock_arg;
	struct sched_gpu **gpus;
	size_t n_gpus, cap_gpus;
	struct dlink clients;
	size_t n_clients;
	uint32_t next_id;
	struct sched_out *out;
	size_t n_out, cap_out;
};

/* sched.c, for sched_conf.c */
void sched_admit(struct sched *s, struct sched_gpu *g);
void sched_enforce_fit(struct sched *s, struct sched_gpu *g, uint32_t reason);
uint64_t sched_capacity_of(uint64_t total_mem, uint64_t cap);
void sched_gpu_mode(struct sched *s, struct sched_gpu *g, uint32_t mode);

/* sched_view.c */
struct sched_out *sched_out_push(struct sched *s, enum sched_out_kind kind,
				 const struct sched_member *m);
void sched_out_purge(struct sched *s, uint32_t client_id);

#endif
