/*
 * The gate's internal state (gate*.c). Nothing outside the gate includes
 * it, except the gate's unit tests. It holds lock state only: what the
 * scheduler said and what was sent to it is the client's (client_int.h).
 *
 * Locking: each GPU's gate has one mutex. Its hot fields (state, in-flight
 * count, activity stamp) are atomics that the fast path reads and writes
 * without the mutex; every change of `state` happens with the mutex held,
 * so a slow-path thread holding it sees a stable state.
 */
#ifndef VSHARE_GATE_INT_H
#define VSHARE_GATE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "gate.h"
#include "gate_ctl.h"
#include "vshare/proto.h"

#define GATE_CLOSED   0   /* no lock: entrants block (slow path) */
#define GATE_OPEN     1   /* lock held or running unshared: fast path */
#define GATE_DRAINING 2   /* releasing: entrants block, in-flight drains */

#define GATE_TOKEN_NONE (-1)

/* The in-flight count is spread over shards, one cache line each, and a
 * thread always uses the same one: threads that submit at the same time
 * do not fight over one line. The total is the sum of the shards. */
#define GATE_SHARDS 16

struct gate_shard {
	long     inflight;      /* calls inside the bracket; atomic */
	uint64_t last_ms;       /* coarse time of the last exit; atomic */
	uint32_t gap_ms;        /* pauses within bursts, decayed; atomic */
	uint32_t gap_n;         /* pauses learned, up to GATE_GAP_SAMPLES */
	/* The program's own waits for its work (gate_sync_begin): threads
	 * inside one, and the coarse time its work was last seen
	 * unfinished (a wait that lasted, a query not ready); atomics. */
	long     syncs;
	uint64_t unfinished_ms;
} __attribute__((aligned(64)));
/* One line per shard: a submission touches only its own. */
_Static_assert(sizeof(struct gate_shard) == 64, "a gate shard is one line");

/* Pauses between exits shorter than this are a program's pauses within
 * a burst (gate_exit learns them); longer ones end a burst. Until
 * GATE_GAP_SAMPLES of them are learned the program's rhythm is unknown. */
#define GATE_GAP_LEARN_MS 1000u
#define GATE_GAP_SAMPLES  4u

/* An interactive program's mark behind its latest submission to one
 * stream (gate_prio.c). */
#define GATE_PRIO_MARKS 8
struct gate_prio_mark {
	void    *ctx, *stream;
	void    *mark;
	uint64_t rec;           /* when it was last placed (a count) */
	int      pending;       /* placed, not seen passed */
};

struct gate_gpu {
	/* Read by every submission, written only on open and close. */
	int      state;         /* GATE_*; atomic */
	/* Priority (gate_prio.c): the state slot's share and the GPU's
	 * word in the scheduler's pages, NULL while unbound; atomic. */
	const uint32_t *prio_pct, *prio_n;
	struct vs_lock_word *prio_w;
	struct gate_shard shard[GATE_SHARDS] __attribute__((aligned(64)));

	pthread_mutex_t mu;
	pthread_cond_t  cv_open;   /* entrants wait for the gate to open */
	pthread_cond_t  cv_drain;  /* the releaser waits for in-flight 0 */
	int      pace;             /* atomic: keep queued work short */
	int      waiters;          /* threads blocked in the slow path */
	int      spinner;          /* a waiter is spinning (at most one) */

	/* Priority, the batch side: the held time's bucket and count,
	 * the last time interactive work was seen in flight (atomic). The
	 * interactive side: its marks, submissions between before and
	 * after (atomic), its own deadline (atomic), watched (atomic). */
	pthread_mutex_t prio_mu;
	uint64_t prio_tokens, prio_last, prio_since, prio_held_ns, prio_holds;
	int      prio_holding;
	uint64_t prio_seen_ns;
	struct gate_prio_mark prio_marks[GATE_PRIO_MARKS];
	uint64_t prio_recs;
	int      prio_subm;
	uint64_t prio_mine;
	int      prio_watched;
	/* The interactive side's rhythm (under prio_mu, but `after`,
	 * atomic): the end of its last submission, the start of its
	 * current request, the mean interval between starts, its mean
	 * deviation, and how many intervals have been seen. */
	uint64_t prio_after_ns, prio_req_at, prio_req_iv, prio_req_dev;
	unsigned prio_req_n;

	/* Set once by the first slow-path entrant (device_info). */
	int      known;
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t total_mem;
} __attribute__((aligned(64)));

/* The gate's settings, read from the environment once, at gate_init. */
/* Below this many usable CPUs nothing of the gate spins by default
 * (gate_conf.c, gate_prio.c): the spinner would take the CPU of the
 * thread it waits for. */
#define GATE_SPIN_MIN_CPUS 4

struct gate_conf {
	int      disabled;
	uint64_t spin_ns;          /* a waiter busy-waits for its grant, the
				    * client thread busy-polls for it */
	int      spin_forced;      /* VSHARE_SPIN_US given: spin whatever the
				    * CPUs and their load */
	int      cpus;             /* usable CPUs at init */
	uint64_t pace_ns;          /* queued work while paced (0: never) */
	uint64_t prio_pace_ns;     /* the same beside active interactive work */
};

struct gate_global {
	const struct gate_cuda_ops *ops;
	const struct gate_events *ev;
	struct gate_conf conf;
	int      enabled;          /* atomic: gate active at all */
	int      captures;         /* atomic: stream captures in progress */
	int      failopen;         /* atomic: running unshared (no scheduler) */
	int      shutting;         /* atomic: gate_shutdown began */
	int      one_dev;          /* atomic: the process sees one device */
	int      count_known;      /* atomic: ops->device_count answered */
	int      pacing;           /* atomic: GPUs paced (gate_pace) */
	int      prio_bound;       /* atomic: GPUs bound to priority pages */
	int      prio_self;        /* atomic: this program is interactive */
	pthread_mutex_t cap_mu;    /* capture count reaching 0 */
	pthread_cond_t  cap_cv;
	struct gate_gpu gpu[GATE_MAX_GPUS];
};

