/*
 * Waiting at a closed gate: ask for the lock (the waiting thread's own
 * REQUEST, or through the client thread), busy-wait a little for the grant
 * where the CPUs allow it, then sleep until the client thread opens the
 * gate. Called with the gate's mutex held.
 */
#include <sched.h>
#include <sys/sysinfo.h>

#include "gate_int.h"

#define A_LOAD(p)      __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define A_LOAD_RLX(p)  __atomic_load_n((p), __ATOMIC_RELAXED)
#define A_STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

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
		/* The scheduler or the client thread, woken by this thread's
		 * REQUEST, may be queued on this very CPU: let it run. */
		sched_yield();
	}
}

/* Wait until the gate opens: ask for the lock (directly or through the
 * client thread), spin a little if no other waiter does, then sleep. */
void gate_wait_open(struct gate_gpu *g)
{
	int rc, spin;

	while (A_LOAD(&g->state) != GATE_OPEN) {
		if (A_LOAD(&gate_g.failopen) || A_LOAD(&gate_g.shutting)) {
			A_STORE(&g->state, GATE_OPEN);
			break;
		}
		g->waiters++;
		/* With spinning, this thread sends its REQUEST itself and wakes
		 * the client thread only to poll for the GRANT. Without, the
		 * client thread sends it: a waiter that goes to sleep right
		 * after its own send gained nothing where it was measured
		 * (docs/gate.md). */
		spin = gate_spin_ok();
		rc = spin ? client_request_direct(g) : -1;
		if (rc != 0)
			client_wake();
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
