/*
 * The policy's side going out: its outbox becomes frames to the peers
 * and log lines, its next deadline becomes the one loop timer. Below the
 * message handlers of srv.c, which flush here after each decision.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "log.h"
#include "srv.h"

static void on_timer(uv_timer_t *t)
{
	struct srv *s = t->data;

	s->timer_due = SCHED_NO_DEADLINE;
	sched_tick(s->sched);
	srv_flush(s);
}

static void rearm(struct srv *s)
{
	uint64_t due = sched_next_deadline(s->sched), now;

	if (due == s->timer_due || s->stopping)
		return;
	s->timer_due = due;
	if (due == SCHED_NO_DEADLINE) {
		uv_timer_stop(&s->timer);
		return;
	}
	now = uv_now(s->loop);
	uv_timer_start(&s->timer, on_timer, due > now ? due - now : 0, 0);
}

void srv_who(const struct conn *c, uint32_t id, char *out, size_t n)
{
	struct sched_client_info ci;
	char label[VS_LABEL_ESC_SIZE(VS_LABEL_MAX)];

	if (c == NULL || c->client == NULL) {
		snprintf(out, n, "client %u", id);
		return;
	}
	sched_client_info(c->client, &ci);
	vs_label_escape(ci.label, label, sizeof(label));
	snprintf(out, n, "client %u \"%s\" (pid %d)", id, label,
		 (int)ci.cred.pid);
}

/* The flags of a GRANT as c hears them: a peer of version 6 or older
 * knows nothing of pacing, and its reader would refuse the frame. */
static uint32_t grant_flags_for(const struct conn *c, uint32_t flags)
{
	if (c == NULL || c->rx.version < 7)
		flags &= ~VS_GRANTF_PACE;
	return flags;
}

/* Lines about the client the entry is for (peer_log: limited per
 * connection and uid, unless the client is gone). */
static void log_out(struct srv *s, const struct sched_out *o)
{
	char uuid[VS_UUID_STR_LEN], name[WHO_MAX];
	const struct vs_grant *g = &o->u.grant;
	struct conn *c = o->user;

	vs_uuid_format(o->uuid, uuid);
	srv_who(c, o->client_id, name, sizeof(name));
	if (o->kind == SCHED_OUT_UNRESPONSIVE) {
		plog_warn(c, "%s has not released %s within %u ms of a drop "
			  "request%s", name, uuid, s->conf->grace_ms,
			  o->revoked ? ": skipping it, the others proceed" :
			  ": the others wait (skip_unresponsive is off)");
		return;
	}
	/* Debug: a busy node grants and drops many times a second. */
	if (o->type == VS_MSG_GRANT) {
		int took = o->kind == SCHED_OUT_TOOK;
		uint32_t flags = took ? 0 : grant_flags_for(c, g->flags);

		plog_debug(c, "grant %s to %s: %s, quantum %u s%s%s%s", uuid,
			   name, g->kind == VS_GRANT_EXCLUSIVE ? "exclusive" :
			   "shared", g->tq_ms / 1000,
			   took ? ", taken through the lock page" : "",
			   flags & VS_GRANTF_OVERSUB ?
			   ", oversubscribed (it prefetches)" : "",
			   flags & VS_GRANTF_PACE ?
			   ", paced (an interactive program shares the GPU)" :
			   "");
	} else if (o->type == VS_MSG_DROP)
		plog_debug(c, "drop request to %s for %s: %s", name, uuid,
			   sched_drop_text(o->why));
}

static void deliver(struct srv *s, const struct sched_out *o)
{
	struct conn *c = o->user;

	/* Formatting costs more than the rest of a grant: only for logs. */
	if (o->kind == SCHED_OUT_UNRESPONSIVE || log_get_level() >= LOG_LVL_DEBUG)
		log_out(s, o);
	if (o->kind != SCHED_OUT_MSG || c == NULL)
		return;
	switch (o->type) {
	case VS_MSG_GRANT: {
		struct vs_grant g = o->u.grant;

		g.flags = grant_flags_for(c, g.flags);
		conn_send(c, o->type, &g, sizeof(g));
		break;
	}
	case VS_MSG_DROP:
		conn_send(c, o->type, &o->u.drop, sizeof(o->u.drop));
		break;
	case VS_MSG_MODE:
		conn_send(c, o->type, &o->u.mode, sizeof(o->u.mode));
		break;
	default:
		break;
	}
}

/* Sending may close a connection, whose departure adds to the outbox:
 * take a copy of the outbox each round until it stays empty. */
void srv_flush(struct srv *s)
{
	if (s->flushing)
		return;
	s->flushing = 1;
	while (sched_out_count(s->sched) > 0) {
		size_t n = sched_out_count(s->sched);

		if (n > s->batch_cap) {
			struct sched_out *p = realloc(s->batch, n * sizeof(*p));

			if (p == NULL)
				break;
			s->batch = p;
			s->batch_cap = n;
		}
		for (size_t i = 0; i < n; i++)
			s->batch[i] = *sched_out_at(s->sched, i);
		sched_out_clear(s->sched);
		for (size_t i = 0; i < n; i++)
			deliver(s, &s->batch[i]);
	}
	sched_out_clear(s->sched);
	s->flushing = 0;
	rearm(s);
}
