/*
 * One peer connection: accept, read frames, write frames, close. Framing
 * only: a complete, valid frame goes up through the server's
 * conn_events; a malformed one closes this connection and nothing else.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "grow.h"
#include "log.h"
#include "srv.h"

struct wreq {
	uv_write_t req;
	struct conn *c;
	size_t cost;               /* what it counts in outq */
	unsigned char data[];
};

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* What a queued write really costs: the request, its copy of the bytes
 * and the allocator's overhead, not the payload alone. */
static size_t write_cost(size_t bytes)
{
	return (sizeof(struct wreq) + bytes + 15) / 16 * 16 + 16;
}

/* ---- connections per uid ---- */

static struct srv_uid *uid_slot(struct srv *s, uint32_t uid, int add)
{
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i].uid == uid)
			return &s->uids[i];
	if (!add)
		return NULL;
	if (VS_GROW(s->uids, s->n_uids, s->cap_uids, 8) != 0)
		return NULL;
	s->uids[s->n_uids].uid = uid;
	s->uids[s->n_uids].n = 0;
	return &s->uids[s->n_uids++];
}

static void uid_release(struct conn *c)
{
	struct srv *s = c->srv;
	struct srv_uid *u;

	if (!c->counted || (u = uid_slot(s, c->cred.uid, 0)) == NULL)
		return;
	c->counted = 0;
	if (--u->n == 0)
		*u = s->uids[--s->n_uids];
}

static void on_closed(uv_handle_t *h)
{
	struct conn *c = (struct conn *)h; /* the pipe is the first member */

	free(c->stash);
	free(c);
}

void conn_close(struct conn *c)
{
	struct srv *s = c->srv;

	if (c->closing)
		return;
	c->closing = 1;
	s->events->gone(c);
	uid_release(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
}

static void feed(struct conn *c, const unsigned char *p, size_t n);

/* Its output drained: read the peer again, starting with what it sent
 * while it was paused. */
static void resume(struct conn *c)
{
	if (c->closing || !c->paused)
		return;
	unsigned char *p = c->stash;
	size_t n = c->stash_len;

	c->paused = 0;
	c->stash = NULL;
	c->stash_len = 0;
	/* The frame clock stood still while we did not read. */
	if (c->t_frame != 0)
		c->t_frame = uv_now(c->srv->loop);
	if (n > 0)
		feed(c, p, n);
	free(p);
	if (!c->closing && !c->paused &&
	    uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) != 0)
		conn_close(c);
	c->srv->events->read_done(c->srv);
}

static void on_written(uv_write_t *req, int status)
{
	struct wreq *w = (struct wreq *)req;
	struct conn *c = w->c;

	(void)status; /* a failed write shows up as a read error or EOF */
	c->outq -= w->cost;
	c->srv->outq_total -= w->cost;
	free(w);
	if (c->paused && !c->closing && c->status_gen == 0 &&
	    c->outq <= c->srv->conf->outq_pause / 2)
		resume(c);
}

void conn_pause(struct conn *c)
{
	if (c->paused || c->closing)
		return;
	c->paused = 1;
	uv_read_stop((uv_stream_t *)&c->pipe);
}

void conn_resume(struct conn *c)
{
	if (c->status_gen == 0 && c->outq <= c->srv->conf->outq_pause)
		resume(c);
}

/* A peer whose output backs up is not read until it drains: it cannot
 * make the daemon queue more for it than one read's worth of answers. */
static void pause_if_full(struct conn *c)
{
	if (c->outq > c->srv->conf->outq_pause)
		conn_pause(c);
}

/* 0 if `cost` more bytes may be queued to c, else the peer is dropped. */
static int queue_room(struct conn *c, size_t cost)
{
	const struct conf *l = c->srv->conf;

	if (c->outq + cost > l->outq_max) {
		plog_warn(c, "peer pid %d does not read its messages: "
			  "disconnecting it", c->cred.pid);
		return -1;
	}
	if (c->srv->outq_total + cost > l->outq_total) {
		plog_warn(c, "%llu bytes queued to peers that do not read "
			  "(outq_total %llu): disconnecting pid %d",
			  (unsigned long long)c->srv->outq_total,
			  (unsigned long long)l->outq_total,
			  c->cred.pid);
		return -1;
	}
	return 0;
}

