/*
 * The metrics endpoint: libmicrohttpd in its external mode, driven by the
 * daemon's libuv loop. MHD gathers its sockets in one epoll descriptor,
 * which a uv_poll watches; MHD's own timeouts become a uv_timer. So every
 * MHD callback runs on the loop thread, between two policy calls, and
 * the answer is read from the policy's live state with no lock: MHD
 * never runs beside the policy. The text is rendered at most once a
 * second (metrics_cached) whoever asks, and each answer is a copy of it,
 * so scrapes cost the loop little however many come.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <microhttpd.h>

#include "http.h"
#include "log.h"

/* A scraper or two, and an admin's curl: a few connections suffice, and
 * a peer that stalls is dropped after the timeout. */
#define HTTP_CONNS       16
#define HTTP_CONNS_PER_IP 4
#define HTTP_TIMEOUT_S   10
#define HTTP_CONN_MEM    (32 * 1024)

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* MHD's messages are mostly about peers (a refused connection, a bad
 * request): any host that reaches the port could fill the log with them.
 * One line per this long at most, the next one saying how many were
 * left out. */
#define HTTP_LOG_EVERY_MS 60000u

struct http {
	struct MHD_Daemon *d;
	uv_poll_t poll;
	uv_timer_t timer;
	int open_handles;
	http_render_fn render;
	void *arg;
	uint64_t log_at;        /* when the last MHD message was logged, ms */
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

/* Let MHD do what is ready, then wake up when it next has to. */
static void run(struct http *h)
{
	MHD_UNSIGNED_LONG_LONG ms;

	MHD_run(h->d);
	if (MHD_get_timeout(h->d, &ms) == MHD_YES)
		uv_timer_start(&h->timer, on_timer, (uint64_t)ms, 0);
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

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Also called before the loop's handles exist (MHD logs its options'
 * errors as it starts): the monotonic clock, not the loop's. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct http *h = cls;
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

static struct MHD_Daemon *mhd_start(struct http *h, const struct sockaddr *sa)
{
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (sa->sa_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The logger first: MHD logs its options' errors as it reads them. */
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, h,
		MHD_OPTION_EXTERNAL_LOGGER, mhd_log, h,
		MHD_OPTION_SOCK_ADDR, sa,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNS,
		MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)HTTP_CONNS_PER_IP,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONN_MEM,
		MHD_OPTION_END);
}

int http_start(struct http **out, uv_loop_t *loop, const struct sockaddr *sa,
	       socklen_t salen, http_render_fn render, void *arg, char *err,
	       size_t errlen)
{
	struct http *h = calloc(1, sizeof(*h));
	const union MHD_DaemonInfo *di;

	(void)salen; /* MHD takes the length from the family */
	if (h == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	h->render = render;
	h->arg = arg;
	errno = 0;
	h->d = mhd_start(h, sa);
	di = h->d ? MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (di == NULL || uv_poll_init(loop, &h->poll, di->epoll_fd) != 0) {
		snprintf(err, errlen, "%s", errno ? strerror(errno) :
			 "the HTTP server did not start");
		if (h->d != NULL)
			MHD_stop_daemon(h->d);
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
