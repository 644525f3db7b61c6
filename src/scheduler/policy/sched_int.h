/*
 * Private structures of the policy module, shared by its files: sched.c
 * (entry points) and sched_grant.c (granting, dropping, admission) above
 * sched_view.c (clock, outbox and read-only views), and sched_conf.c
 * (reconfiguration) above them.
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

/* Each holder of GPU g; the current one may be unlinked in the body. */
#define ITER_HOLDERS(g, it, nx) \
	for (struct dlink *it = (g)->holders.next, *nx = it->next; \
	     it != &(g)->holders; it = nx, nx = it->next)

/* Recent GPU time in ms, decayed: `v` as of `stamp`. */
struct sched_rec {
	double v;
	uint64_t stamp;
};

/* One client attached to one GPU. */
struct sched_member {
	struct sched_client *c;
	struct sched_gpu *g;
	struct dlink m_link;      /* g->members, in attach order */
	struct dlink q_link;      /* g->queue while waiting */
	struct dlink h_link;      /* g->holders while holding, in grant order */
	uint64_t managed, pinned;
	uint64_t fp;              /* managed + pinned, clamped */
	uint64_t claim;           /* total memory it reported, 0: unknown */
	uint64_t cap;             /* its view of the capacity, 0: unknown */
	struct sched_member *copy; /* scratch of sched_snapshot */
	enum sched_state state;
	uint64_t since;           /* request or grant time */
	uint64_t q_start;         /* start of the current quantum window */
	int idle_sent;            /* DROP IDLE sent in this grant */
	uint32_t hard;            /* hard DROP reason sent, 0 if none */
	uint64_t hard_at;
	int hung_reported;
	int revoked;
	struct sched_rec rec;     /* its recent GPU time here */
	uint64_t charged_at;      /* holding: charged up to this time */
	uint32_t pos;             /* waiting: place in the queue, 1 first */
	uint64_t seq;             /* waiting: order of the requests */
	int preempted;            /* its hard drop is a fair preemption */
	int swap_due;             /* holding an oversubscribed grant whose
				   * swap-in is not reported yet */
	int took;                 /* being adopted: it took the GPU through
				   * the lock page, no GRANT goes out */
	int took_untold;          /* adopted from its token in the word, its
				   * TOOK not heard yet: the one TOOK that
				   * is not refused */
	int out;                  /* preempted and not yet granted again */
	uint64_t out_at;          /* when that preemption took the GPU */
	uint64_t out_hard;        /* g->hard_seq then */
	uint64_t out_igrants;     /* g's interactive grants then */
	uint64_t blk;             /* waiting: g->blocked at its request */
	uint32_t klass;           /* holding: its class, VS_CLASS_* (from
				   * the grant; batch once its budget ran
				   * out) */
	int cap_held;             /* holding, counted in its user's cap */
	int cap_wait;             /* waiting: the last admission passed it
				   * over for its user's cap */
	/* Use (sched_use.c). */
	uint64_t held_total;      /* ms held since it attached, charged */
	uint64_t busy, idle;      /* ms it reported of that */
	uint64_t swapin_bytes, swapout_bytes;
	uint64_t dev_mem;         /* NVML: its device memory in use */
	int32_t sm_pct;           /* NVML: its SM utilisation, or unknown */
};

/* What one uid's clients hold, against the per-uid limits. */
struct sched_uid {
	uint32_t uid;
	uint32_t n_clients;
	uint32_t n_gpus;          /* distinct GPUs its clients attach */
	uint32_t n_waiting;
	uint32_t weight;          /* fair share, SCHED_WEIGHT_* */
	struct sched_class_pol cp; /* classes and cap, sched_class.c */
};

/* The time a user held a GPU over a sliding window (a capped user's cap
 * window; an interactive user's budget window, a half-life wide): slots
 * of 1/SCHED_WIN_N of the window, slot k (time / width) at
 * k % SCHED_WIN_N. */
#define SCHED_WIN_N 100u
struct sched_win {
	uint64_t width;           /* ms per slot, 0: empty */
	uint64_t head;            /* the newest slot written */
	uint32_t ms[SCHED_WIN_N];
};

