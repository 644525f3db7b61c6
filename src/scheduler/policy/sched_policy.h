/*
 * The scheduling policy: one time-quantum queue per GPU, ordered by fair
 * share between users (or first come, first served). A pure module:
 * it holds state, reads time only through the injected clock and speaks
 * only by appending to its outbox, which the daemon drains after each call.
 * No sockets, timers or files here, so unit tests drive every transition
 * with a fake clock.
 *
 * Per GPU, a client (one connection) is idle, waiting or holding. Mode
 * `off` grants every request at once; `on` has one holder; `auto` grants
 * the longest prefix of waiters, in queue order, whose footprints fit
 * together with the holders in the GPU's capacity.
 *
 * Queue order (policy `fair`, the default): by the GPU time the waiter's
 * user received recently on this GPU (held time, decayed with a half-life,
 * divided by the user's weight), then by the waiter's own recent time,
 * then by arrival. A holder that has held for its slice is asked to
 * release (a hard drop) when a waiter of much less recent time is queued:
 * the slice is the GPU's min_slice_ms, or longer when what preemptions
 * measured on this GPU cost their holders (the preempting turns, and
 * swap-ins under oversubscription) would otherwise take more than
 * preempt_budget_pct of the holder's time.
 * Policy `fcfs` orders by arrival and preempts only at the quantum.
 *
 * Classes: a client that asks for the interactive class, whose user may
 * have it and is within its budget on the GPU, goes before every batch
 * waiter and preempts batch holders at once (no slice). A capped user's
 * programs are not granted past their share of the GPU's wall time over
 * the cap window, even on an idle GPU.
 * docs/scheduler.md has the rules with a worked example.
 */
#ifndef VSHARE_SCHED_POLICY_H
#define VSHARE_SCHED_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "vshare/proto.h"

#define SCHED_TQ_MIN_S    VS_TQ_MIN_S
#define SCHED_TQ_MAX_S    VS_TQ_MAX_S
/* A footprint larger than this is clamped, so that sums over every client
 * of a GPU cannot overflow 64 bits (16 TiB per client; see max_clients). */
#define SCHED_FP_MAX      (1ull << 44)
#define SCHED_NO_DEADLINE UINT64_MAX
/* GPUs are kept after their last client leaves (their index is the order
 * of first attach), so a peer attaching made-up UUIDs must not grow the
 * table without bound; a full table reuses the slot of a GPU that has no
 * client. */
#define SCHED_MAX_GPUS        1024
#define SCHED_MAX_CLIENT_GPUS 64

/* Per-GPU settings from the configuration, applied when the GPU first
 * attaches. `set` says which fields are given. */
#define SCHED_GCFG_TQ   0x1u
#define SCHED_GCFG_MODE 0x2u
#define SCHED_GCFG_CAP  0x4u
#define SCHED_GCFG_SLICE 0x8u
#define SCHED_GCFG_TOTAL 0x10u
struct sched_gpu_cfg {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t set;
	uint32_t tq_ms;
	uint32_t mode;
	uint32_t min_slice_ms;
	uint64_t capacity;  /* bytes; 0: the reported memory */
	uint32_t total_pct; /* interactive_total_pct */
};

/* Queue order, struct sched_cfg's policy. */
#define SCHED_POLICY_FAIR 0u
#define SCHED_POLICY_FCFS 1u
/* The range of min_slice_ms (config and vsharectl set-slice). */
#define SCHED_SLICE_MIN_MS 10u
#define SCHED_SLICE_MAX_MS 3600000u
/* The slice in force is at most this many times min_slice_ms, whatever
 * preemptions measured: a long slice is a long wait for every short job,
 * and what was measured (a holder's time off the GPU) is a claim of the
 * programs that took it, not a fact of the card. */
#define SCHED_SLICE_CAP_MULT 4u

typedef uint64_t (*sched_clock_fn)(void *arg); /* monotonic milliseconds */
/* The driver's own report of a GPU's memory in bytes (NVML), 0 if it
 * does not know the GPU. Asked once, when a GPU record is made. */
typedef uint64_t (*sched_total_fn)(void *arg, const uint8_t uuid[VS_UUID_LEN]);
/* The driver's index of a GPU (NVML's, which nvidia-smi shows), -1 if it
 * does not know the GPU. Asked once, when a GPU record is made. */
typedef int64_t (*sched_index_fn)(void *arg, const uint8_t uuid[VS_UUID_LEN]);

