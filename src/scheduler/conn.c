/*
 * One peer connection: accept, read frames, write frames, close. Framing
 * only: a complete, valid frame goes up through the server's
 * conn_events; a malformed one closes this connection and nothing else.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "srv.h"

struct wreq {
	uv_write_t req;
	unsigned char data[];
};

static void on_closed(uv_handle_t *h)
{
	free(h); /* the pipe is the first member of struct conn */
}

void conn_close(struct conn *c)
{
	struct srv *s = c->srv;

	if (c->closing)
		return;
	c->closing = 1;
	s->events->gone(c);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	uv_close((uv_handle_t *)&c->pipe, on_closed);
}

static void on_written(uv_write_t *req, int status)
{
	(void)status; /* a failed write shows up as a read error or EOF */
	free(req);
}

void conn_send(struct conn *c, uint16_t type, const void *payload, uint32_t len)
{
	unsigned char stack[sizeof(struct vs_hdr) + 256];
	size_t total = sizeof(struct vs_hdr) + len;
	unsigned char *buf = total <= sizeof(stack) ? stack : malloc(total);
	struct vs_hdr h;
	uv_buf_t b;
	int n;

	if (c->closing || buf == NULL)
		goto out;
	vs_hdr_init(&h, type, len);
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
		log_debug("peer %d: write: %s", c->cred.pid, uv_strerror(n));
		conn_close(c);
	} else if ((size_t)n < total) {
		size_t rest = total - (size_t)n;
		struct wreq *w;

		if (uv_stream_get_write_queue_size((uv_stream_t *)&c->pipe) +
		    rest > CONN_MAX_OUTQ) {
			log_warn("peer pid %d does not read its messages: "
				 "disconnecting it", c->cred.pid);
			conn_close(c);
			goto out;
		}
		w = malloc(sizeof(*w) + rest);
		if (w == NULL) {
			conn_close(c);
			goto out;
		}
		memcpy(w->data, buf + n, rest);
		b = uv_buf_init((char *)w->data, (unsigned)rest);
		if (uv_write(&w->req, (uv_stream_t *)&c->pipe, &b, 1,
			     on_written) != 0) {
			free(w);
			conn_close(c);
		}
	}
out:
	if (buf != stack)
		free(buf);
}

void conn_send_error(struct conn *c, int32_t code, uint32_t detail,
		     const char *fmt, ...)
{
	struct vs_error e;
	va_list ap;

	memset(&e, 0, sizeof(e));
	e.code = code;
	e.detail = detail;
	va_start(ap, fmt);
	vsnprintf(e.msg, sizeof(e.msg), fmt, ap);
	va_end(ap);
	/* The message must be printable text: the peer checks it. */
	for (char *p = e.msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	conn_send(c, VS_MSG_ERROR, &e, sizeof(e));
}

static void feed(struct conn *c, const unsigned char *p, size_t n)
{
	while (!c->closing) {
		enum vs_frx_result r = vs_frx_push(&c->rx, &p, &n);

		switch (r) {
		case VS_FRX_FRAME:
			c->srv->events->frame(c, &c->rx.in.hdr,
					      vs_frx_payload(&c->rx));
			continue;
		case VS_FRX_VERSION:
			log_info("peer pid %d speaks protocol version %u, not %u",
				 c->cred.pid, c->rx.in.hdr.version,
				 VS_PROTO_VERSION);
			/* Our own version in the header: the peer reads the
			 * frozen header and prints the message. */
			conn_send_error(c, VS_E_VERSION, VS_PROTO_VERSION,
					"vshare-scheduler speaks protocol version "
					"%u, the peer version %u: update the older "
					"side", VS_PROTO_VERSION,
					c->rx.in.hdr.version);
			conn_close(c);
			return;
		case VS_FRX_PROTO:
			log_info("peer pid %d: %s (type 0x%x, length %u): "
				 "disconnecting it", c->cred.pid, c->rx.why,
				 c->rx.in.hdr.type, c->rx.in.hdr.length);
			conn_send_error(c, VS_E_PROTO, 0, "%s", c->rx.why);
			conn_close(c);
			return;
		default: /* VS_FRX_MORE; a request never needs a VS_FRX_BUFFER */
			return;
		}
	}
}

/* One buffer for every read: the loop is single-threaded and each read
 * is consumed before the next one starts. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	static char rbuf[64 * 1024];

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
			log_debug("peer pid %d: read: %s", c->cred.pid,
				  uv_strerror((int)n));
		if (c->rx.len > 0)
			log_info("peer pid %d left in the middle of a frame",
				 c->cred.pid);
		conn_close(c);
	} else {
		feed(c, (const unsigned char *)buf->base, (size_t)n);
	}
	c->srv->events->read_done(c->srv);
}

void conn_on_connection(uv_stream_t *server, int status)
{
	struct srv *s = server->data;
	struct conn *c;
	uv_os_fd_t fd;

	if (status < 0) {
		log_warn("accept: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL || uv_pipe_init(s->loop, &c->pipe, 0) != 0) {
		free(c);
		return;
	}
	c->srv = s;
	/* Clients and admins alike; none sends more than a request. */
	vs_frx_init(&c->rx, 0, VS_FRX_MAX_REQ);
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	if (uv_accept(server, (uv_stream_t *)&c->pipe) != 0 ||
	    uv_fileno((uv_handle_t *)&c->pipe, &fd) != 0 ||
	    sock_peer(fd, &c->cred, s, &c->is_admin) != 0) {
		conn_close(c);
		return;
	}
	if (s->n_conns > s->conf->max_clients) {
		log_warn("more than max_clients (%u) connections: refusing "
			 "pid %d", s->conf->max_clients, c->cred.pid);
		/* Say why before closing: the peer would otherwise see a
		 * bare disconnect. */
		conn_send_error(c, VS_E_STATE, s->conf->max_clients,
				"too many connections (max_clients %u): try "
				"again later", s->conf->max_clients);
		conn_close(c);
		return;
	}
	if (uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) != 0)
		conn_close(c);
}
