/*
 * What the client thread owes the scheduler for each GPU, in order:
 * attach it, report its footprint, release it when asked, request it when
 * someone waits. Runs on the client thread, connected.
 */
#include <sched.h>
#include <string.h>

#include "atomics.h"
#include "client_int.h"
#include "log.h"

/* While an idle drop waits on a holder that still has calls in flight,
 * look again this often. */
#define CLIENT_BUSY_POLL_MS 10u

int client_learn(int dev)
{
	struct client_gpu *c = &client_g.gpu[dev];

	if (!c->known)
		c->known = gate_gpu_info(dev, c->uuid, &c->total_mem);
	return c->known;
}

int client_take(int dev)
{
	struct client_swap sw = { 0, 0 };
	int rc = gate_take(dev);

	/* Pacing is a grant's: the next one says again. */
	gate_pace(dev, 0);
	if (rc == 0) {
		client_g.cb->released(client_g.cb->arg, dev,
				      client_g.conf.swap_eager, &sw);
		client_use_swapout(&client_g.gpu[dev], &sw);
	}
	return rc;
}

static int send_ref(uint16_t type, const uint8_t uuid[VS_UUID_LEN])
{
	struct vs_gpu_ref m;

	memcpy(m.uuid, uuid, VS_UUID_LEN);
	return client_send(type, &m, sizeof(m));
}

/* A REQUEST went out, from this thread or a waiting one: the GPU is
 * requested, its wait begins, and, if the waiters spin, the client thread
 * polls for the GRANT without sleeping for spin_ns (client.c, spin_poll). */
static void request_sent(struct client_gpu *g, uint64_t spin_ns)
{
	g->requested = 1;
	client_wait_begin(g);
	if (spin_ns != 0)
		client_c.spin_until_ns = gate_now_ns() + spin_ns;
}

/*
 * The fast REQUEST. Waking this thread from poll costs tens of
 * microseconds on an idle machine (the CPU's sleep state), as much again
 * as the scheduler's own wake-up: a thread that starts to wait at the gate
 * of an idle GPU sends the REQUEST itself instead, and wakes this thread
 * only so that it polls for the GRANT meanwhile.
 *
 * Ownership passes through one atomic per GPU. This thread arms it
 * (READY) at the end of its work, when the GPU is attached with its
 * footprint on a welcomed connection, not held, not requested, not
 * refused, and takes it back (adopt) first thing after each poll and at
 * the top of each pass, before it reads a frame, sends or closes the
 * socket. Between arm and adopt it only polls, so a waiting thread that
 * claimed READY (CLAIMED) is the only sender on a socket that stays open;
 * adopt waits out a claim in progress. A REQUEST that went out (SENT)
 * becomes this thread's `requested`; one that failed ends the connection
 * as any failed send does.
 */
static int fast_ready(const struct client_gpu *g)
{
	return g->known && g->attached && g->fp_valid && !g->held &&
	       !g->requested && !g->refused && !g->want && g->drop == 0 &&
	       g->resync == 0;
}

/* A waiting thread took g through the lock page and opened its gate:
 * this process holds it as after a GRANT (never an oversubscribed one,
 * so nothing to swap in), and tells the scheduler on the next pass. */
static void took(struct client_gpu *g, uint64_t at_ms)
{
	client_use_start(g, at_ms);
	g->held = 1;
	g->took = 1;
	g->requested = 0;
	g->want = 0;
	g->drop = 0;
	g->swap.bytes = 0;
}

static int mode_pending(const struct client_gpu *g, uint64_t now);

int client_fast_arm(void)
{
	uint64_t now = gate_now_ms();
	int take = 0;

	if (client_c.sock < 0 || !client_c.welcomed || client_stopping())
		return 0;
	for (int dev = 0; dev < GATE_MAX_GPUS; dev++) {
		struct client_gpu *g = &client_g.gpu[dev];

		/* A waiter that comes before the MODE wakes this thread,
		 * which takes the GPU for it once the MODE is in. */
		if (!fast_ready(g) || mode_pending(g, now))
			continue;
		A_STORE(&g->fast, CLIENT_FAST_READY);
		take |= A_LOAD(&g->lock_ok);
	}
	return take && A_LOAD(&client_c.lock) != NULL &&
	       !client_g.conf.no_lock_page;
}