/*
 * Capacity. A per-GPU capacity from the configuration is trusted: every
 * client of that GPU is scheduled against it, whatever it reports. Else,
 * when the driver reports the GPU's memory (total_fn), that report capped
 * by the default capacity is every client's view. Else
 * each client's own report of the GPU's memory (capped by the default
 * `capacity`) is its view, and a group of co-runners must fit in the
 * smallest view among its members: a client that claims less only
 * serializes itself, one that claims more cannot make others co-run
 * beyond their own view, and nothing outlives the client that said it.
 */
struct sched_cfg {
	uint32_t tq_ms;             /* default quantum */
	uint32_t mode;              /* default mode, VS_MODE_* */
	uint64_t capacity;          /* cap in bytes, 0: the reported memory */
	/* Per-uid limits (uid 0 is exempt; 0: no limit): distinct GPUs the
	 * clients of one uid attach, and their requests waiting at once. */
	uint32_t uid_gpus;
	uint32_t uid_requests;
	uint32_t grace_ms;          /* after a hard drop, before it counts as hung */
	int      skip_unresponsive; /* revoke a hung holder's grant */
	uint32_t policy;            /* SCHED_POLICY_* */
	uint32_t min_slice_ms;      /* default slice before a fair preemption */
	uint32_t halflife_ms;       /* of the recent GPU time, > 0 */
	uint32_t preempt_pct;       /* a waiter preempts below this % of the
				     * holder's recent time, 1..100 */
	uint32_t preempt_budget_pct; /* most of a holder's GPU time that
				      * preemptions (turns, swaps) may take */
	const struct sched_gpu_cfg *gpus; /* copied by sched_new */
	size_t   n_gpus;
	uint32_t budget_pct;        /* default interactive budget, 1..100 */
	uint32_t total_pct;         /* the interactive class's share of a
				     * GPU while others wait, all users
				     * together, 1..100 (0: 100); per GPU
				     * in gpus too */
	uint32_t cap_window_ms;     /* of max_share_pct, > 0 */
	sched_total_fn total_fn;    /* NULL: no driver report */
	void    *total_arg;
	sched_index_fn index_fn;    /* NULL: indexes are the attach order */
};


struct sched;
struct sched_client;
struct sched_gpu;
struct sched_member;

/* What the daemon must do after a call. */
enum sched_out_kind {
	SCHED_OUT_MSG = 1,      /* send `type`/`u` to client `client_id` */
	SCHED_OUT_UNRESPONSIVE, /* a holder ignored a drop for grace_ms */
	SCHED_OUT_TOOK,         /* a take through the lock page became a
				 * grant (`u.grant`): logged, nothing sent;
				 * kept when its client goes (user NULL) */
};

struct sched_out {
	enum sched_out_kind kind;
	uint32_t client_id;
	void    *user;          /* the client's user pointer */
	uint16_t type;          /* VS_MSG_GRANT, _DROP or _MODE */
	int      revoked;       /* UNRESPONSIVE: the grant was taken back */
	uint32_t why;           /* DROP: VS_DROP_* or SCHED_DROP_* (those
				 * go on the wire as QUANTUM: release now) */
	uint8_t  uuid[VS_UUID_LEN];
	union {
		struct vs_grant grant;
		struct vs_drop  drop;
		struct vs_mode  mode;
	} u;
};

/* Peer identity, from SO_PEERCRED: never from the payload. */
struct sched_cred {
	int32_t pid;
	uint32_t uid;
	uint32_t gid;
};

enum sched_state { SCHED_ST_IDLE = 0, SCHED_ST_WAITING, SCHED_ST_HOLDING };

/* Lifecycle. sched_new copies cfg (and its GPU table). */
struct sched *sched_new(const struct sched_cfg *cfg, sched_clock_fn clock,
			void *clock_arg);
void sched_free(struct sched *s);
/* A reloaded configuration. `old` is the configuration loaded before
 * (not what admins changed since): a quantum, mode or capacity whose
 * value for a GPU differs between old and cfg applies to that GPU now,
 * and a default that differs becomes the default for GPUs attached later;
 * grace and skip_unresponsive apply at once. 0, or -1 when out of memory
 * (nothing changed). */
int sched_reconfigure(struct sched *s, const struct sched_cfg *old,
		      const struct sched_cfg *cfg);
/* The quantum and mode in force for GPUs attached from now on: the
 * configuration's, or what an admin set for all GPUs since. */
