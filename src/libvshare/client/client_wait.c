/*
 * Telling the program's user that its GPU work waits. A program blocked
 * at a closed gate looks hung from outside; once a wait passes
 * VSHARE_WAIT_NOTICE_MS the client asks the scheduler who holds the GPU
 * and where this program stands (VS_MSG_WAIT_QUERY), prints one line
 * with the answer, and one more when the grant comes. The shim logs once
 * per kind of problem, not per call: one line per wait at most, and none
 * within CLIENT_WAIT_GAP_MS of the last, so that a program that waits a
 * little at every turn is not chatty.
 *
 * Nothing here sends or reads frames: client_work.c sends the query when
 * client_wait_due says so, and client_msg.c hands over the answer and the
 * grant (no circle between the files).
 */
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "client_int.h"
#include "label.h"
#include "log.h"

/* Least time between two "waiting" lines of one process. */
#define CLIENT_WAIT_GAP_MS 30000u

static uint64_t last_told_ms; /* client thread only */

void client_wait_begin(struct client_gpu *g)
{
	g->wait.since_ms = gate_now_ms();
	g->wait.since_ns = gate_now_ns();
	g->wait.waiter_ms = 0;
	g->wait.asked = 0;
	g->wait.told = 0;
}

/* The GPU's name in the lines: the program's ordinal, and the start of
 * its UUID as nvidia-smi prints it, which the status table shows too. */
static void gpu_name(int dev, const struct client_gpu *g, char *out, size_t n)
{
	char u[VS_UUID_STR_LEN];

	vs_uuid_format(g->uuid, u);
	snprintf(out, n, "GPU %d (%.12s)", dev, u);
}

/* When the wait began: the REQUEST, or the first waiting thread if it
 * came later. */
static uint64_t wait_start(const struct client_gpu *g)
{
	return g->wait.since_ms > g->wait.waiter_ms ? g->wait.since_ms
						    : g->wait.waiter_ms;
}

int client_wait_due(int dev, struct client_gpu *g, int *timeout)
{
	uint64_t now = gate_now_ms(), at;
	char name[32];

	if (!client_g.conf.wait_notice || g->wait.asked || g->held ||
	    !g->requested || gate_waiting(dev) == 0)
		return 0;
	/* The wait is a thread's: a REQUEST may have gone out before any
	 * thread waited (a reconnection asks for the GPUs it used). */
	if (g->wait.waiter_ms == 0)
		g->wait.waiter_ms = now;
	at = wait_start(g) + client_g.conf.wait_notice_ms;
	/* Within the gap after the last line the wait is told later, once
	 * the gap has passed, not never: a long wait after a short one is
	 * the one that looks hung. */
	if (last_told_ms != 0 && at < last_told_ms + CLIENT_WAIT_GAP_MS)
		at = last_told_ms + CLIENT_WAIT_GAP_MS;
	if (now < at) {
		if (*timeout < 0 || at - now < (uint64_t)*timeout)
			*timeout = (int)(at - now);
		return 0;
	}
	g->wait.asked = 1;
	if (client_version() >= 3)
		return 1;
	/* A scheduler older than the query: say what this side knows. */
	gpu_name(dev, g, name, sizeof(name));
	log_notice("%s is busy: GPU work waits for it (%.1f s so far; this "
		   "scheduler does not say who holds it)", name,
		   (double)(now - wait_start(g)) / 1000.0);
	g->wait.told = 1;
	last_told_ms = now;
	return 0;
}

/* "user alice", or "uid 1234" where the name cannot be looked up. On the
 * client thread, so a slow name service delays only this line. */
static void user_name(uint32_t uid, char *out, size_t n)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 &&
	    res != NULL)
		snprintf(out, n, "user %s", res->pw_name);
	else
		snprintf(out, n, "uid %u", uid);
}

/* "held by "train" (user alice) for 3.2 s", or less of it where the
 * scheduler knows or says less. The label is another user's: escaped,
 * so that it cannot pass for the rest of the line. */
static void holder_text(const struct vs_waiting *m, char *out, size_t n)
{
	char label[VS_LABEL_MAX + 1], user[96], others[32] = "";
	char shown[VS_LABEL_ESC_SIZE(VS_LABEL_MAX)];

	if (m->n_holders == 0) {
		snprintf(out, n, "about to be granted");
		return;
	}
	if (m->n_holders > 1)
		snprintf(others, sizeof(others), " and %u other%s",
			 m->n_holders - 1, m->n_holders > 2 ? "s" : "");
	/* A scheduler whose status is for admins only says neither who
	 * holds the GPU nor for how long. */
	if (m->holder_uid == VS_WAIT_HIDDEN) {
		snprintf(out, n, "held by another program");
		return;
	}
	memcpy(label, m->holder_label, VS_LABEL_MAX);
	label[VS_LABEL_MAX] = '\0';
	vs_label_escape(label, shown, sizeof(shown));
	user_name(m->holder_uid, user, sizeof(user));
	snprintf(out, n, "held by \"%s\" (%s)%s for %.1f s", shown, user,
		 others, (double)m->held_ms / 1000.0);
}

void client_wait_answer(int dev, const struct vs_waiting *m)
{
	struct client_gpu *g = &client_g.gpu[dev];
	char name[32], holder[VS_LABEL_ESC_SIZE(VS_LABEL_MAX) + 160],
	     eta[48] = "";

	/* Granted meanwhile (position 0), or an answer nobody waits for. */
	if (m->position == 0 || !g->wait.asked || g->wait.told || g->held)
		return;
	/* Another GPU's line went out since this one was asked: this wait
	 * is told after the gap (client_wait_due asks again). */
	if (last_told_ms != 0 &&
	    gate_now_ms() < last_told_ms + CLIENT_WAIT_GAP_MS) {
		g->wait.asked = 0;
		return;
	}
	if (m->eta_ms != UINT64_MAX)
		snprintf(eta, sizeof(eta), ", its turn within about %llu s",
			 (unsigned long long)(m->eta_ms + 999) / 1000);
	gpu_name(dev, g, name, sizeof(name));
	holder_text(m, holder, sizeof(holder));
	log_notice("%s is busy, %s: GPU work waits (%.1f s so far), place %u "
		   "of %u in the queue%s", name, holder,
		   (double)(gate_now_ms() - wait_start(g)) / 1000.0,
		   m->position, m->n_waiting, eta);
	g->wait.told = 1;
	last_told_ms = gate_now_ms();
}

void client_wait_granted(int dev)
{
	struct client_gpu *g = &client_g.gpu[dev];
	char name[32];

	if (g->wait.told) {
		gpu_name(dev, g, name, sizeof(name));
		log_notice("%s: got the GPU after %.1f s", name,
			   (double)(gate_now_ms() - wait_start(g)) / 1000.0);
	}
	memset(&g->wait, 0, sizeof(g->wait));
}

void client_wait_atfork_child(void)
{
	last_told_ms = 0;
}
