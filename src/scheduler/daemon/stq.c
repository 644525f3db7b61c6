/*
 * Status requests, answered off the loop. With thousands of clients the
 * status document takes a hundred milliseconds and more to render; done
 * on the loop, a few peers asking for it back to back held every grant
 * up by that much. So the loop only takes a frozen copy of the policy
 * (sched_snapshot), a worker thread renders and frees it, and one
 * rendering answers every request that arrived before its copy was
 * taken. What a rendering costs the loop (the copy, the replies) is
 * measured, and the next one waits nine times as long (at most
 * STQ_GAP_MAX_MS): status requests take at most a tenth of the loop
 * whatever their number, and a small status is still answered at once.
 * A peer waiting for its status is not read meanwhile.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "log.h"
#include "srv.h"

#define STQ_GAP_MAX_MS 100
#define STQ_MAX    (VS_MAX_PAYLOAD - sizeof(struct vs_reply))

static void start(struct srv *s);

static void work(uv_work_t *w)
{
	struct srv *s = w->data;

	/* The loop's grants come first: on a node whose cores are busy the
	 * rendering must not take the loop's turn. Per-thread on Linux. */
	setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);

	s->st_json = s->st_snap == NULL ? NULL :
		     ctl_status_json(s->st_snap, s->st_names, STQ_MAX,
				     &s->st_len);
	sched_snap_free(s->st_snap);
	s->st_snap = NULL;
	names_unref(s->st_names);
	s->st_names = NULL;
}

/* One reply frame's payload: struct vs_reply, then the text. */
static void *reply_of(const char *json, size_t len, uint32_t *rlen)
{
	static const char oom[] = "out of memory";
	const char *text = json ? json : oom;
	size_t n = json ? len : sizeof(oom) - 1;
	struct vs_reply *r = malloc(sizeof(*r) + n);

	if (r == NULL)
		return NULL;
	r->status = json ? VS_OK : VS_E_INVAL;
	r->json_len = (uint32_t)n;
	memcpy(r + 1, text, n);
	*rlen = (uint32_t)(sizeof(*r) + n);
	return r;
}

static void answer(struct srv *s, uint32_t gen, const char *json, size_t n)
{
	uint32_t len = 0;
	void *r = reply_of(json, n, &len);
	struct conn *c, *next;

	for (c = s->conns; c != NULL; c = next) {
		next = c->next;
		if (c->status_gen != gen)
			continue;
		c->status_gen = 0;
		if (r == NULL) {
			conn_close(c);
			continue;
		}
		conn_send(c, VS_MSG_REPLY, r, len);
		if (!c->closing)
			conn_resume(c);
	}
	free(r);
}

static int anyone_waits(const struct srv *s)
{
	for (const struct conn *c = s->conns; c != NULL; c = c->next)
		if (c->status_gen != 0)
			return 1;
	return 0;
}

/* The rendering is done. Its text is taken off the shared fields first:
 * answering reads peers again, whose new requests must wait for the
 * bookkeeping below (st_answering), not start a rendering whose worker
 * would write those fields while this one still uses them. */
static void after(uv_work_t *w, int status)
{
	struct srv *s = w->data;
	char *json = s->st_json;
	size_t len = s->st_len;
	uint64_t t0 = uv_hrtime();

	(void)status;
	s->st_json = NULL;
	s->st_busy = 0;
	s->st_answering = 1;
	if (!s->stopping)
		answer(s, s->st_cur, json, len);
	s->st_answering = 0;
	free(json);
	s->st_cost += uv_hrtime() - t0;
	uv_update_time(s->loop);
	s->st_last = uv_now(s->loop);
	s->st_gap = s->st_cost * 9 / 1000000;
	if (s->st_gap > STQ_GAP_MAX_MS)
		s->st_gap = STQ_GAP_MAX_MS;
	if (!s->stopping && anyone_waits(s))
		start(s);
}

static void on_gap(uv_timer_t *t)
{
	start(t->data);
}

static void start(struct srv *s)
{
	uint64_t now = uv_now(s->loop), t0;

	if (s->st_busy || s->st_answering || s->stopping ||
	    uv_is_active((uv_handle_t *)&s->st_timer))
		return;
	if (s->st_last != 0 && now - s->st_last < s->st_gap) {
		uv_timer_start(&s->st_timer, on_gap,
			       s->st_gap - (now - s->st_last), 0);
		return;
	}
	use_refresh(s);
	t0 = uv_hrtime();
	s->st_snap = sched_snapshot(s->sched);
	s->st_names = names_ref(s->names);
	s->st_cost = uv_hrtime() - t0;
	s->st_cur = s->st_next++;
	if (s->st_next == 0)
		s->st_next = 1;
	s->st_busy = 1;
	s->st_work.data = s;
	if (uv_queue_work(s->loop, &s->st_work, work, after) != 0) {
		s->st_json = NULL;
		sched_snap_free(s->st_snap);
		s->st_snap = NULL;
		names_unref(s->st_names);
		s->st_names = NULL;
		after(&s->st_work, 0);
	}
}

void stq_request(struct conn *c)
{
	struct srv *s = c->srv;

	c->status_gen = s->st_next;
	conn_pause(c);
	start(s);
}

void stq_init(struct srv *s)
{
	s->st_next = 1;
	uv_timer_init(s->loop, &s->st_timer);
	s->st_timer.data = s;
}

void stq_close(struct srv *s)
{
	uv_close((uv_handle_t *)&s->st_timer, NULL);
}
