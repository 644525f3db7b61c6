/*
 * What the client thread owes the scheduler for each GPU, in order:
 * attach it, report its footprint, release it when asked, request it when
 * someone waits. Runs on the client thread, connected.
 */
#include <string.h>

#include "client_int.h"
#include "gate_int.h"
#include "log.h"

#define A_LOAD(p)  __atomic_load_n((p), __ATOMIC_SEQ_CST)

/* While an idle drop waits on a holder that still has calls in flight,
 * look again this often. */
#define CLIENT_BUSY_POLL_MS 10u

static int send_ref(uint16_t type, const uint8_t uuid[VS_UUID_LEN])
{
	struct vs_gpu_ref m;

	memcpy(m.uuid, uuid, VS_UUID_LEN);
	return client_send(type, &m, sizeof(m));
}

/* A REQUEST; the client thread then polls for the GRANT without
 * sleeping for a while (client.c, spin_poll). */
static int send_request(struct gate_gpu *g, unsigned gen, int spin)
{
	struct vs_gpu_ref m;

	memcpy(m.uuid, g->uuid, VS_UUID_LEN);
	if (client_send_on(gen, VS_MSG_REQUEST, &m, sizeof(m)))
		return -1;
	if (spin)
		__atomic_store_n(&client_c.spin_until_ns,
				 gate_now_ns() + gate_g.conf.spin_ns,
				 __ATOMIC_RELAXED);
	return 0;
}

int client_request_direct(struct gate_gpu *g)
{
	unsigned gen = __atomic_load_n(&client_c.gen, __ATOMIC_RELAXED);
	int rc;

	if (g->requested)
		return 0;
	/* Attached and footprint sent on this very connection (both are
	 * reset under mu when it is lost, after gen moved on): then a REQUEST
	 * is the next frame the client thread would send for this GPU. */
	if (g->held || !g->attached || !(gen & 1) ||
	    !__atomic_load_n(&g->fp_valid, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&g->fp_dirty, __ATOMIC_RELAXED))
		return -1;
	g->requested = 1;
	pthread_mutex_unlock(&g->mu);
	rc = send_request(g, gen, 1);
	pthread_mutex_lock(&g->mu);
	/* On failure the connection is gone or going: the client thread's
	 * client_lost clears `requested` and requests again once back. */
	return rc == 0 ? 1 : -1;
}

static uint64_t absdiff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The footprint goes out on attach and then whenever it moved by a step
 * or went to or from zero: the scheduler needs it for fit decisions, not
 * every allocation. */
static int footprint(int dev, struct gate_gpu *g)
{
	struct vs_footprint m;
	uint64_t step = gate_g.conf.footprint_step;
	int valid = __atomic_load_n(&g->fp_valid, __ATOMIC_RELAXED);

	if (!__atomic_exchange_n(&g->fp_dirty, 0, __ATOMIC_SEQ_CST) && valid)
		return 0;
	memset(&m, 0, sizeof(m));
	gate_g.ops->footprint(dev, &m.managed, &m.pinned);
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
	/* From now on an application thread may request on its own. */
	__atomic_store_n(&g->fp_valid, 1, __ATOMIC_RELEASE);
	return 0;
}

/* Release now, or for an idle drop once nothing was submitted for idle_ms
 * and nothing is in flight. Returns the ms to wait before looking again
 * (-1: nothing pending), or -2 if the connection failed. */
static int drop(int dev, struct gate_gpu *g)
{
	uint64_t now, last, idle = gate_g.conf.idle_ms;
	uint32_t reason;

	pthread_mutex_lock(&g->mu);
	reason = g->held ? g->drop : 0;
	pthread_mutex_unlock(&g->mu);
	if (reason == 0)
		return -1;
	if (reason == VS_DROP_IDLE) {
		now = gate_now_ms();
		last = gate_last_ms(g);
		if (gate_inflight(g) > 0)
			return (int)(idle < CLIENT_BUSY_POLL_MS ? idle + 1 : CLIENT_BUSY_POLL_MS);
		if (now < last + idle)
			return (int)(last + idle - now);
	}
	if (gate_drain(dev) != 0)
		return -1;
	/* RELEASED goes out before `held` falls: a waiting application
	 * thread sends its REQUEST only once it sees held 0, so the
	 * scheduler never gets a REQUEST from its holder. */
	if (send_ref(VS_MSG_RELEASED, g->uuid))
		return -2;
	pthread_mutex_lock(&g->mu);
	g->held = 0;
	g->drop = 0;
	pthread_mutex_unlock(&g->mu);
	log_debug("GPU %d released (%s)", dev, vs_drop_reason_name(reason));
	return -1;
}

static int gpu_work(int dev, struct gate_gpu *g, int *timeout)
{
	struct vs_attach at;
	int known, attached, ask, t;

	pthread_mutex_lock(&g->mu);
	known = g->known;
	attached = g->attached;
	pthread_mutex_unlock(&g->mu);
	if (!known)
		return 0;
	if (!attached) {
		memset(&at, 0, sizeof(at));
		memcpy(at.uuid, g->uuid, VS_UUID_LEN);
		at.total_mem = g->total_mem;
		if (client_send(VS_MSG_ATTACH, &at, sizeof(at)))
			return -1;
		pthread_mutex_lock(&g->mu);
		g->attached = 1;
		pthread_mutex_unlock(&g->mu);
	}
	if (footprint(dev, g))
		return -1;
	t = drop(dev, g);
	if (t == -2)
		return -1;
	if (t >= 0 && (*timeout < 0 || t < *timeout))
		*timeout = t;
	pthread_mutex_lock(&g->mu);
	ask = !g->held && !g->requested && (g->waiters > 0 || g->want);
	if (ask)
		g->requested = 1;
	pthread_mutex_unlock(&g->mu);
	if (ask && send_request(g, 0, gate_spin_ok()))
		return -1;
	return 0;
}

int client_work(void)
{
	int timeout = -1;

	for (int dev = 0; dev < GATE_MAX_GPUS; dev++) {
		if (client_c.sock < 0 || A_LOAD(&gate_g.shutting))
			break;
		if (gpu_work(dev, &gate_g.gpu[dev], &timeout) != 0) {
			client_lost("sending to the scheduler failed");
			break;
		}
	}
	return timeout;
}