void sched_defaults(const struct sched *s, uint32_t *tq_ms, uint32_t *mode);
uint64_t sched_now(const struct sched *s);

/* Clients. A client exists from HELLO to disconnect. */
struct sched_client *sched_client_new(struct sched *s,
				      const struct sched_cred *cred,
				      const char *label, void *user);
/* Disconnect: its grants and queue places are gone at once. */
void sched_client_del(struct sched *s, struct sched_client *c);
uint32_t sched_client_id(const struct sched_client *c);
/* A user's share in the fair share between users, relative to others
 * (1 unless the admin's per-user or per-group policy says otherwise; 0
 * is taken as 1, SCHED_WEIGHT_MAX at most). The weight is the user's,
 * not the connection's: setting it through any client of a uid sets it
 * for every client of that uid. The daemon sets it at registration and
 * again when a reload or vsharectl changes the policy. */
#define SCHED_WEIGHT_DEFAULT 1
#define SCHED_WEIGHT_MAX     1000
void sched_client_set_weight(struct sched *s, struct sched_client *c,
			     uint32_t weight);
/* The same for a uid that has clients now: 0, or VS_E_NOGPU when the uid
 * has none (a weight for later users belongs in the configuration). */
int sched_uid_set_weight(struct sched *s, uint32_t uid, uint32_t weight);
/* Every user's weight at once, from fn (the largest among a user's
 * clients, which may differ in gid), in one pass over the clients. */
typedef uint32_t (*sched_weight_fn)(void *arg, uint32_t uid, uint32_t gid);
void sched_reweigh(struct sched *s, sched_weight_fn fn, void *arg);

/*
 * Classes and caps. A client asks for a class at registration
 * (sched_client_set_class, VS_CLASS_*). What a user may have comes from
 * the admin's policy, set on each of its clients by the daemon at
 * registration and at each reload (sched_client_set_policy; every client
 * of a uid gets the same): whether its programs may be
 * interactive, the share of a GPU's time (held while others wait, decayed
 * with the half-life) they may spend as interactive before counting as
 * batch until it decays, and a cap on the share of a GPU's wall time over
 * the last cap_window_ms that they hold at all (0: none).
 */
#define SCHED_CLASS_N 2u
struct sched_class_pol {
	int      interactive;   /* may have the interactive class */
	uint32_t budget_pct;    /* 1..100 */
	uint32_t cap_pct;       /* 0: no cap, else 1..100 */
};
void sched_client_set_class(struct sched_client *c, uint32_t klass);
/* The protocol version the client speaks: from 8 its gate honours the
 * lock page's priority, which lets it share a GPU in mode on with an
 * interactive program (sched_class_cohold). */
void sched_client_set_proto(struct sched_client *c, uint32_t version);
void sched_client_set_policy(struct sched *s, struct sched_client *c,
			     const struct sched_class_pol *p);

/* Client requests. Each returns 0 or a negative VS_E_* code (the message
 * was not valid in this state; nothing changed). sched_attach refuses
 * with VS_E_LIMIT past SCHED_MAX_CLIENT_GPUS or the uid's uid_gpus, with
 * VS_E_FULL when SCHED_MAX_GPUS GPUs all have clients; sched_request
 * with VS_E_LIMIT past the uid's uid_requests. */
int sched_attach(struct sched *s, struct sched_client *c,
		 const uint8_t uuid[VS_UUID_LEN], uint64_t total_mem);
int sched_footprint(struct sched *s, struct sched_client *c,
		    const uint8_t uuid[VS_UUID_LEN], uint64_t managed,
		    uint64_t pinned);
int sched_request(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN]);
int sched_released(struct sched *s, struct sched_client *c,
		   const uint8_t uuid[VS_UUID_LEN]);
/* A holder's report of the swap-in its last grant cost (the prefetch of
 * its managed memory on an oversubscribed grant): `us` microseconds for
 * `bytes` bytes. It counts in the cost of a preemption under
 * oversubscription (preempt_budget_pct). VS_E_NOGPU, or VS_E_STATE unless holding. */
int sched_swapped(struct sched *s, struct sched_client *c,
		  const uint8_t uuid[VS_UUID_LEN], uint64_t us, uint64_t bytes);