/* A user's recent GPU time on one GPU. Kept after the user's last client
 * leaves, until it has decayed away, so that reconnecting does not wipe
 * a user's history. */
struct sched_usage {
	uint32_t uid;
	struct sched_rec rec;
	struct sched_win iwin;    /* held as interactive while others waited,
				   * over the last half-life */
	int over;                 /* past its interactive budget */
	uint32_t n_held;          /* its members holding the GPU now */
	uint64_t held_since;      /* held from, not yet in `win` */
	struct sched_win win;     /* capped users: the cap window */
};

/* How many members of one uid a GPU has. */
struct sched_gpu_uid {
	uint32_t uid;
	uint32_t n;
};

struct sched_client {
	uint32_t id;
	uint64_t token;           /* its lock page token, 0: none */
	struct sched_cred cred;
	struct sched_uid *u;
	char label[VS_LABEL_MAX + 1];
	uint32_t weight;          /* fair share, SCHED_WEIGHT_* */
	uint32_t klass;           /* asked for, VS_CLASS_* */
	uint32_t proto;           /* its protocol version (0: not told) */
	struct sched_class_pol cp; /* its user's, copied from u */
	uint32_t slot;            /* its user's in the counters */
	void *user;
	struct dlink link;        /* s->clients */
	struct sched_member **m;  /* attached GPUs */
	size_t n_m, cap_m;
	uint64_t unshared_ms;     /* its VS_MSG_UNSHARED (sched_use.c) */
	uint32_t unshared_why;    /* 0: none */
};

struct sched_gpu {
	uint8_t uuid[VS_UUID_LEN];
	uint32_t index;           /* slot in s->gpus */
	uint32_t lslot;           /* its lock page slot + 1, 0: none */
	uint32_t shown;           /* the index status, --gpu and metrics
				   * use: the driver's, else `index` */
	int shown_nvml;           /* shown is the driver's (NVML) index */
	uint32_t mode;
	uint32_t tq_ms;
	uint64_t total_mem;       /* first member's claim, for reports */
	uint64_t capacity;        /* for reports; grants use the views */
	uint64_t cap_cfg;         /* configured cap, 0: none */
	int trusted;              /* cap_cfg is this GPU's own: every view */
	uint64_t drv_total;       /* the driver's report, 0: none */
	int vouched;              /* named in "gpus" or known to NVML when
				   * made: its record is never reused */
	uint64_t hcap;            /* smallest known view among the holders */
	size_t n_hcap;            /* holders whose view is hcap */
	struct sched_gpu_uid *uids;
	size_t n_uids, cap_uids;
	uint64_t total_fp;        /* every member */
	uint64_t held_fp;         /* holders */
	struct dlink members, queue, holders;
	size_t n_members, n_waiting, n_holders;
	size_t n_hard;            /* holders with a hard drop pending */
	size_t n_capped;          /* members whose user has a cap */
	int contended;            /* someone waits behind the holders */
	uint32_t policy;          /* SCHED_POLICY_* */
	uint32_t min_slice_ms;
	uint64_t slice_ms;        /* in force, as of the last admission */
	double swap_us;           /* average measured swap-in, 0: none */
	uint64_t swaps;           /* swap-ins measured */
	double cost_ms;           /* average time a preemption cost its holder */
	uint64_t costs;           /* preemptions measured */
	double icost_ms;          /* the same for preemptions whose time off
				   * the GPU had interactive turns in it:
				   * the class's, not in the slice */
	uint64_t icosts;
	uint32_t total_pct;       /* interactive_total_pct here, 1..100 */
	struct sched_win ciwin;   /* held as interactive while others
				   * waited, every user, over the budget's
				   * window */
	int total_over;           /* the class is past total_pct: its
				   * programs count as batch here */
	uint64_t hard_seq;        /* hard drops sent, ever */
	struct sched_usage *usage;
	size_t n_usage, cap_usage;
	struct sched_gpu_stats st; /* counters, sched_stat.c */
	uint64_t blocked;         /* admissions that left waiters queued */
	uint64_t opening;         /* the lock slot's open number, 0: closed */
	int use_known;            /* NVML has a view of it (sched_use.c) */
	uint64_t seen;            /* in a snapshot: the token found in the
				   * open word at the copy (a take not yet
				   * adopted); 0 elsewhere */
};

