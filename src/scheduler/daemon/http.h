/*
 * The metrics over HTTP (libmicrohttpd): GET /metrics answers with the
 * text that a callback renders. Runs on the daemon's loop thread (http.c
 * says why); knows nothing of the policy.
 */
#ifndef VSHARE_HTTP_H
#define VSHARE_HTTP_H

#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

/* The text of one answer, malloc'd (the server frees it), *len set; NULL
 * when it cannot be made (the client gets a 500). */
typedef char *(*http_render_fn)(void *arg, size_t *len);

struct http;

/* Listen on sa and serve from the loop. 0 and *out, or -1 with err. */
int http_start(struct http **out, uv_loop_t *loop, const struct sockaddr *sa,
	       socklen_t salen, http_render_fn render, void *arg, char *err,
	       size_t errlen);
/* Stop listening and close every connection; the memory goes with the
 * loop's close callbacks. NULL is fine. */
void http_stop(struct http *h);

#endif