/*
 * Use, not only holding (sched_use.c): what the clients did with what
 * they held, for status and the metrics; nothing here changes a
 * decision. sched_usage: a client's VS_MSG_USAGE (busy and idle time
 * while it held uuid, and its swap-out since its last report): the
 * times are clamped so that a member's reported busy and idle never add
 * up to more than the time the scheduler saw it hold the GPU, the bytes
 * to SCHED_FP_MAX. VS_E_NOGPU when it has not attached uuid.
 * sched_unshared: its VS_MSG_UNSHARED (ms it ran unshared before this
 * connection, VS_UNSHARED_* why): 1 when taken, 0 for a repeat (only
 * the first counts), VS_E_INVAL for an unknown reason.
 * sched_gpu_use: the driver's (NVML's) view of uuid: known 0, NVML has
 * none (every member's device memory and utilisation unknown);
 * otherwise the n processes it lists, each member's from its pid's
 * entry (none: 0 bytes, utilisation unknown).
 */
#define SCHED_UTIL_UNKNOWN (-1)
struct sched_proc_use {
	int32_t  pid;
	uint64_t mem;           /* device memory in use, bytes */
	int32_t  sm_pct;        /* SM utilisation 0..100, or SCHED_UTIL_UNKNOWN */
};
int sched_usage(struct sched *s, struct sched_client *c,
		const uint8_t uuid[VS_UUID_LEN], uint64_t busy_ms,
		uint64_t idle_ms, uint64_t swapout_bytes, uint64_t swapout_us);
int sched_unshared(struct sched *s, struct sched_client *c, uint64_t ms,
		   uint32_t reason);
void sched_gpu_use(struct sched *s, const uint8_t uuid[VS_UUID_LEN], int known,
		   const struct sched_proc_use *p, size_t n);
/* Programs that told they ran unshared, and for how long, by reason
 * (VS_UNSHARED_*, index 0 unused). */
struct sched_unshared_stats {
	uint64_t runs[VS_UNSHARED_MAX + 1];
	uint64_t ms[VS_UNSHARED_MAX + 1];
};
const struct sched_unshared_stats *sched_unshared_stats(const struct sched *s);

/* Time: handle every deadline that is due at the clock's now; the next
 * one, absolute, or SCHED_NO_DEADLINE. */
void sched_tick(struct sched *s);

/*
 * The lock page (include/vshare/proto.h, "The lock page"). sched_lock_set
 * gives the policy the pages it publishes free GPUs in (NULL: none, every
 * grant goes through REQUEST); the I/O layer owns the memory. A client's
 * token keys the mark it writes into a word it takes (vs_lock_mark): 0
 * until the I/O layer gave it one (sched_client_set_token, after the
 * client was sent it), and a client without one takes nothing.
 * sched_token_in_use: whether a client has t already (tokens are
 * unique). sched_took: the client says it took uuid through the page
 * (VS_MSG_TOOK): 0 when the scheduler found its mark in the word (now,
 * or at an earlier decision) and it holds the GPU still, else VS_E_STATE
 * (a take nobody saw: the client must give the GPU back and ask) or
 * VS_E_NOGPU. Only the loop's own decisions adopt a take: a status or
 * metrics report reads the word (a snapshot's sched_member_info.took)
 * and changes nothing.
 */
void sched_lock_set(struct sched *s, struct vs_lock_page *page,
		    struct vs_lock_words *words);
uint64_t sched_client_token(const struct sched_client *c);
void sched_client_set_token(struct sched_client *c, uint64_t t);
int sched_token_in_use(const struct sched *s, uint64_t t);
int sched_took(struct sched *s, struct sched_client *c,
	       const uint8_t uuid[VS_UUID_LEN]);
uint64_t sched_next_deadline(const struct sched *s);

/* The one GPU an admin request names (by index, as `--gpu N` takes it,
 * or by UUID); NULL for all GPUs or when there is no such GPU. */
const struct sched_gpu *sched_gpu_target(struct sched *s, uint32_t target,
					 uint32_t index,
					 const uint8_t uuid[VS_UUID_LEN]);
/* Admin. `target`/`index`/`uuid` as in struct vs_admin_set. A change to
 * all GPUs also becomes the default for GPUs attached later. Returns the
 * number of GPUs changed (>= 0) or VS_E_NOGPU / VS_E_INVAL. */
int sched_set_tq(struct sched *s, uint32_t target, uint32_t index,
		 const uint8_t uuid[VS_UUID_LEN], uint32_t tq_s);