int client_fast_adopt(void)
{
	int rc = 0;

	for (int dev = 0; dev < GATE_MAX_GPUS; dev++) {
		struct client_gpu *g = &client_g.gpu[dev];
		int st = A_LOAD(&g->fast), ready = CLIENT_FAST_READY;

		if (st == CLIENT_FAST_OFF)
			continue;
		if (st == CLIENT_FAST_READY &&
		    __atomic_compare_exchange_n(&g->fast, &ready, CLIENT_FAST_OFF,
						0, __ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
			continue;
		/* Claimed: the waiting thread is inside one send. */
		while ((st = A_LOAD(&g->fast)) == CLIENT_FAST_CLAIMED)
			sched_yield();
		if (st == CLIENT_FAST_SENT)
			request_sent(g, gate_spin_window_ns());
		else if (st == CLIENT_FAST_TOOK)
			took(g, A_LOAD(&g->took_ms));
		else if (st == CLIENT_FAST_FAILED)
			rc = -1;
		A_STORE(&g->fast, CLIENT_FAST_OFF);
	}
	return rc;
}

int client_fast_request(int dev)
{
	struct client_gpu *g = &client_g.gpu[dev];
	int ready = CLIENT_FAST_READY;

	/* A footprint that moved since it was sent goes first, from the
	 * client thread: the scheduler decides the grant by it (in mode
	 * auto, whether this process fits beside the holders). The thread
	 * that allocated is usually the one that now waits, so it sees its
	 * own change here. */
	if (A_LOAD_RLX(&g->fast) != CLIENT_FAST_READY || A_LOAD(&g->fp_dirty) ||
	    !__atomic_compare_exchange_n(&g->fast, &ready, CLIENT_FAST_CLAIMED,
					 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return -1;
	/* Free in the lock page: no REQUEST, no GRANT to wait for. */
	if (client_lock_take(dev, g)) {
		/* The hold began now, not when the client thread adopts it. */
		A_STORE(&g->took_ms, gate_now_ms());
		A_STORE(&g->fast, CLIENT_FAST_TOOK);
		return CLIENT_FAST_RC_TOOK;
	}
	if (send_ref(VS_MSG_REQUEST, g->uuid) != 0) {
		A_STORE(&g->fast, CLIENT_FAST_FAILED);
		return 0;
	}
	__atomic_add_fetch(&client_g.fast_sent, 1, __ATOMIC_RELAXED);
	A_STORE(&g->fast, CLIENT_FAST_SENT);
	return 0;
}

/* The client thread's own REQUEST. */
static int send_request(struct client_gpu *c, uint64_t spin_ns)
{
	if (send_ref(VS_MSG_REQUEST, c->uuid))
		return -1;
	request_sent(c, spin_ns);
	return 0;
}

static int wait_query(const struct client_gpu *g)
{
	struct vs_wait_query m;

	memset(&m, 0, sizeof(m));
	memcpy(m.uuid, g->uuid, VS_UUID_LEN);
	return client_send(VS_MSG_WAIT_QUERY, &m, sizeof(m));
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The footprint goes out on attach and then whenever it moved by a step
 * or went to or from zero: the scheduler needs it for fit decisions, not
 * every allocation. */
static int footprint(int dev, struct client_gpu *g)
{
	struct vs_footprint m;
	uint64_t step = client_g.conf.footprint_step;
	int valid = g->fp_valid;

	if (!A_XCHG(&g->fp_dirty, 0) && valid)
		return 0;
	memset(&m, 0, sizeof(m));
	client_g.cb->footprint(client_g.cb->arg, dev, &m.managed, &m.pinned);
	if (valid && absdiff(m.managed, g->fp_managed) < step &&
	    absdiff(m.pinned, g->fp_pinned) < step &&
	    (m.managed == 0) == (g->fp_managed == 0) &&
	    (m.pinned == 0) == (g->fp_pinned == 0))
		return 0;
	memcpy(m.uuid, g->uuid, VS_UUID_LEN);
	g->fp_managed = m.managed;
	g->fp_pinned = m.pinned;
	if (client_send(VS_MSG_FOOTPRINT, &m, sizeof(m)))
		return -1;
	g->fp_valid = 1;
	return 0;
}

/* The swap-in of the current grant, once, to a scheduler of version 2
 * or later (on_grant keeps none for an older one). Before any RELEASED,
 * so that the scheduler counts it for the grant it belongs to. */
static int swapped(struct client_gpu *g)
{
	struct vs_swapped m;

	if (g->swap.bytes == 0 || !g->held)
		return 0;
	memset(&m, 0, sizeof(m));
	memcpy(m.uuid, g->uuid, VS_UUID_LEN);
	m.us = g->swap.us < VS_SWAPPED_US_MAX ? g->swap.us : VS_SWAPPED_US_MAX;
	m.bytes = g->swap.bytes;
	g->swap.bytes = 0;
	return client_send(VS_MSG_SWAPPED, &m, sizeof(m));
}

/* Release now, or for an idle drop once nothing was submitted for the
 * idle gap and nothing is in flight. Returns the ms to wait before
 * looking again (-1: nothing pending), or -2 if the connection failed. */
static int drop(int dev, struct client_gpu *g)
{
	uint64_t now, last, idle = client_idle_gap(dev);
	uint32_t reason = g->held ? g->drop : 0;
	long inflight;

	if (reason == 0)
		return -1;
	if (reason == VS_DROP_IDLE) {
		now = gate_now_ms();
		gate_activity(dev, &inflight, &last);
		if (inflight > 0)
			return (int)(idle < CLIENT_BUSY_POLL_MS ? idle + 1 : CLIENT_BUSY_POLL_MS);
		if (now < last + idle)
			return (int)(last + idle - now);
	}
	if (client_take(dev) < 0)
		return -1;
	/* The hold's last use goes before its RELEASED, while the scheduler
	 * still counts it as held. A take the scheduler refused
	 * (client_msg.c: on_state) is not counted there: nothing to
	 * release. */
	if (client_use_due(dev, g, 1, NULL) || (!g->quiet &&
	    send_ref(VS_MSG_RELEASED, g->uuid)))
		return -2;
	log_debug("GPU %d %s (%s) %.2f ms after the drop request", dev,
		  g->quiet ? "given back" : "released",
		  vs_drop_reason_name(reason),
		  (double)(gate_now_ns() - g->drop_ns) / 1e6);
	g->held = 0;
	g->drop = 0;
	g->quiet = 0;
	return -1;
}

/* A resynchronisation with the scheduler (client_msg.c: on_state,
 * drop_not_held): the RELEASED it needs, and then the REQUEST goes out as
 * usual if the GPU is wanted, at most once per CLIENT_RESYNC_MS. 1 while
 * the GPU must not be asked for yet, 0 once done, -1 if sending failed. */
static int resync_due(struct client_gpu *g, int *timeout)
{
	uint64_t now = gate_now_ms();
	int t;

	if (g->resync == 0)
		return 0;
	/* A refused take is given back first (drop, above). */
	if (g->held)
		return 1;
	if (now < g->resync_ms) {
		t = (int)(g->resync_ms - now);
		if (*timeout < 0 || t < *timeout)
			*timeout = t;
		return 1;
	}
	if ((g->resync & CLIENT_RESYNC_RELEASE) &&
	    send_ref(VS_MSG_RELEASED, g->uuid))
		return -1;
	g->resync = 0;
	g->resync_ms = now + CLIENT_RESYNC_MS;
	return 0;
}

/* A GPU the scheduler refused (client_msg.c: on_refused) runs unshared
 * until the connection ends, or, with VSHARE_REQUIRE_SCHEDULER, waits
 * until its next attempt. 1 while there is nothing to do for it. */
static int refused_wait(struct client_gpu *g, int *timeout)
{
	uint64_t now = gate_now_ms();
	int t;

	if (!client_g.conf.require_sched)
		return 1;
	if (now < g->retry_ms) {
		t = (int)(g->retry_ms - now);
		if (*timeout < 0 || t < *timeout)
			*timeout = t;
		return 1;
	}
	g->refused = 0;
	g->want = 1;
	client_c.refusals--;
	return 0;
}

/* A take through the lock page is told before anything else about the
 * GPU, a RELEASED above all. */
static int tell_took(struct client_gpu *g)
{
	if (!g->took)
		return 0;
	if (send_ref(VS_MSG_TOOK, g->uuid))
		return -1;
	g->took = 0;
	return 0;
}

static int attach(struct client_gpu *g)
{
	struct vs_attach at;

	if (g->attached)
		return 0;
	memset(&at, 0, sizeof(at));
	memcpy(at.uuid, g->uuid, VS_UUID_LEN);
	at.total_mem = g->total_mem;
	if (client_send(VS_MSG_ATTACH, &at, sizeof(at)))
		return -1;
	g->attached = 1;
	g->attach_ms = gate_now_ms();
	return 0;
}

int client_register(void)
{
	for (int dev = 0; dev < GATE_MAX_GPUS; dev++) {
		struct client_gpu *g = &client_g.gpu[dev];

		if (!client_learn(dev) || g->refused)
			continue;
		if (attach(g) || footprint(dev, g))
			return -1;
	}
	return 0;
}

/* CLIENT_MODE_WAIT_MS, or what a unit test set in its place. */
static uint64_t mode_wait_ms(void)
{
	unsigned t = 0;

	if (client_mode_wait_test_ms != NULL)
		t = client_mode_wait_test_ms();
	return t != 0 ? t : CLIENT_MODE_WAIT_MS;
}

/* The ATTACH went out on a connection with lock pages, or one whose
 * pages may still come (they come before the MODE), and its MODE (the
 * scheduler read it: the pages may be used) is one round trip away: a
 * waiter is better served by a take once it comes than by a REQUEST now.
 * 1 while it is due, lowering *timeout to the longest wait for it. */
static int mode_pending(const struct client_gpu *g, uint64_t now)
{
	return !A_LOAD(&g->lock_ok) && client_lock_expected() &&
	       !client_g.conf.no_lock_page && !g->want &&
	       now < g->attach_ms + mode_wait_ms();
}

static int mode_due(struct client_gpu *g, int *timeout)
{
	uint64_t now = gate_now_ms();
	int t;

	if (!mode_pending(g, now))
		return 0;
	t = (int)(g->attach_ms + mode_wait_ms() - now);
	if (*timeout < 0 || *timeout > t)
		*timeout = t;
	return 1;
}

static int gpu_work(int dev, struct client_gpu *g, int *timeout)
{
	int t, rs;

	/* The bit only woke this thread: who waits is the gate's to say. */
	(void)A_XCHG(&g->wanted, 0);
	if (!client_learn(dev))
		return 0;
	if (g->refused && refused_wait(g, timeout))
		return 0;
	if (tell_took(g) || attach(g) || footprint(dev, g) || swapped(g) ||
	    client_use_due(dev, g, 0, timeout))
		return -1;
	t = drop(dev, g);
	if (t == -2)
		return -1;
	if (t >= 0 && (*timeout < 0 || t < *timeout))
		*timeout = t;
	rs = resync_due(g, timeout);
	if (rs < 0)
		return -1;
	if (rs == 0 && !g->held && !g->requested &&
	    (g->want || gate_waiting(dev) > 0) && !mode_due(g, timeout)) {
		/* A thread that began to wait before the GPU could be taken
		 * (the first launch, while registering): take it for it now if
		 * it is free, rather than ask. */
		if (g->drop == 0 && fast_ready(g) && !A_LOAD(&g->fp_dirty) &&
		    client_lock_take(dev, g)) {
			took(g, gate_now_ms());
			if (tell_took(g))
				return -1;
		} else if (send_request(g, gate_spin_window_ns())) {
			return -1;
		}
	}
	/* After the REQUEST: its wait sets the time to look again. */
	if (client_wait_due(dev, g, timeout) && wait_query(g))
		return -1;
	client_use_timeout(g, timeout);
	return 0;
}

int client_work(int *timeout)
{
	for (int dev = 0; dev < GATE_MAX_GPUS; dev++) {
		if (client_c.sock < 0 || client_stopping())
			break;
		if (gpu_work(dev, &client_g.gpu[dev], timeout) != 0)
			return -1;
	}
	/* A waiting thread that takes a GPU through the lock page does not
	 * wake this thread: look again within CLIENT_TOOK_TELL_MS to tell
	 * the scheduler (it adopts the taker anyway when anyone else asks). */
	if (client_fast_arm() && (*timeout < 0 || *timeout > CLIENT_TOOK_TELL_MS))
		*timeout = CLIENT_TOOK_TELL_MS;
	return 0;
}