struct sched {
	struct sched_cfg cfg;
	struct sched_gpu_cfg *gcfg;
	sched_clock_fn clock;
	void *clock_arg;
	uint64_t frozen_now;      /* the clock of a snapshot */
	void *arena;              /* a snapshot's clients and members */
	struct sched_gpu **gpus;
	size_t n_gpus, cap_gpus;
	struct dlink clients;
	size_t n_clients;
	struct sched_uid **uids;
	size_t n_uids, cap_uids;
	uint32_t next_id;         /* sched_id.c */
	int ids_wrapped;          /* next_id went past 2^32 - 1 once */
	uint64_t next_seq;        /* of requests, for arrival order */
	struct sched_out *out;
	size_t n_out, cap_out;
	struct sched_stat_users su; /* users with a slot in the counters */
	struct vs_lock_page *lock; /* shared with the clients, NULL: none */
	struct vs_lock_words *words; /* its words */
	uint64_t n_openings;      /* openings of a word, ever: their numbers */
	struct sched_unshared_stats ust; /* sched_use.c */
};

/* sched_grant.c, for sched.c, sched_conf.c, sched_admin.c and
 * sched_tick.c: the decisions about a GPU (each settles its lock word
 * first), a member's queue entry and exit, and the end of a hold. */
void sched_admit(struct sched *s, struct sched_gpu *g);
void sched_enforce_fit(struct sched *s, struct sched_gpu *g, uint32_t reason);
void sched_settle(struct sched *s, struct sched_gpu *g);
void sched_wait_enter(struct sched_member *m);
void sched_wait_leave(struct sched_member *m);
void sched_unhold(struct sched *s, struct sched_member *m);
/* A drop that must be obeyed within the grace period, `why` a VS_DROP_*
 * reason or SCHED_DROP_FAIR (a quantum drop, counted apart); the outbox
 * entry it pushed, NULL if none (one was pending, or out of memory). */
struct sched_out *sched_hard_drop(struct sched *s, struct sched_member *m,
				  uint32_t why, uint64_t now);

/* sched_admin.c, for sched_conf.c: a GPU's new mode, told and applied */
void sched_gpu_mode(struct sched *s, struct sched_gpu *g, uint32_t mode);

/* sched_lock.c: the lock's pages (no transitions). close closes g's slot
 * and word and returns what the word held (VS_LOCK_CLOSED if nothing);
 * *opening is the number g was open with, 0 if it was closed. peek reads
 * the word without changing it. */
void     sched_lock_gpu_new(struct sched *s, struct sched_gpu *g);
uint64_t sched_lock_close(struct sched *s, struct sched_gpu *g,
			  uint64_t *opening);
void     sched_lock_open(struct sched *s, struct sched_gpu *g);
uint64_t sched_lock_peek(const struct sched *s, const struct sched_gpu *g);
/* The slot's priority share and count of interactive members (proto.h,
 * "Priority"): each stored only when it changes. */
void     sched_lock_prio(struct sched *s, struct sched_gpu *g, uint32_t pct,
			 uint32_t n);

/* sched_cap.c: capacity views (pure bookkeeping, no transitions) */
uint64_t sched_cap_min(uint64_t a, uint64_t b);  /* 0 is unknown */
void sched_cap_hold(struct sched_gpu *g, const struct sched_member *m);
void sched_cap_unhold(struct sched_gpu *g, const struct sched_member *m);
/* The capacity a group of the holders plus m must fit in (0: none known). */
uint64_t sched_cap_group(const struct sched_gpu *g, const struct sched_member *m);
/* Recompute every member's view, the holders' minimum and the report
 * fields, after cap_cfg, trusted or the membership changed. */
void sched_cap_refresh(struct sched_gpu *g);

/* sched_uid.c: per-uid accounting */
struct sched_uid *sched_uid_ref(struct sched *s, uint32_t uid);
void sched_uid_unref(struct sched *s, struct sched_uid *u);
/* Count a new member of g for its uid: 0, or VS_E_LIMIT past uid_gpus. */
int  sched_uid_gpu_add(struct sched *s, struct sched_gpu *g,
		       struct sched_client *c);
