/*
 * Internal state shared by the gate (gate.c, gate_release.c) and the
 * scheduler client (client*.c). Nothing outside those files includes it,
 * except the gate's unit tests.
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

#include "gate.h"
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
} __attribute__((aligned(64)));

struct gate_gpu {
	/* Read by every submission, written only on open and close. */
	int      state;         /* GATE_*; atomic */
	struct gate_shard shard[GATE_SHARDS] __attribute__((aligned(64)));

	pthread_mutex_t mu;
	pthread_cond_t  cv_open;   /* entrants wait for the gate to open */
	pthread_cond_t  cv_drain;  /* the releaser waits for in-flight 0 */
	int      waiters;          /* threads blocked in the slow path */
	int      spinner;          /* a waiter is spinning (at most one) */

	/* Set once by the first slow-path entrant (device_info). */
	int      known;
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t total_mem;

	/* Scheduler view, owned by the client thread (under mu). */
	int      attached;         /* ATTACH sent on this connection (set
				    * once it went out: an application thread
				    * may then send REQUEST itself) */
	int      requested;        /* REQUEST sent, no GRANT yet */
	int      held;             /* granted, RELEASED not yet sent */
	uint32_t drop;             /* pending VS_DROP_* reason, 0 if none */
	int      want;             /* request even with no waiter (reconnect) */
	int      fp_valid;         /* atomic: a footprint was sent on this
				    * connection */
	uint64_t fp_managed, fp_pinned;
	int      fp_dirty;         /* atomic: footprint changed since sent */
} __attribute__((aligned(64)));

/* Settings read from the environment once, at gate_init. */
struct gate_conf {
	char     socket_path[108];
	char     label[VS_LABEL_MAX + 1];
	uint64_t idle_ms;
	int      swap_eager;
	int      require_sched;
	int      disabled;
	uint64_t footprint_step;
	uint64_t spin_ns;          /* a waiter busy-waits for its grant, the
				    * client thread busy-polls for it */
	int      spin_forced;      /* VSHARE_SPIN_US given: spin whatever the
				    * CPUs and their load */
	int      cpus;             /* usable CPUs at init */
};

struct gate_global {
	const struct gate_cuda_ops *ops;
	struct gate_conf conf;
	int      enabled;          /* atomic: gate active at all */
	int      captures;         /* atomic: stream captures in progress */
	int      failopen;         /* atomic: running unshared (no scheduler) */
	int      shutting;         /* atomic: gate_shutdown began */
	int      one_dev;          /* atomic: the process sees one device */
	int      count_known;      /* atomic: ops->device_count answered */
	pthread_mutex_t cap_mu;    /* capture count reaching 0 */
	pthread_cond_t  cap_cv;
	struct gate_gpu gpu[GATE_MAX_GPUS];
};

extern struct gate_global gate_g;

/* Read the VSHARE_* settings (gate_conf.c). */
void gate_conf_read(struct gate_conf *c);

/* Coarse monotonic milliseconds (vDSO, no system call). */
uint64_t gate_now_ms(void);
/* Calls inside a gate's bracket (sequentially consistent sum). */
long     gate_inflight(struct gate_gpu *g);
/* The latest exit stamp of a gate; gate_stamp sets one (a grant). */
uint64_t gate_last_ms(struct gate_gpu *g);
void     gate_stamp(struct gate_gpu *g, uint64_t ms);

/* Wait until g opens (gate_wait.c). Called and returns with g->mu held. */
void gate_wait_open(struct gate_gpu *g);
/* Open a gate: mark held or unshared, wake entrants. Takes g->mu. */
void gate_open(struct gate_gpu *g);
/* Open every gate: running unshared (no scheduler, shutdown). */
void gate_open_all(void);
/*
 * Take the GPU away from this process: close the gate, wait for in-flight
 * calls and for stream captures to end, synchronize the device, swap out if
 * configured. The gate is left CLOSED. Returns 0, or -1 if shutdown began
 * while waiting (the gate is then open).
 */
int  gate_drain(int dev);

/* Client thread (client.c). */
void client_start(void);          /* idempotent; first slow-path entry */
/*
 * An application thread waiting at g sends REQUEST itself when it can
 * (connected, g attached with its footprint sent, not held or requested),
 * saving the client thread's wake-up. Called and returns with g->mu held
 * (drops it while sending); the client thread then polls for the GRANT
 * without sleeping. Returns 1 if it sent the REQUEST, 0 if one was already
 * out, -1 if the client thread must see to it. After 1 or -1 the caller
 * wakes the client thread (client_wake): to poll for the GRANT while the
 * scheduler answers, or to send.
 */
int  client_request_direct(struct gate_gpu *g);
/* Monotonic nanoseconds (vDSO). */
uint64_t gate_now_ns(void);
/* Whether to spin for a grant now: enabled, and the CPUs not so busy that
 * the spinners would delay the grant (load checked at most every 100 ms). */
int      gate_spin_ok(void);
void client_wake(void);           /* something for the thread to do */
void client_stop(void);           /* gate_shutdown: bounded wait */
void client_forget(void);         /* fork child: drop inherited state */
int  client_started(void);

#endif