int sched_set_mode(struct sched *s, uint32_t target, uint32_t index,
		   const uint8_t uuid[VS_UUID_LEN], uint32_t mode);
/* The minimum slice, in ms within SCHED_SLICE_MIN_MS..MAX_MS. */
int sched_set_slice(struct sched *s, uint32_t target, uint32_t index,
		    const uint8_t uuid[VS_UUID_LEN], uint32_t ms);
/* The queue order of every GPU, SCHED_POLICY_*: 0 or VS_E_INVAL. */
int sched_set_policy(struct sched *s, uint32_t policy);

/* Outbox. Entries stay valid until sched_out_clear or the next call. */
size_t sched_out_count(const struct sched *s);
const struct sched_out *sched_out_at(const struct sched *s, size_t i);
void sched_out_clear(struct sched *s);

/* A frozen copy for the read-only views below (and nothing else), so
 * that a status report can be rendered on another thread while the
 * policy goes on; NULL when out of memory. Free it with sched_snap_free,
 * on any thread. */
struct sched *sched_snapshot(const struct sched *s);
void sched_snap_free(struct sched *snap);

/* Read-only views for status reports and tests. */
size_t sched_gpu_count(const struct sched *s);
const struct sched_gpu *sched_gpu_at(const struct sched *s, size_t i);
const struct sched_gpu *sched_gpu_find(const struct sched *s,
				       const uint8_t uuid[VS_UUID_LEN]);
struct sched_gpu_info {
	const uint8_t *uuid;
	uint32_t index;         /* the driver's (nvidia-smi's), else slot */
	uint32_t slot;          /* its place in the GPU table (lock page) */
	int      index_nvml;    /* index is the driver's */
	uint32_t mode;
	uint32_t tq_ms;
	uint64_t total_mem;     /* the first attached client's report */
	uint64_t capacity;      /* configured, or from total_mem */
	int      trusted;       /* capacity configured or from the driver */
	uint64_t driver_total;  /* the driver's report, 0: none */
	uint64_t footprint;     /* all attached clients */
	uint64_t held;          /* footprint of the holders */
	size_t   n_holders;
	size_t   n_waiting;
	size_t   n_members;
	uint32_t policy;        /* SCHED_POLICY_* */
	uint32_t min_slice_ms;  /* configured */
	uint32_t slice_ms;      /* in force: min_slice_ms or the budget's */
	uint64_t cost_ms;       /* measured cost of a preemption (average) */
	uint64_t swap_us;       /* measured swap-in per grant (average), 0: none */
	uint32_t slice_max_ms;  /* the most the slice may grow to */
	uint64_t class_cost_ms; /* measured cost of a fair preemption whose
				 * holder's time off the GPU had interactive
				 * turns in it (average; not in the slice) */
	uint32_t total_pct;     /* interactive_total_pct in force here */
	int      total_over;    /* past it: every program here is batch */
	int      use_known;     /* NVML gave its processes (sched_gpu_use) */
};
void sched_gpu_info(const struct sched_gpu *g, struct sched_gpu_info *out);
/* What the interactive class used of g over the budget's window, in
 * percent of the GPU (all users, the open grants included). */
double sched_gpu_total_used(const struct sched *s, const struct sched_gpu *g);
/* Holders in grant order, waiters in queue order (the order of the
 * policy at the snapshot's or the call's time); NULL past the end. */
const struct sched_client *sched_gpu_holder(const struct sched_gpu *g, size_t i);
const struct sched_client *sched_gpu_waiter(const struct sched_gpu *g, size_t i);

/*
 * Counters of what the policy decided, for the metrics
 * (src/scheduler/daemon/metrics.c). Plain data kept in the policy's
 * state as it decides, read through the views below: counting is no I/O.
 *
 * GPU time held is counted per user, never per client: the first
 * SCHED_STAT_USERS users to register since the start have a slot each,
 * and every later user shares the last slot, SCHED_STAT_OTHER, so that
 * the number of series stays bounded however many users come and go.
 */
#define SCHED_STAT_USERS 64u
#define SCHED_STAT_OTHER SCHED_STAT_USERS
/* Histogram bounds in ms (Prometheus's `le`, inclusive): from the
 * millisecond of a free GPU to the minutes of a long quantum. */
