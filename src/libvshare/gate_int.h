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

struct gate_gpu {
	/* Hot fields, one cache line, touched by every submission. */
	int      state;         /* GATE_*; atomic */
	int      pad0;
	long     inflight;      /* calls inside the bracket; atomic */
	uint64_t last_ms;       /* coarse time of the last exit; atomic */
	char     pad1[64 - 24];

	pthread_mutex_t mu;
	pthread_cond_t  cv_open;   /* entrants wait for the gate to open */
	pthread_cond_t  cv_drain;  /* the releaser waits for in-flight 0 */
	int      waiters;          /* threads blocked in the slow path */

	/* Set once by the first slow-path entrant (device_info). */
	int      known;
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t total_mem;

	/* Scheduler view, owned by the client thread (under mu). */
	int      attached;         /* ATTACH sent on this connection */
	int      requested;        /* REQUEST sent, no GRANT yet */
	int      held;             /* granted and not released */
	uint32_t drop;             /* pending VS_DROP_* reason, 0 if none */
	int      want;             /* request even with no waiter (reconnect) */
	int      fp_valid;         /* a footprint was sent on this connection */
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
};

struct gate_global {
	const struct gate_cuda_ops *ops;
	struct gate_conf conf;
	int      enabled;          /* atomic: gate active at all */
	int      captures;         /* atomic: stream captures in progress */
	int      failopen;         /* atomic: running unshared (no scheduler) */
	int      shutting;         /* atomic: gate_shutdown began */
	pthread_mutex_t cap_mu;    /* capture count reaching 0 */
	pthread_cond_t  cap_cv;
	struct gate_gpu gpu[GATE_MAX_GPUS];
};

extern struct gate_global gate_g;

/* Read the VSHARE_* settings (gate_conf.c). */
void gate_conf_read(struct gate_conf *c);

/* Coarse monotonic milliseconds (vDSO, no system call). */
uint64_t gate_now_ms(void);

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
void client_wake(void);           /* something for the thread to do */
void client_stop(void);           /* gate_shutdown: bounded wait */
void client_forget(void);         /* fork child: drop inherited state */
int  client_started(void);

#endif
