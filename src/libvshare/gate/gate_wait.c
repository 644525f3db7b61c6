/*
 * Waiting at a closed gate: tell the controller (the scheduler client)
 * that this thread waits, busy-wait a little for the grant where the CPUs
 * allow it, then sleep until the controller opens the gate. Called with
 * the gate's mutex held.
 */
#include <sched.h>
#include <sys/sysinfo.h>

#include "atomics.h"
#include "gate_int.h"

static uint64_t spin_checked_ms;   /* atomic: last load check */
static int spin_busy;              /* atomic: CPUs were busy then */

int gate_spin_ok(void)
{
	uint64_t now, last;
	struct sysinfo si;
	int busy;

	if (gate_g.conf.spin_ns == 0)
		return 0;
	if (gate_g.conf.spin_forced)
		return 1;
	now = gate_now_ms();
	last = A_LOAD_RLX(&spin_checked_ms);
	if (last != 0 && now - last < 100)
		return !A_LOAD_RLX(&spin_busy);
	/* Busy: the 1-minute load leaves fewer than 3 CPUs idle (a spinner,
	 * the client thread and the scheduler each want one). */
	busy = sysinfo(&si) == 0 &&
	       (si.loads[0] >> SI_LOAD_SHIFT) + 3 > (unsigned long)gate_g.conf.cpus;
	__atomic_store_n(&spin_busy, busy, __ATOMIC_RELAXED);
	__atomic_store_n(&spin_checked_ms, now, __ATOMIC_RELAXED);
	return !busy;
}

uint64_t gate_spin_window_ns(void)
{
	return gate_spin_ok() ? gate_g.conf.spin_ns : 0;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Busy-wait at most conf.spin_ns for the gate to open. An uncontended
 * grant comes back within tens of microseconds, less than a sleep on the
 * condition variable and the wake-up that ends it. */
static void spin_open(struct gate_gpu *g)
{
	uint64_t end = gate_now_ns() + gate_g.conf.spin_ns;
	unsigned n = 0;

	while (__atomic_load_n(&g->state, __ATOMIC_ACQUIRE) != GATE_OPEN) {
		cpu_relax();
		if ((++n & 31) != 0)
			continue;
		if (gate_now_ns() >= end)
			break;
		/* The client thread woken by this thread, or the scheduler
		 * woken by its REQUEST, may be queued on this very CPU: let
		 * it run. */
		sched_yield();
	}
}

/* Tell the controller that a thread waits at dev: without the gate's
 * mutex, so that the controller may take it (through its readers or
 * gate_take) while this thread is inside the callback. */
static void tell_wanted(struct gate_gpu *g, int dev)
{
	const struct gate_events *ev = gate_g.ev;

	if (ev == NULL || ev->wanted == NULL)
		return;
	pthread_mutex_unlock(&g->mu);
	ev->wanted(ev->arg, dev);
	pthread_mutex_lock(&g->mu);
}

/* Wait until the gate opens: tell the controller, spin a little if no
 * other waiter does, then sleep. The state is looked at again after each
 * step that dropped the mutex: the gate may have opened meanwhile. */
void gate_wait_open(struct gate_gpu *g, int dev)
{
	int spin;

	while (A_LOAD(&g->state) != GATE_OPEN) {
		if (A_LOAD(&gate_g.failopen) || A_LOAD(&gate_g.shutting)) {
			gate_open_locked(g);
			break;
		}
		g->waiters++;
		/* The controller's thread sends the REQUEST; a waiter that
		 * spins lets it poll for the GRANT without sleeping (the
		 * controller asks gate_spin_window_ns). */
		spin = gate_spin_ok();
		tell_wanted(g, dev);
		if (spin && !g->spinner && A_LOAD(&g->state) != GATE_OPEN) {
			g->spinner = 1;
			pthread_mutex_unlock(&g->mu);
			spin_open(g);
			pthread_mutex_lock(&g->mu);
			g->spinner = 0;
		}
		if (A_LOAD(&g->state) != GATE_OPEN)
			pthread_cond_wait(&g->cv_open, &g->mu);
		g->waiters--;
	}
}