/* The version of the peer's frames (include/vshare/proto.h): it hears
 * its own. Before its first frame, or when its version is not ours,
 * version 1, which every reader accepts. */
static uint16_t peer_version(const struct conn *c)
{
	return c->rx.version != 0 ? c->rx.version : VS_PROTO_VERSION_MIN;
}

/* Queue the bytes of buf from `sent` to `total` that the socket did not
 * take, behind anything queued before; a peer over its limits is
 * dropped. */
static void queue_rest(struct conn *c, const unsigned char *buf, size_t sent,
		       size_t total)
{
	size_t rest = total - sent, cost = write_cost(rest);
	struct wreq *w;
	uv_buf_t b;

	if (sent >= total)
		return;
	if (queue_room(c, cost) != 0 ||
	    (w = malloc(sizeof(*w) + rest)) == NULL) {
		conn_close(c);
		return;
	}
	w->c = c;
	w->cost = cost;
	memcpy(w->data, buf + sent, rest);
	b = uv_buf_init((char *)w->data, (unsigned)rest);
	if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1,
		     on_written) != 0) {
		free(w);
		conn_close(c);
		return;
	}
	c->outq += cost;
	c->srv->outq_total += cost;
	pause_if_full(c);
}

static void send_v(struct conn *c, uint16_t version, uint16_t type,
		   const void *payload, uint32_t len)
{
	unsigned char stack[sizeof(struct vs_hdr) + 256];
	size_t total = sizeof(struct vs_hdr) + len;
	unsigned char *buf = total <= sizeof(stack) ? stack : malloc(total);
	struct vs_hdr h;
	uv_buf_t b;
	int n;

	if (c->closing || buf == NULL)
		goto out;
	vs_hdr_init_v(&h, version, type, len);
	memcpy(buf, &h, sizeof(h));
	if (len)
		memcpy(buf + sizeof(struct vs_hdr), payload, len);
	b = uv_buf_init((char *)buf, (unsigned)total);
	n = 0;
	/* Most frames go out at once; only what the socket does not take
	 * is copied and queued, behind anything queued before. */
	if (uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) == 0)
		n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
	if (n == UV_EAGAIN || n == UV_ENOSYS)
		n = 0;
	if (n < 0) {
		plog_debug(c, "peer %d: write: %s", c->cred.pid,
			   uv_strerror(n));
		conn_close(c);
	} else {
		queue_rest(c, buf, (size_t)n, total);
	}
out:
	if (buf != stack)
		free(buf);
}

/* The frame with n_fds descriptors (up to CONN_MAX_FDS) passed alongside
 * its first byte (SCM_RIGHTS), sent at once or not at all: -1 when the
 * peer's output is queued already or the socket takes none of it (the
 * caller goes on without the descriptors). A part the socket did not
 * take is queued. */
int conn_send_fds(struct conn *c, uint16_t type, const void *payload,
		  uint32_t len, const int *fds, unsigned n_fds)
{
	unsigned char buf[sizeof(struct vs_hdr) + 64];
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(CONN_MAX_FDS * sizeof(int))];
	} ctl;
	size_t total = sizeof(struct vs_hdr) + len;
	struct iovec iov;
	struct msghdr mh;
	struct cmsghdr *cm;
	struct vs_hdr h;
	uv_os_fd_t sock;
	ssize_t n;

	if (c->closing || len > sizeof(buf) - sizeof(h) || n_fds == 0 ||
	    n_fds > CONN_MAX_FDS ||
	    uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) != 0 ||
	    uv_fileno((uv_handle_t *)&c->pipe, &sock) != 0)
		return -1;
	vs_hdr_init_v(&h, peer_version(c), type, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), payload, len);
	iov.iov_base = buf;
	iov.iov_len = total;
	memset(&mh, 0, sizeof(mh));
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.b;
	mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
	cm = CMSG_FIRSTHDR(&mh);
	if (cm == NULL)
		return -1;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n_fds * sizeof(int));
	do
		n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		plog_debug(c, "peer %d: sendmsg: %s", c->cred.pid,
			   n < 0 ? strerror(errno) : "nothing sent");
		return -1;
	}
	queue_rest(c, buf, (size_t)n, total);
	return 0;
}