#define SCHED_HIST_N 17
extern const uint32_t sched_hist_le_ms[SCHED_HIST_N];
struct sched_hist {
	uint64_t bucket[SCHED_HIST_N + 1]; /* not cumulative; the last one
					    * counts what is above every bound */
	uint64_t count;
	uint64_t sum_ms;
};
/* A fair preemption: on the wire a quantum drop, counted apart. */
#define SCHED_DROP_FAIR 5u
/* An interactive waiter preempted a batch holder (a quantum drop too). */
#define SCHED_DROP_CLASS 6u
/* An interactive holder spent its budget while others waited. */
#define SCHED_DROP_BUDGET 7u
/* A capped user's holder reached its share of the window. */
#define SCHED_DROP_CAP  8u
/* An interactive holder past its GPU's interactive_total_pct (the class
 * as a whole) while others waited. */
#define SCHED_DROP_TOTAL 9u
#define SCHED_DROP_N    10u /* drops[] index: VS_DROP_* or SCHED_DROP_* */
struct sched_gpu_stats {
	uint64_t grants[2];             /* by VS_GRANT_* kind */
	uint64_t class_grants[SCHED_CLASS_N]; /* by class at the grant */
	uint64_t took;                  /* of those, taken through the lock page */
	uint64_t lock_resets;           /* open lock words closed that held
					 * neither the opening nor the mark of
					 * an idle member */
	uint64_t lock_tampered;         /* closed lock words found written
					 * (a value written over a held or
					 * closed GPU's word: it took nothing) */
	uint64_t took_refused;          /* TOOKs of takes nobody saw */
	uint64_t handoffs;              /* grants to a waiter that had to wait
					 * for holders to release */
	uint64_t drops[SCHED_DROP_N];   /* drop requests by reason; [0] unused */
	uint64_t unresponsive;          /* holders past the grace of a drop */
	uint64_t revocations;           /* of those, grants taken back */
	uint64_t swapins;               /* VS_MSG_SWAPPED reports taken */
	uint64_t swap_us, swap_bytes;   /* their sums (us clamped to the quantum) */
	struct sched_hist wait[SCHED_CLASS_N]; /* request to grant, by class */
	struct sched_hist hold[SCHED_CLASS_N]; /* grant to release (or loss) */
	uint64_t held_ms[SCHED_STAT_USERS + 1]; /* GPU time held, by user slot */
	/* Of that, what the holders reported busy and idle (VS_MSG_USAGE),
	 * by user slot, and their swap-outs (sched_use.c). */
	uint64_t busy_ms[SCHED_STAT_USERS + 1];
	uint64_t idle_ms[SCHED_STAT_USERS + 1];
	uint64_t swapouts, swapout_bytes, swapout_us;
	uint64_t class_held_ms[SCHED_CLASS_N]; /* GPU time held, by the class
						* in force while held */
};
/* The users that have slots, slot i for uid[i]. */
struct sched_stat_users {
	uint32_t n;
	uint32_t uid[SCHED_STAT_USERS];
};
/* A GPU's counters, with the time its holders held since their last
 * charge (so that a long grant counts while it lasts). */
void sched_gpu_stats(const struct sched *s, const struct sched_gpu *g,
		     struct sched_gpu_stats *out);
const struct sched_stat_users *sched_stat_users(const struct sched *s);
/* 1 when NVML or the configuration's "gpus" vouch for the GPU: only
 * those have series of their own (a made-up UUID adds none). */
int sched_gpu_vouched(const struct sched *s, const struct sched_gpu *g);

/* Clients in order of arrival: iterate from sched_client_first. */
const struct sched_client *sched_client_first(const struct sched *s);
const struct sched_client *sched_client_next(const struct sched *s,
					    const struct sched_client *c);
size_t sched_client_count(const struct sched *s);
struct sched_client_info {
	uint32_t id;
	struct sched_cred cred;
	const char *label;
	size_t n_gpus;
	uint32_t klass;         /* asked for, VS_CLASS_* */
	uint64_t unshared_ms;   /* it ran unshared before it connected, */
	uint32_t unshared_why;  /* VS_UNSHARED_*, 0: it did not say so */
	uint32_t slot;          /* its user's in the counters */
};
/* What one uid's clients use now, against the per-uid limits. */
struct sched_uid_info {
	uint32_t n_clients;
	uint32_t n_gpus;        /* distinct GPUs attached */
	uint32_t n_waiting;     /* requests waiting */
};
/* 0, or -1 when the uid has no client. */
int sched_uid_info(const struct sched *s, uint32_t uid,
		   struct sched_uid_info *out);