void sched_uid_gpu_del(struct sched_gpu *g, struct sched_client *c);
int  sched_uid_may_wait(const struct sched *s, const struct sched_client *c);

/* sched_fair.c: recent GPU time and queue order (pure bookkeeping) */
/* Charge every holder of g up to now. Out of memory, a user's record
 * may be missing: the member's own time is still charged. */
void sched_fair_charge(const struct sched *s, struct sched_gpu *g,
		       uint64_t now);
void sched_fair_charge_one(const struct sched *s, struct sched_member *m,
			   uint64_t now);
/* Put g's queue in the policy's order and number the places. */
void sched_fair_order(const struct sched *s, struct sched_gpu *g,
		      uint64_t now);
/* Number the places of g's queue in its order, 1 first. */
void sched_fair_number(struct sched_gpu *g);
/* Would waiter w preempt holder h (fair policy, now)? */
int  sched_fair_much_less(const struct sched *s, const struct sched_gpu *g,
			  const struct sched_member *w,
			  const struct sched_member *h, uint64_t now);
/* The slice in force on g, ms. */
uint64_t sched_fair_slice(const struct sched *s, const struct sched_gpu *g);
/* The most the slice may be on g, ms. */
uint64_t sched_fair_slice_max(const struct sched_gpu *g);
/* Recent time of a member and of its user on its GPU, ms, counting a
 * holder's time not yet charged. */
double sched_fair_recent(const struct sched *s, const struct sched_member *m,
			 uint64_t now);
double sched_fair_user_recent(const struct sched *s,
			      const struct sched_member *m, uint64_t now);
void sched_fair_swapped(struct sched_gpu *g, uint64_t us);
/* A holder's grant: what a preemption that took the GPU from it cost. */
void sched_fair_granted(const struct sched *s, struct sched_gpu *g,
			struct sched_member *m, uint64_t now);

/* sched_usage.c: a user's record on g, made if missing (NULL when out
 * of memory; records may move), or found (NULL if none). */
struct sched_usage *sched_usage_get(const struct sched *s, struct sched_gpu *g,
				    uint32_t uid, uint64_t now);
struct sched_usage *sched_usage_find(const struct sched_gpu *g, uint32_t uid);
/* A record's value decayed to now, ms; dt ms held up to now added to it;
 * what dt ms held up to now are worth now. */
double sched_rec_now(const struct sched *s, const struct sched_rec *r,
		     uint64_t now);
void sched_rec_add(const struct sched *s, struct sched_rec *r, uint64_t dt,
		   uint64_t now);
double sched_rec_accrued(const struct sched *s, uint64_t dt);

/* sched_class.c: classes, interactive budgets and caps (bookkeeping and
 * the drops they call for; grants stay admit's) */
/* The class a member would be granted in now. */
uint32_t sched_class_of(const struct sched *s, const struct sched_member *m);
/* The class in force: sched_class_of, or for a holder its grant's class
 * where that is lower (batch once its budget ran out). */
uint32_t sched_class_in_force(const struct sched *s,
			      const struct sched_member *m);
/* Pacing. An interactive program preempts a batch holder as soon as the
 * holder's queued work has drained, so a batch holder that shares its
 * GPU (mode not off) with a member whose class in force is interactive
 * is told to keep that work short: grant_flags gives VS_GRANTF_PACE for
 * such a grant to m (m->klass set), 0 otherwise; paced says whether g
 * has such a member beside another one, which keeps its lock word shut
 * (every take then hears the flag in its GRANT). */
uint32_t sched_class_grant_flags(const struct sched *s,
				 const struct sched_member *m);
int sched_class_paced(const struct sched *s, const struct sched_gpu *g);
/* Priority at kernel granularity: while a member whose class in force is
 * interactive is attached to g (mode not off), the share of a batch
 * program's time that its gate may hold submissions back for that
 * member's work: the largest interactive budget among such members; 0
 * when there is none. *n: how many such members. */
uint32_t sched_class_prio(const struct sched *s, const struct sched_gpu *g,
			  uint32_t *n);