void conn_send(struct conn *c, uint16_t type, const void *payload, uint32_t len)
{
	send_v(c, peer_version(c), type, payload, len);
}

static void error_v(struct conn *c, uint16_t version, int32_t code,
		    uint32_t detail, const char *fmt, va_list ap)
{
	struct vs_error e;

	memset(&e, 0, sizeof(e));
	e.code = code;
	e.detail = detail;
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	/* The message must be printable text: the peer checks it. */
	for (char *p = e.msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	send_v(c, version, VS_MSG_ERROR, &e, sizeof(e));
}

void conn_send_error(struct conn *c, int32_t code, uint32_t detail,
		     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_v(c, peer_version(c), code, detail, fmt, ap);
	va_end(ap);
}

/* A peer of a version not spoken here: our own version in the header,
 * whose layout is frozen, so that the peer reads it and prints it. */
static void version_error(struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void version_error(struct conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	error_v(c, VS_PROTO_VERSION, VS_E_VERSION, VS_PROTO_VERSION, fmt, ap);
	va_end(ap);
}

/* Keep what a paused peer sent beyond the frame that filled its queue. */
static void stash(struct conn *c, const unsigned char *p, size_t n)
{
	c->stash = malloc(n);
	if (c->stash == NULL) {
		conn_close(c);
		return;
	}
	memcpy(c->stash, p, n);
	c->stash_len = n;
}

/* Deadlines: a whole frame resets the idle clock, a partial one starts
 * the frame clock. */
static void clocks(struct conn *c, int whole)
{
	uint64_t now = uv_now(c->srv->loop);

	if (whole)
		c->t_idle = now;
	if (c->rx.len == 0)
		c->t_frame = 0;
	else if (c->t_frame == 0 || whole)
		c->t_frame = now;
}

static void feed(struct conn *c, const unsigned char *p, size_t n)
{
	int whole = 0;

	while (!c->closing) {
		enum vs_frx_result r;

		if (c->paused) {
			if (n > 0)
				stash(c, p, n);
			break;
		}
		r = vs_frx_push(&c->rx, &p, &n);
		switch (r) {
		case VS_FRX_FRAME:
			whole = 1;
			c->srv->events->frame(c, &c->rx.in.hdr,
					      vs_frx_payload(&c->rx));
			continue;
		case VS_FRX_VERSION:
			c->srv->mx.refused[METRICS_REFUSE_version]++;
			plog_info(c, "peer pid %d speaks protocol version %u, "
				  "not %u to %u", c->cred.pid,
				  c->rx.in.hdr.version, VS_PROTO_VERSION_MIN,
				  VS_PROTO_VERSION);
			version_error(c, "vshare-scheduler speaks protocol "
				      "versions %u to %u, the peer version %u: "
				      "update the older side",
				      VS_PROTO_VERSION_MIN, VS_PROTO_VERSION,
				      c->rx.in.hdr.version);
			conn_close(c);
			return;
		case VS_FRX_PROTO:
			c->srv->mx.refused[METRICS_REFUSE_protocol]++;
			plog_info(c, "peer pid %d: %s (type 0x%x, length %u): "
				  "disconnecting it", c->cred.pid, c->rx.why,
				  c->rx.in.hdr.type, c->rx.in.hdr.length);
			conn_send_error(c, VS_E_PROTO, 0, "%s", c->rx.why);
			conn_close(c);
			return;
		default: /* VS_FRX_MORE; a request never needs a VS_FRX_BUFFER */
			clocks(c, whole);
			return;
		}
	}
	clocks(c, whole);
}

/* One buffer for every read: the loop is single-threaded and each read
 * is consumed before the next one starts. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char rbuf[CONN_READ_MAX];

	(void)h;
	(void)suggested;
	*buf = uv_buf_init(rbuf, sizeof(rbuf));
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct conn *c = (struct conn *)st;

	/* A closed conn is freed only by the loop's close callback, so c
	 * stays readable to the end of this function. */
	if (n < 0) {
		if (n != UV_EOF)
			plog_debug(c, "peer pid %d: read: %s", c->cred.pid,
				   uv_strerror((int)n));
		if (c->rx.len > 0)
			plog_info(c, "peer pid %d left in the middle of a frame",
				  c->cred.pid);
		conn_close(c);
	} else {
		feed(c, (const unsigned char *)buf->base, (size_t)n);
	}
	c->srv->events->read_done(c->srv);
}

/* The uid (not an admin) with the most connections, NULL if none. */
static struct srv_uid *heaviest(struct srv *s)
{
	struct srv_uid *h = NULL;

	for (size_t i = 0; i < s->n_uids; i++)
		if (h == NULL || s->uids[i].n > h->n)
			h = &s->uids[i];
	return h;
}

/* A full table makes room for a newcomer whose uid has fewer connections
 * than the uid with the most, h, has beyond one more: one connection of
 * h goes, one that has not registered if h has one (the newest of
 * those), else h's newest. So the table is shared out evenly between
 * the uids that want it, and a flood of many uids can keep no uid with
 * few connections out: the refused side is the uid with the most. 0 if
 * a connection was closed for c. */
static int make_room(struct conn *c, const struct srv_uid *u)
{
	struct srv *s = c->srv;
	struct srv_uid *h = heaviest(s);
	struct conn *v = NULL, *it;
	uint32_t huid, hn;

	if (h == NULL || h->n <= (u != NULL ? u->n : 0) + 1)
		return -1;
	huid = h->uid;
	hn = h->n;
	for (it = s->conns; it != NULL; it = it->next) {
		if (it == c || it->closing || !it->counted ||
		    it->cred.uid != huid)
			continue;
		if (it->client == NULL) {
			v = it;
			break;
		}
		if (v == NULL)
			v = it;
	}
	if (v == NULL)
		return -1;
	s->mx.refused[METRICS_REFUSE_evicted]++;
	plog_info(v, "connections full (max_clients %u): closing one of uid "
		  "%u's %u, the most of any uid, for uid %u", s->conf->max_clients,
		  huid, hn, c->cred.uid);
	conn_send_error(v, VS_E_FULL, s->conf->max_clients, "too many "
			"connections (max_clients %u): uid %u holds the most "
			"(%u), one of them closed for another uid", s->conf->max_clients,
			huid, hn);
	conn_close(v);
	return 0;
}

/* Refuse a new peer with a reason it can print: 0 if it may stay.
 * Connections of every peer count in max_clients; admins (root,
 * admin_group) have CONN_ADMIN_RESERVE connections beyond it that
 * nobody else can take, so vsharectl answers however full the table
 * is. */
static int admit_peer(struct conn *c)
{
	struct srv *s = c->srv;
	uint32_t max = s->conf->max_clients;
	struct srv_uid *u = NULL;

	if (c->is_admin) {
		if (s->n_conns <= (size_t)max + CONN_ADMIN_RESERVE)
			return 0;
		plog_warn(c, "more than max_clients (%u) and the admins' %u "
			  "connections: refusing pid %d", max,
			  CONN_ADMIN_RESERVE, c->cred.pid);
		s->mx.refused[METRICS_REFUSE_max_clients]++;
		conn_send_error(c, VS_E_FULL, max, "too many connections "
				"(max_clients %u): try again later", max);
		return -1;
	}
	u = uid_slot(s, c->cred.uid, 1);
	if (u == NULL)
		return -1;
	if (u->n >= s->conf->uid_conns) {
		/* Not a warning per refusal: that would let the peer fill
		 * the log. */
		plog_debug(c, "uid %u has %u connections (uid_conns): "
			   "refusing pid %d", c->cred.uid, u->n, c->cred.pid);
		s->mx.refused[METRICS_REFUSE_uid_conns]++;
		conn_send_error(c, VS_E_LIMIT, s->conf->uid_conns,
				"uid %u has too many connections (uid_conns "
				"%u)", c->cred.uid, s->conf->uid_conns);
		return -1;
	}
	if (s->n_conns > max && make_room(c, u) != 0) {
		/* Once per connection: the uid's own log bucket bounds it. */
		plog_info(c, "more than max_clients (%u) connections and uid "
			  "%u has as many as any: refusing pid %d", max,
			  c->cred.uid, c->cred.pid);
		s->mx.refused[METRICS_REFUSE_max_clients]++;
		conn_send_error(c, VS_E_FULL, max, "too many connections "
				"(max_clients %u): try again later", max);
		return -1;
	}
	u->n++;
	c->counted = 1;
	return 0;
}

/* A uid cooling down after a burst of refusals (cool.c) is closed at
 * once: nothing sent, nothing logged. Each refusal is charged to its
 * uid; root and the admin group are never charged. 0 if c may stay. */
static int admit_or_cool(struct conn *c)
{
	struct srv *s = c->srv;
	uint64_t now = uv_now(s->loop);

	if (!c->is_admin && cool_active(&s->cool, c->cred.uid, now)) {
		s->mx.refused[METRICS_REFUSE_cooldown]++;
		return -1;
	}
	if (admit_peer(c) == 0)
		return 0;
	if (!c->is_admin && cool_refused(&s->cool, c->cred.uid, now))
		log_warn("uid %u had %u connections refused within %u ms: its "
			 "new connections are closed at once for %u s",
			 c->cred.uid, COOL_BURST, COOL_WINDOW_MS,
			 COOL_MS / 1000);
	return -1;
}

int conn_accept(struct srv *s)
{
	struct conn *c;
	uv_os_fd_t fd;

	c = calloc(1, sizeof(*c));
	if (c == NULL || uv_pipe_init(s->loop, &c->pipe, 0) != 0) {
		free(c);
		return -1;
	}
	c->srv = s;
	/* Clients and admins alike; none sends more than a request. */
	vs_frx_init(&c->rx, 0, VS_FRX_MAX_REQ);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	c->t_idle = uv_now(s->loop);
	if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->pipe) != 0) {
		conn_close(c);
		return 0;
	}
	s->mx.conns_total++; /* accepted, whether admitted or not */
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0 ||
	    sock_peer(fd, &c->cred, s, &c->is_admin) != 0 ||
	    admit_or_cool(c) != 0) {
		conn_close(c);
		return 0;
	}
	if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) != 0)
		conn_close(c);
	return 0;
}

/* A peer that is not registered must send a whole frame within hello_ms
 * of connecting (or of its last frame); any peer must finish a frame
 * within frame_ms of its first byte. Idle registered clients stay: a
 * program may hold the GPU without talking. */
void conn_sweep(struct srv *s)
{
	uint64_t now = uv_now(s->loop);
	struct conn *c = s->conns, *next;

	for (; c != NULL; c = next) {
		const char *why = NULL;

		next = c->next;
		if (c->t_frame != 0 && !c->paused &&
		    now - c->t_frame > s->conf->frame_ms)
			why = "did not finish a frame within frame_ms";
		else if (c->client == NULL && !c->paused &&
			 now - c->t_idle > s->conf->hello_ms)
			why = "sent no whole frame within hello_ms";
		if (why == NULL)
			continue;
		plog_debug(c, "peer pid %d %s: disconnecting it", c->cred.pid,
			   why);
		s->mx.refused[METRICS_REFUSE_deadline]++;
		conn_send_error(c, VS_E_STATE, 0, "%s", why);
		conn_close(c);
	}
}