void sched_client_info(const struct sched_client *c,
		       struct sched_client_info *out);
struct sched_member_info {
	const uint8_t *uuid;
	uint64_t managed;
	uint64_t pinned;
	uint64_t capacity;      /* its view: see struct sched_cfg */
	enum sched_state state;
	int      revoked;       /* grant taken back after a hang */
	int      took;          /* in a snapshot: it took the GPU through the
				 * lock page, and the scheduler has not
				 * adopted the take yet (it will at its next
				 * decision about the GPU, or at the TOOK) */
	uint64_t held_ms;       /* in the current grant, 0 unless holding */
	uint64_t waited_ms;     /* in the current wait, 0 unless waiting */
	/* Fair share, on this GPU: recent GPU time (held, decayed) of the
	 * client and of its user, and the user's weight. */
	uint64_t recent_ms;
	uint64_t user_recent_ms;
	uint32_t weight;
	/* Its class: asked for, and in force now (VS_CLASS_*); the share
	 * of its user's interactive budget spent on this GPU, and its
	 * user's cap and what it used of the cap window, in percent of the
	 * GPU (cap 0: none). */
	uint32_t klass_want;
	uint32_t klass;
	double   budget_used_pct;
	uint32_t budget_pct;
	uint32_t cap_pct;
	double   cap_used_pct;
	/* The GPU's bound on the interactive class as a whole, and what the
	 * class used of the window (the budget's), in percent of the GPU. */
	uint32_t total_pct;
	double   total_used_pct;
	/* A waiter: why it waits (SCHED_WHY_*), its place in the queue
	 * (1 first), and a rough bound on the time to its grant in ms
	 * (SCHED_ETA_UNKNOWN when nothing bounds it). */
	uint32_t why;
	uint32_t position;
	uint64_t eta_ms;
	/* Use (sched_use.c): device memory in use and SM utilisation as
	 * NVML saw its process (use_known 0: NVML has no view of the GPU),
	 * GPU time it held since it attached, what it reported of it as
	 * busy and idle, and the bytes it swapped in and out. */
	int      use_known;
	uint64_t dev_mem;
	int32_t  sm_pct;        /* or SCHED_UTIL_UNKNOWN */
	uint64_t held_total_ms;
	uint64_t busy_ms;
	uint64_t idle_ms;
	uint64_t swapin_bytes;
	uint64_t swapout_bytes;
};
#define SCHED_ETA_UNKNOWN UINT64_MAX
/* Why a waiter waits, the first reason that applies. */
#define SCHED_WHY_NONE     0u /* not waiting */
#define SCHED_WHY_BEHIND   1u /* others are ahead of it in the queue */
#define SCHED_WHY_SLICE    2u /* first in line; the holder keeps its slice,
			       * then is asked to release */
#define SCHED_WHY_QUANTUM  3u /* first in line; the holder keeps the GPU to
			       * its quantum's end (or until idle) */
#define SCHED_WHY_RELEASE  4u /* the holder was asked to release now */
#define SCHED_WHY_FIT      5u /* it does not fit beside the holders, who
			       * release when idle or at the quantum */
#define SCHED_WHY_CAP      6u /* its user used its cap of the window */
const char *sched_why_name(uint32_t why);
/* Why a drop was asked for, in words, for the log (VS_DROP_* or
 * SCHED_DROP_*). */
const char *sched_drop_text(uint32_t why);
/* -1 past the end. */
int sched_client_gpu(const struct sched *s, const struct sched_client *c,
		     size_t i, struct sched_member_info *out);
/* What a waiting client is told of its wait (VS_MSG_WAITING): its place
 * and the bound of sched_member_info, and who holds the GPU (the first
 * holder in grant order, NULL if none). All zero when c does not wait for
 * the GPU; VS_E_NOGPU when c has not attached it. */
struct sched_wait_info {
	uint32_t position;
	uint32_t n_waiting;
	uint32_t gpu_index;
	uint32_t n_holders;
	const struct sched_client *holder;
	uint64_t held_ms;
	uint64_t waited_ms;
	uint64_t eta_ms;
};
int sched_wait_info(const struct sched *s, const struct sched_client *c,
		    const uint8_t uuid[VS_UUID_LEN], struct sched_wait_info *out);
/* State of a client on a GPU (SCHED_ST_IDLE if not attached). */
enum sched_state sched_state_of(const struct sched_client *c,
				const uint8_t uuid[VS_UUID_LEN]);

#endif