/* Mode on: waiter m may hold g beside its holders when the group keeps
 * at most one batch member (the rest interactive), fits the capacity,
 * and every gate in it honours priority (protocol SCHED_PRIO_PROTO):
 * the gates then keep the batch member's work off the GPU while the
 * interactive work runs, so that the interactive program needs no
 * hand-off where memory stays resident. cohold_ok: the same test for a
 * group counted elsewhere (batch members, footprint sum, smallest view),
 * m its newest member. */
#define SCHED_PRIO_PROTO 8u
int sched_class_cohold(const struct sched *s, const struct sched_gpu *g,
		       const struct sched_member *m);
int sched_class_cohold_ok(const struct sched *s, const struct sched_member *m,
			  unsigned batch, uint64_t sum, uint64_t cap);
/* May a capped user's waiter be granted now? */
int  sched_class_capped(const struct sched *s, const struct sched_member *m,
			uint64_t now);
void sched_class_granted(struct sched *s, struct sched_member *m,
			 uint64_t now);
void sched_class_unheld(struct sched *s, struct sched_member *m,
			uint64_t now);
/* Interactive time of a holder charged while others wait. */
void sched_class_charge(const struct sched *s, struct sched_member *m,
			struct sched_usage *u, uint64_t dt, uint64_t now);
/* At each admission: first, after the charge and before the order, the
 * budgets of g's members as of now; after the grants, for each holder
 * the drop that classes and caps call for, SCHED_DROP_* or 0 (`waiters`:
 * someone that may be granted waits; `preempt`: that one is interactive
 * and was not granted). A holder past its budget, or whose user lost the
 * class, becomes batch there. */
void sched_class_budgets(const struct sched *s, struct sched_gpu *g,
			 uint64_t now);
uint32_t sched_class_drop(const struct sched *s, struct sched_member *h,
			  int waiters, int preempt, uint64_t now);
/* When g's classes or caps next need an admission, or SCHED_NO_DEADLINE. */
uint64_t sched_class_deadline(const struct sched *s, const struct sched_gpu *g,
			      uint64_t now);
/* A member of c joins or leaves g (the count of capped members). */
void sched_class_member(struct sched_gpu *g, const struct sched_client *c,
			int delta);
/* Views: the share of its budget a member's user spent, and of its cap
 * window, in percent. */
double sched_class_budget_used(const struct sched *s,
			       const struct sched_member *m, uint64_t now);
double sched_class_cap_used(const struct sched *s,
			    const struct sched_member *m, uint64_t now);
/* The share of g the interactive class used over the window, percent. */
double sched_class_total_used(const struct sched *s, const struct sched_gpu *g,
			      uint64_t now);
/* interactive_total_pct for a GPU: its entry in gpus, else the default. */
uint32_t sched_class_total_cfg(const struct sched_cfg *cfg,
			       const uint8_t uuid[VS_UUID_LEN]);

/* sched_id.c: a new client's id, never one a live client holds; 0 when
 * memory is short. */
uint32_t sched_id_next(struct sched *s);

/* sched_stat.c: counters (pure bookkeeping, no transitions) */
/* The counters' slot of a uid, taken on its first call. */
uint32_t sched_stat_slot(struct sched *s, uint32_t uid);
/* A waiter is granted (before its `since` becomes the grant's time). */
void sched_stat_granted(struct sched_gpu *g, const struct sched_member *m,
			uint64_t now);
/* A holder lets go, is revoked or leaves. */
void sched_stat_unheld(struct sched_gpu *g, const struct sched_member *m,
		       uint64_t now);
void sched_stat_hist(struct sched_hist *h, uint64_t ms);
void sched_stat_swapped(struct sched_gpu *g, uint64_t us, uint64_t bytes);
/* 1 when the configuration's "gpus" names the GPU (it is real). */
int sched_gpu_named(const struct sched *s, const uint8_t uuid[VS_UUID_LEN]);

/* sched_view.c */
struct sched_out *sched_out_push(struct sched *s, enum sched_out_kind kind,
				 const struct sched_member *m);
void sched_out_purge(struct sched *s, uint32_t client_id);
/* The client's member of the GPU with this UUID, NULL if not attached. */
struct sched_member *sched_member_find(const struct sched_client *c,
				       const uint8_t uuid[VS_UUID_LEN]);

#endif
