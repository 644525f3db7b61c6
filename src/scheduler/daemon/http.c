/*
 * The metrics endpoint: libmicrohttpd in its external mode, driven by the
 * daemon's libuv loop. MHD gathers its sockets in one epoll descriptor,
 * which a uv_poll watches; MHD's own timeouts become a uv_timer. So every
 * MHD callback runs on the loop thread, between two policy calls, and
 * the answer is read from the policy's live state with no lock: MHD
 * never runs beside the policy. The text is rendered at most once a
 * second (metrics_cached) whoever asks, and each answer is a copy of it,
 * so scrapes cost the loop little however many come.
 *
 * Two things MHD leaves to the loop that drives it are done here.
 *
 * At its connection limit MHD takes its listening socket out of its epoll
 * set, and puts it back only at the start of a later MHD_run that finds a
 * free slot. Nothing in MHD asks for that later run: when the run that
 * frees the slots also ends the last connection (peers that all hang up
 * at once, or all time out at once), MHD's epoll set holds no socket and
 * MHD_get_timeout has no timeout, so no event would ever call MHD_run
 * again, and the endpoint would never accept again. A run in which a
 * connection ended is therefore followed by another at once.
 *
 * MHD's connection timeout counts silence: a peer that sends a byte every
 * few seconds keeps its slot for ever. So each connection here has a
 * deadline, HTTP_DEADLINE_MS after MHD took it, by which it must have
 * sent its request and taken its answer (MHD keeps none of these
 * connections alive: each answer closes its connection). Past it the
 * socket is shut down, and MHD closes the connection as it closes one
 * whose peer hung up; the descriptor stays MHD's to close.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "http.h"
#include "log.h"

/* A scraper or two and an admin's curl need a few connections; the
 * total leaves room for many addresses at their own limit, so that one
 * address, or a few, cannot take every slot. A connection is closed at
 * its deadline, whatever it does; MHD's idle timeout, of the same length,
 * only backs that up. */
#define HTTP_CONNS        64
#define HTTP_CONNS_PER_IP 4
#define HTTP_DEADLINE_MS  5000u
#define HTTP_IDLE_S       5
#define HTTP_CONN_MEM     (32 * 1024)

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* MHD's messages are mostly about peers (a refused connection, a bad
 * request), as are the deadline's: any host that reaches the port could
 * fill the log with them. One line per this long at most, the next one
 * saying how many were left out. */
#define HTTP_LOG_EVERY_MS 60000u

/* A connection that MHD serves, and when it must have finished its
 * request. MHD never holds more than HTTP_CONNS, so a table suffices. */
struct hconn {
	struct MHD_Connection *con; /* NULL: a free slot */
	int fd;                     /* MHD's; only ever shut down here */
	int shut;                   /* shut down past its deadline */
	uint64_t due;               /* its deadline, monotonic ms */
};

struct http {
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer;
	int open_handles;
	http_render_fn render;
	void *arg;
	int ended;              /* a connection ended in this run */
	struct hconn conns[HTTP_CONNS];
	uint64_t log_at;        /* when the last message was logged, ms */
	int logged;             /* one was */
	uint64_t log_dropped;   /* messages since then, not logged */
};

static void run(struct http *h);

static void on_timer(uv_timer_t *t)
{
	run(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	run(p->data);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* One message, unless one was logged less than HTTP_LOG_EVERY_MS ago.
 * Also called before the loop's handles exist (MHD logs its options'
 * errors as it starts): the monotonic clock, not the loop's. */
static void http_warn(struct http *h, const char *fmt, va_list ap)
{
	uint64_t now = mono_ms();
	char buf[256];
	size_t n;

	if (h->logged && now - h->log_at < HTTP_LOG_EVERY_MS) {
		h->log_dropped++;
		return;
	}
	vsnprintf(buf, sizeof(buf), fmt, ap);
	n = strlen(buf);
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (h->log_dropped)
		log_warn("metrics http: %s (and %llu messages since the "
			 "last one, not logged)", buf,
			 (unsigned long long)h->log_dropped);
	else
		log_warn("metrics http: %s", buf);
	h->logged = 1;
	h->log_at = now;
	h->log_dropped = 0;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	http_warn(cls, fmt, ap);
}

static void note(struct http *h, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct http *h, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	http_warn(h, fmt, ap);
	va_end(ap);
}

/* MHD took a connection (one within its limits) or let one go. */
static void on_conn(void *cls, struct MHD_Connection *con, void **ctx,
		    enum MHD_ConnectionNotificationCode code)
{
	struct http *h = cls;
	const union MHD_ConnectionInfo *ci;
	struct hconn *c = *ctx;
	size_t i;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (c != NULL)
			c->con = NULL;
		h->ended = 1;
		return;
	}
	/* Neither can fail for a connection MHD has just taken (it holds at
	 * most HTTP_CONNS); if one did, the connection would go untimed,
	 * so it is not served: shut down, or left to the idle timeout. */
	ci = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
	for (i = 0; i < HTTP_CONNS && h->conns[i].con != NULL; i++)
		;
	if (ci == NULL || i == HTTP_CONNS) {
		if (ci != NULL)
			shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	c = &h->conns[i];
	c->con = con;
	c->fd = ci->connect_fd;
	c->shut = 0;
	c->due = mono_ms() + HTTP_DEADLINE_MS;
	*ctx = c;
}

/* Shut down the connections past their deadline (MHD sees the shutdown
 * in its epoll set, and closes them in its next run). The ms until the
 * next deadline, UINT64_MAX for none. */
static uint64_t sweep(struct http *h)
{
	uint64_t now = mono_ms(), next = UINT64_MAX;
	unsigned shut = 0;
	size_t i;

	for (i = 0; i < HTTP_CONNS; i++) {
		struct hconn *c = &h->conns[i];

		if (c->con == NULL || c->shut)
			continue;
		if (c->due <= now) {
			shutdown(c->fd, SHUT_RDWR);
			c->shut = 1;
			shut++;
		} else if (c->due - now < next) {
			next = c->due - now;
		}
	}
	if (shut)
		note(h, "closed %u connection(s) at their deadline, %u ms "
		     "after they were accepted", shut, HTTP_DEADLINE_MS);
	return next;
}

/* Let MHD do what is ready, then wake up when it next has to: at once
 * after a connection ended (so that MHD takes its listening socket back
 * if the limit had put it aside), else at MHD's next timeout or the next
 * deadline. */
static void run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;
	uint64_t next;

	h->ended = 0;
	MHD_run(h->d);
	next = sweep(h);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES && (uint64_t)ms < next)
		next = (uint64_t)ms;
	if (h->ended)
		next = 0;
	if (next != UINT64_MAX)
		uv_timer_start(&h->timer, on_timer, next, 0);
	else
		uv_timer_stop(&h->timer);
}

