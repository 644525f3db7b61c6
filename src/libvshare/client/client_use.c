/*
 * Use, not only holding: what this process did with the GPUs it held,
 * for the scheduler's status and metrics (VS_MSG_USAGE), and how long it
 * ran unshared while the scheduler was away (VS_MSG_UNSHARED). Runs on
 * the client thread, from its passes over the GPUs (client_work.c).
 *
 * Busy is the time the program had work submitted and not finished, or
 * was submitting, as far as the shim sees it: calls in flight in its
 * gate, threads of its waiting in a synchronize for their work or in
 * the gate's own waits inside a submission (pacing's for the queued
 * work, a priority hold; gate_use_activity), and up to the idle gap
 * after its last submission
 * or the last time its work was seen unfinished (a wait that lasted, a
 * query answered "not ready"). The thread looks at the gate
 * (gate_activity, gate_use_activity) at each pass and at least every
 * CLIENT_USE_TICK_MS while it holds a GPU, and splits the time since its
 * last look: busy up to the latest of those plus the gap (all of it with
 * calls in flight or a thread waiting), idle after. A program that
 * neither waits nor asks while its work runs (it sleeps, say) counts
 * idle after the gap. The idle drop waits only for the submissions
 * (client_work.c: drop); what the GPU itself computes is NVML's to say
 * (the scheduler reads it per process).
 */
#include <string.h>

#include "client_int.h"
#include "log.h"

/* The pause after which a holder that others wait for counts as idle:
 * twice the longest recent pause within its bursts plus a step of the
 * coarse clock, at least CLIENT_IDLE_MIN_MS, at most idle_ms
 * (VSHARE_IDLE_MS). A notebook whose cell is done releases within a few
 * ms; a training loop, whose pauses (its synchronizations) are long,
 * waits idle_ms as before and is not cut at each iteration. A program
 * whose rhythm is not known yet waits idle_ms.
 *
 * An interactive program waits at most CLIENT_INTERACTIVE_IDLE_MS: the
 * waiters are batch, and its class takes the GPU back at its next
 * submission, at the cost of the batch holder's drain (about as long);
 * holding through its own pauses would only keep them waiting. An
 * inference service that answers a request every 50 ms learns those
 * pauses as its rhythm and, as batch, would never be idle. */
#define CLIENT_IDLE_MIN_MS 2u
#define CLIENT_INTERACTIVE_IDLE_MS 5u
uint64_t client_idle_gap(int dev)
{
	uint64_t cap = client_g.conf.idle_ms;
	uint32_t learned = gate_gap_ms(dev);
	uint64_t gap = 2u * (uint64_t)learned + gate_clock_step_ms();

	if (client_g.conf.interactive && cap > CLIENT_INTERACTIVE_IDLE_MS)
		cap = CLIENT_INTERACTIVE_IDLE_MS;

	if (learned == GATE_GAP_UNKNOWN || !client_g.conf.idle_learn)
		return cap;
	if (gap < CLIENT_IDLE_MIN_MS)
		gap = CLIENT_IDLE_MIN_MS;
	return gap < cap ? gap : cap;
}

/* The time since the last look, split (the header comment above). */
static void look(int dev, struct client_gpu *g, uint64_t now)
{
	uint64_t t0 = g->use.at_ms, last, unfinished, end;
	long inflight, syncs;

	if (t0 == 0 || now <= t0)
		return;
	gate_activity(dev, &inflight, &last);
	gate_use_activity(dev, &syncs, &unfinished);
	if (unfinished > last)
		last = unfinished;
	end = inflight > 0 || syncs > 0 ? now : last + client_idle_gap(dev);
	if (end > now)
		end = now;
	if (end < t0)
		end = t0;
	g->use.busy_ms += end - t0;
	g->use.idle_ms += now - end;
	g->use.at_ms = now;
}

void client_use_swapout(struct client_gpu *g, const struct client_swap *sw)
{
	if (sw->bytes == 0)
		return;
	g->use.swapout_bytes += sw->bytes;
	g->use.swapout_us += sw->us;
}

static int send_usage(int dev, struct client_gpu *g)
{
	struct vs_usage m;

	memset(&m, 0, sizeof(m));
	memcpy(m.uuid, g->uuid, VS_UUID_LEN);
	m.busy_ms = g->use.busy_ms;
	m.idle_ms = g->use.idle_ms;
	m.swapout_bytes = g->use.swapout_bytes;
	m.swapout_us = g->use.swapout_us < VS_SWAPPED_US_MAX ?
		       g->use.swapout_us : VS_SWAPPED_US_MAX;
	g->use.busy_ms = g->use.idle_ms = 0;
	g->use.swapout_bytes = g->use.swapout_us = 0;
	log_debug("GPU %d: held %llu ms busy, %llu ms idle, %llu bytes swapped "
		  "out since the last report", dev,
		  (unsigned long long)m.busy_ms, (unsigned long long)m.idle_ms,
		  (unsigned long long)m.swapout_bytes);
	return client_send(VS_MSG_USAGE, &m, sizeof(m));
}

int client_use_due(int dev, struct client_gpu *g, int final, int *timeout)
{
	uint64_t now = gate_now_ms();

	if (g->held)
		look(dev, g, now);
	if (final)
		g->use.at_ms = 0;
	/* A scheduler older than version 9 has no use for it. */
	if (client_version() < 9) {
		memset(&g->use, 0, sizeof(g->use));
		return 0;
	}
	if (g->use.busy_ms || g->use.idle_ms || g->use.swapout_bytes) {
		if (final || now >= g->use.sent_ms + VS_USAGE_REPORT_MS) {
			g->use.sent_ms = now;
			if (send_usage(dev, g))
				return -1;
		}
	}
	if (timeout != NULL)
		client_use_timeout(g, timeout);
	return 0;
}

void client_use_timeout(const struct client_gpu *g, int *timeout)
{
	int t = (int)CLIENT_USE_TICK_MS;

	if (g->held && g->use.at_ms != 0 && (*timeout < 0 || t < *timeout))
		*timeout = t;
}

void client_unshared_begin(uint32_t why)
{
	if (client_c.unshared_ms == 0) {
		client_c.unshared_ms = gate_now_ms();
		client_c.unshared_ms += client_c.unshared_ms == 0;
		client_c.unshared_why = why;
	}
}

int client_unshared_tell(void)
{
	struct vs_unshared m;
	uint64_t since = client_c.unshared_ms, now = gate_now_ms();

	if (since == 0)
		return 0;
	client_c.unshared_ms = 0;
	if (client_version() < 9)
		return 0;
	memset(&m, 0, sizeof(m));
	m.ms = now > since ? now - since : 0;
	m.reason = client_c.unshared_why;
	log_debug("ran unshared for %llu ms (%s): told the scheduler",
		  (unsigned long long)m.ms, vs_unshared_name(m.reason));
	return client_send(VS_MSG_UNSHARED, &m, sizeof(m));
}