/* Hidden: every part of the gate reaches it PC-relative, as the fast path
 * did when it lived in the same file, not through the GOT. */
extern struct gate_global gate_g __attribute__((visibility("hidden")));

/* Coarse monotonic milliseconds, inline for gate_exit's stamp: the
 * coarse clock is read from the vDSO, a few nanoseconds and precise to a
 * scheduler tick, plenty for an idle time of 100 ms. */
static inline uint64_t gate_clock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Read the VSHARE_* settings (gate_conf.c). */
void gate_conf_read(struct gate_conf *c);

/* gate_state.c */
/* A gate as at start: closed, nobody inside or waiting, unknown. */
void     gate_gpu_init(struct gate_gpu *g);
/* Calls inside a gate's bracket (sequentially consistent sum). */
long     gate_inflight(struct gate_gpu *g);
/* The latest exit stamp of a gate. */
uint64_t gate_last_ms(struct gate_gpu *g);
/* Threads inside the program's own waits for a gate's GPU, and the
 * latest time its work there was seen unfinished. */
long     gate_syncs(struct gate_gpu *g);
uint64_t gate_unfinished_ms(struct gate_gpu *g);
/* The largest learned pause of any shard, ms; GATE_GAP_UNKNOWN until
 * GATE_GAP_SAMPLES pauses were learned. */
uint32_t gate_gap_of(struct gate_gpu *g);

/* Open g and wake whoever waits for it. Called with g->mu held; the one
 * place a gate's state becomes GATE_OPEN. */
void gate_open_locked(struct gate_gpu *g);
/* Open every gate in use: running unshared (no scheduler, shutdown). */
void gate_open_all(void);
/* Store a stamp only when it moves forward: threads sharing a shard
 * need not agree on the order of their stores. */
static inline void gate_stamp_unfinished(struct gate_shard *s, uint64_t now)
{
	if (__atomic_load_n(&s->unfinished_ms, __ATOMIC_RELAXED) < now)
		__atomic_store_n(&s->unfinished_ms, now, __ATOMIC_RELAXED);
}

/* A wait of the gate's own inside a submission, on the thread's shard s
 * (pacing's wait for the thread's queued work, a priority hold): counted
 * as the program's wait for its work, as gate_sync_begin .. _end count a
 * synchronize (with cancellation off meanwhile, so no thread-exit
 * cleanup). The use report (client_use.c) counts it busy: the program
 * has work queued, or work to submit; and one that lasted past a tick
 * of the coarse clock stamps its end as a time the program's work was
 * unfinished, true of a hold as well (the work it waits to submit).
 * _begin returns the time for _end. */
static inline uint64_t gate_work_wait_begin(struct gate_shard *s)
{
	__atomic_fetch_add(&s->syncs, 1, __ATOMIC_RELAXED);
	return gate_clock_ms();
}

static inline void gate_work_wait_end(struct gate_shard *s, uint64_t since)
{
	uint64_t now = gate_clock_ms();

	if (now != since)
		gate_stamp_unfinished(s, now);
	__atomic_fetch_sub(&s->syncs, 1, __ATOMIC_RELEASE);
}
/* gate_pace.c: around a submission to dev's paced gate. _before waits
 * while the thread runs further than pace_ns ahead on `stream` and
 * returns 1 when
 * _after is due (inside the bracket: it places a mark). */
int  gate_pace_before(int dev, void *stream, uint64_t pace_ns, int sh);
void gate_pace_after(void);
void gate_pace_atfork_child(void);
/* A unit test's clock and pause for pacing, NULL otherwise. */
struct gate_pace_test {
	uint64_t (*now_ns)(void);
	void     (*pause_ns)(uint64_t ns);
};
extern const struct gate_pace_test *gate_pace_test
	__attribute__((visibility("hidden")));

/* gate_prio.c: priority at kernel granularity. pct: the share in force
 * on g (0: none). hold: a batch submission to g waits here, outside the
 * bracket, while interactive work is in flight. before/after: around an
 * interactive submission. active: interactive work on g was seen in
 * flight lately (its batch work keeps its queue short). */
uint32_t gate_prio_pct(struct gate_gpu *g);
void gate_prio_hold(struct gate_gpu *g, int dev, int sh);
/* The bound on a batch program's queued work beside active interactive
 * work on g: the short one (prio_pace_ns), or pacing's longer one while
 * the next request of an interactive program with a rhythm is far. */
uint64_t gate_prio_pace_ns(struct gate_gpu *g);
void gate_prio_before(struct gate_gpu *g, void *stream);
void gate_prio_after(struct gate_gpu *g);
int  gate_prio_active(struct gate_gpu *g);
void gate_prio_atfork_child(void);
void gate_prio_shutdown(void);
/* A unit test's clock and futex wait, and no watcher thread (the test
 * calls gate_prio_poll), NULL otherwise. */
struct gate_prio_test {
	uint64_t (*now_ns)(void);
	void     (*sleep_ns)(uint32_t *seq, uint32_t val, uint64_t ns);
};
extern const struct gate_prio_test *gate_prio_test
	__attribute__((visibility("hidden")));

/* gate_wait.c */
/* Wait until g opens. Called and returns with g->mu held;
 * drops it while it tells the controller (gate_events.wanted). */
void gate_wait_open(struct gate_gpu *g, int dev);
/* Whether to spin for a grant now (gate_wait.c). */
int  gate_spin_ok(void);

#endif