static enum MHD_Result answer(struct MHD_Connection *con, unsigned code,
			      char *text, size_t len)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer_with_free_callback(len, text, free);
	if (r == NULL) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
	if (code == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	rc = MHD_queue_response(con, code, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result message(struct MHD_Connection *con, unsigned code,
			       const char *msg)
{
	char *t = strdup(msg);

	return t == NULL ? MHD_NO : answer(con, code, t, strlen(t));
}

/* GET (or HEAD) /metrics; nothing else is served. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *con,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **req)
{
	struct http *h = cls;
	size_t len = 0;
	char *text;

	(void)version;
	(void)upload;
	(void)req;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
	    strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return message(con, MHD_HTTP_METHOD_NOT_ALLOWED,
			       "only GET and HEAD\n");
	if (*upload_size != 0) {
		*upload_size = 0; /* a body on a GET is ignored */
		return MHD_YES;
	}
	if (strcmp(url, "/metrics") != 0)
		return message(con, MHD_HTTP_NOT_FOUND,
			       "vshare-scheduler serves /metrics only\n");
	text = h->render(h->arg, &len);
	if (text == NULL)
		return message(con, MHD_HTTP_INTERNAL_SERVER_ERROR,
			       "out of memory\n");
	return answer(con, MHD_HTTP_OK, text, len);
}

/* The listening socket is the daemon's own, so that a failure to bind
 * is told with the address asked for: MHD, given only the address, says
 * "Failed to bind to port 0" whatever the port. */
static int listen_on(const struct sockaddr *sa, socklen_t salen, char *err,
		     size_t errlen)
{
	int one = 1, e;
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC |
			SOCK_NONBLOCK, 0);

	if (fd < 0) {
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return -1;
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one,
				 sizeof(one));
	if (bind(fd, sa, salen) == 0 && listen(fd, SOMAXCONN) == 0)
		return fd;
	e = errno;
	close(fd);
	snprintf(err, errlen, "cannot listen there: %s%s", strerror(e),
		 e == EADDRINUSE ? " (another program has that port)" : "");
	return -1;
}

static struct MHD_Daemon *mhd_start(struct http *h, const struct sockaddr *sa,
				    int fd)
{
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (sa->sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The logger first: MHD logs its options' errors as it reads them. */
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
		MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNS,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_CONNS_PER_IP,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_IDLE_S,
		MHD_OPTION_NOTIFY_CONNECTION, on_conn, h,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEM,
		MHD_OPTION_END);
}

int http_start(struct http **out, uv_loop_t *loop, const struct sockaddr *sa,
	       socklen_t salen, http_render_fn render, void *arg, char *err,
	       size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *di;
	int fd;

	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fd = listen_on(sa, salen, err, errlen);
	if (fd < 0) {
		free(h);
		return -1;
	}
	h->render = render;
	h->arg = arg;
	errno = 0;
	h->d = mhd_start(h, sa, fd);
	di = h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (di == NULL || uv_poll_init(loop, &h->poll, di->epoll_fd) != 0) {
		snprintf(err, errlen, "%s", errno ? strerror(errno) :
			 "the HTTP server did not start");
		/* MHD closes the socket it was given when it stops, and
		 * may have closed it already when it failed to start. */
		if (h->d != NULL)
			MHD_stop_daemon(h->d);
		else if (fcntl(fd, F_GETFD) != -1)
			close(fd);
		free(h);
		return -1;
	}
	h->poll.data = h;
	uv_timer_init(loop, &h->timer);
	h->timer.data = h;
	h->open_handles = 2;
	uv_poll_start(&h->poll, UV_READABLE, on_poll);
	run(h);
	*out = h;
	return 0;
}

static void on_closed(uv_handle_t *hd)
{
	struct http *h = hd->data;

	if (--h->open_handles == 0)
		free(h);
}

void http_stop(struct http *h)
{
	if (h == NULL)
		return;
	/* The poll stops before MHD closes the descriptor it watches. */
	uv_poll_stop(&h->poll);
	uv_timer_stop(&h->timer);
	MHD_stop_daemon(h->d);
	h->d = NULL;
	uv_close((uv_handle_t *)&h->poll, on_closed);
	uv_close((uv_handle_t *)&h->timer, on_closed);
}
