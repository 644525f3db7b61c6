/*
 * The gate as its controller (the scheduler client) sees it. The gate
 * owns the lock state of each GPU; the controller owns the protocol and
 * decides when a gate opens for a grant and when it is taken back. The
 * gate knows nothing of the controller but the events table below.
 */
#ifndef VSHARE_GATE_CTL_H
#define VSHARE_GATE_CTL_H

#include <stdint.h>

#include "gate.h"

/*
 * What the gate tells its controller, registered at gate_init. The
 * functions are called from application threads on the gate's slow path,
 * with cancellation disabled and without any gate mutex held: they must
 * return promptly and must not wait for the controller's thread.
 */
struct gate_events {
	void *arg;
	/* A thread waits at dev's closed gate (called again for each wait;
	 * the controller decides whether to request the GPU). */
	void (*wanted)(void *arg, int dev);
};

/* Open dev's gate for a grant: entrants pass, and the gate counts as
 * just used (an idle drop right after a grant waits idle_ms). */
void gate_grant(int dev);
/*
 * Take dev away from this process: close the gate, wait for the calls in
 * flight and for stream captures to end, synchronize the device. The gate
 * is left closed. Returns 0, 1 if the gate was not open (nothing to take),
 * or -1 if shutdown began while waiting (the gate is then open).
 */
int  gate_take(int dev);
/* Running unshared (no scheduler): on = 1 opens every gate in use and
 * lets every later entrant through; on = 0 ends that (the controller then
 * takes back what it wants closed). Returns the previous setting. */
int  gate_set_unshared(int on);
/* Run dev alone unshared (the scheduler refused it): its gate opens with
 * no grant behind it; gate_take closes it again. */
void gate_open_unshared(int dev);

/* Pacing (gate_pace.c): while on, every thread of this process keeps
 * the work it has queued on dev short, about VSHARE_PACE_US, waiting
 * before a submission when it runs further ahead of the GPU. The
 * controller turns it on for a grant whose GPU an interactive program
 * shares (VS_GRANTF_PACE): that program waits for this queued work to
 * drain each time it preempts this one. Never on with VSHARE_PACE_US=0
 * or without the mark operations (gate.h). */
void gate_pace(int dev, int on);
int  gate_pacing(int dev);

/* Priority at kernel granularity (gate_prio.c; proto.h, "Priority").
 * bind: dev's share in the scheduler's state page and its word in the
 * words page, as the controller found its slot (NULL, NULL: unbound).
 * The pages must stay mapped as long as the process runs once bound
 * (a submission may be reading them). interactive: this program's class
 * in force is interactive (its submissions hold batch work back) or not.
 * poll: one look of the watcher at the marks of interactive work, 1
 * while some is in flight (the watcher thread calls it; a unit test
 * without the thread does). held_ns: the time this process's batch
 * submissions to dev were held back so far. */
struct vs_lock_slot;
struct vs_lock_word;
void gate_prio_bind(int dev, const struct vs_lock_slot *slot,
		    struct vs_lock_word *w);
void gate_prio_interactive(int on);
int  gate_prio_poll(void);
uint64_t gate_prio_held_ns(int dev);

/* Readers. gate_gpu_info: 1 and the device's identity once a thread
 * entered its slow path (the gate learned it there), else 0. */
int  gate_gpu_info(int dev, uint8_t uuid[16], uint64_t *total_mem);
/* Threads waiting at dev's gate. */
int  gate_waiting(int dev);
/* Calls inside dev's gate and the coarse time of the latest exit (ms). */
void gate_activity(int dev, long *inflight, uint64_t *last_ms);
/* What the program's own waits say of its work on dev (gate.h,
 * gate_sync_begin): threads waiting for it now, and the coarse time (ms)
 * it was last seen unfinished (0: never). The use report counts both as
 * busy; the idle drop does not wait for them. */
void gate_use_activity(int dev, long *syncs, uint64_t *unfinished_ms);
/* The largest recent pause between dev's submissions within a burst, ms
 * (coarse clock): how long a pause of this program may last before its
 * burst is over; GATE_GAP_UNKNOWN until a few pauses were seen. */
#define GATE_GAP_UNKNOWN UINT32_MAX
uint32_t gate_gap_ms(int dev);
/* The coarse clock's step, ms (1 to 4 on Linux). */
uint32_t gate_clock_step_ms(void);
/* Whether gate_shutdown began. */
int  gate_shutting(void);
/* Whether the gate is active at all (not VSHARE_DISABLE). */
int  gate_enabled(void);
/* How long to busy-poll for a grant after a REQUEST (ns), 0 if not now:
 * spinning off, or the CPUs too busy for it (checked at most every
 * 100 ms). */
uint64_t gate_spin_window_ns(void);

/* Clocks: coarse monotonic milliseconds and monotonic nanoseconds
 * (vDSO, no system call). */
uint64_t gate_now_ms(void);
uint64_t gate_now_ns(void);

#endif
