/*
 * The lines one peer makes the daemon write, limited so that no peer can
 * fill the log. Every line about a peer passes two token buckets: its
 * connection's and its uid's, which outlives the connections, so that a
 * loop of connecting, registering and leaving is limited too. A bucket is
 * a virtual clock (tat): a line may be written while the clock is less
 * than a burst of intervals ahead of now, and each line written moves it
 * one interval on. A line over either limit is not written but counted
 * against its uid; the count is told in one line when the uid's bucket
 * is full again (the sweep), with its next line written (at most every
 * PEERLOG_TELL_MS while lines keep being dropped), and at shutdown.
 */
#include <stdarg.h>
#include <stdlib.h>

#include "grow.h"
#include "log.h"
#include "srv.h"

#define PEERLOG_CONN_BURST 10u   /* lines at once, per connection */
#define PEERLOG_UID_BURST  40u   /* lines at once, per uid */
#define PEERLOG_EVERY_MS   1000u /* then one more line each second */
#define PEERLOG_TELL_MS    10000u

struct peerlog_uid {
	uint32_t uid;
	uint64_t tat;        /* the bucket's clock, ms; <= now: full */
	uint64_t dropped;    /* lines not written since the last count */
	uint64_t told;       /* when the last count was written, ms */
};

static int room(uint64_t tat, uint64_t now, unsigned burst)
{
	return tat < now + (uint64_t)burst * PEERLOG_EVERY_MS;
}

static uint64_t take(uint64_t tat, uint64_t now)
{
	return (tat > now ? tat : now) + PEERLOG_EVERY_MS;
}

/* The uid's bucket, made full when the uid has none; NULL when memory
 * is short (its lines then pass the connection's bucket alone). */
static struct peerlog_uid *uid_bucket(struct srv *s, uint32_t uid)
{
	struct peerlog_uid *u;

	for (size_t i = 0; i < s->n_log_uids; i++)
		if (s->log_uids[i].uid == uid)
			return &s->log_uids[i];
	if (VS_GROW(s->log_uids, s->n_log_uids, s->cap_log_uids, 8) != 0)
		return NULL;
	u = &s->log_uids[s->n_log_uids++];
	u->uid = uid;
	u->tat = 0;
	u->dropped = 0;
	u->told = 0;
	return u;
}

static void peerlog_tell(struct peerlog_uid *u, uint64_t now)
{
	log_warn("uid %u: %llu lines about its connections were not logged "
		 "(at most %u at once per uid and %u per connection, then "
		 "one a second; refusals are counted in "
		 "vshare_refusals_total)", u->uid,
		 (unsigned long long)u->dropped, PEERLOG_UID_BURST,
		 PEERLOG_CONN_BURST);
	u->dropped = 0;
	u->told = now;
}

void peer_log(struct conn *c, enum log_level level, const char *func,
	      const char *fmt, ...)
{
	struct peerlog_uid *u = NULL;
	uint64_t now = 0;
	va_list ap;

	if ((int)level > (int)log_get_level())
		return;
	if (c != NULL) {
		now = uv_now(c->srv->loop);
		/* Admins (root among them) are exempt from the uid's
		 * bucket, as from the per-uid limits: many programs of one
		 * admin are the node's own work, not a flood. */
		u = c->is_admin ? NULL : uid_bucket(c->srv, c->cred.uid);
		if (!room(c->log_tat, now, PEERLOG_CONN_BURST) ||
		    (u != NULL && !room(u->tat, now, PEERLOG_UID_BURST))) {
			if (u != NULL)
				u->dropped++;
			return;
		}
		c->log_tat = take(c->log_tat, now);
	}
	if (u != NULL) {
		u->tat = take(u->tat, now);
		if (u->dropped > 0 && (u->told == 0 ||
				       now - u->told >= PEERLOG_TELL_MS))
			peerlog_tell(u, now);
	}
	va_start(ap, fmt);
	log_vmsg(level, func, fmt, ap);
	va_end(ap);
}

/* Counts of buckets that are full again; buckets full with nothing to
 * tell are forgotten (a new one starts full, the same). */
void peerlog_sweep(struct srv *s)
{
	uint64_t now = uv_now(s->loop);
	size_t i = 0;

	while (i < s->n_log_uids) {
		struct peerlog_uid *u = &s->log_uids[i];

		if (u->tat > now) {
			i++;
			continue;
		}
		if (u->dropped > 0)
			peerlog_tell(u, now);
		*u = s->log_uids[--s->n_log_uids];
	}
}

void peerlog_free(struct srv *s)
{
	for (size_t i = 0; i < s->n_log_uids; i++)
		if (s->log_uids[i].dropped > 0)
			peerlog_tell(&s->log_uids[i], 0);
	free(s->log_uids);
	s->log_uids = NULL;
	s->n_log_uids = s->cap_log_uids = 0;
}
