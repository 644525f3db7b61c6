/*
 * Glue between the peers and the policy: client requests become sched_*
 * calls (the outbox going back out is srv_out.c's), signals, and the
 * daemon's start and stop.
 */
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "label.h"
#include "log.h"
#include "nvml.h"
#include "srv.h"

static uint64_t loop_clock(void *arg)
{
	return uv_now((uv_loop_t *)arg);
}

/* Deadlines of peers are checked this often: they are seconds long, and
 * one pass over the connections is cheap beside them. */
#define SWEEP_MS 250

static void on_sweep(uv_timer_t *t)
{
	struct srv *s = t->data;

	conn_sweep(s);
	peerlog_sweep(s);
	srv_flush(s);
}

static void peer_gone(struct conn *c)
{
	if (c->client == NULL)
		return;
	if (log_get_level() >= LOG_LVL_INFO) {
		char name[WHO_MAX];

		srv_who(c, sched_client_id(c->client), name, sizeof(name));
		plog_info(c, "%s left", name);
	}
	sched_client_del(c->srv->sched, c->client);
	c->client = NULL;
}

/* The policy of the peer's user (SO_PEERCRED, never the payload), to a
 * client that speaks version 3 or later; older ones hear none. */
static void send_policy(struct conn *c)
{
	struct conf_policy p;
	struct vs_policy m;

	if (c->client == NULL || c->closing || c->rx.version < 3)
		return;
	conf_policy_of(c->srv->conf, c->cred.uid, &p);
	memset(&m, 0, sizeof(m));
	m.mem_limit = p.mem_limit;
	m.flags = p.require ? VS_POLICYF_REQUIRE : 0;
	if (p.interactive && c->rx.version >= 6)
		m.flags |= VS_POLICYF_INTERACTIVE;
	m.weight = p.weight;
	conn_send(c, VS_MSG_POLICY, &m, sizeof(m));
}

/* The user's classes and cap, from the configuration, for the policy. */
static void set_class_policy(struct conn *c)
{
	struct conf_policy p;
	struct sched_class_pol cp;

	if (c->client == NULL)
		return;
	conf_policy_of(c->srv->conf, c->cred.uid, &p);
	cp.interactive = p.interactive;
	cp.budget_pct = p.budget_pct;
	cp.cap_pct = p.cap_pct;
	sched_client_set_policy(c->srv->sched, c->client, &cp);
}

static void on_hello(struct conn *c, const struct vs_hello *m)
{
	struct conf_policy pol;
	struct vs_welcome w;
	struct sched_uid_info ui;
	char label[VS_LABEL_MAX + 1], shown[VS_LABEL_ESC_SIZE(VS_LABEL_MAX)];

	/* The header's version, which the reader checked, is the one this
	 * client speaks; its HELLO must say the same. */
	if (m->proto_version != c->rx.version) {
		conn_send_error(c, VS_E_VERSION, VS_PROTO_VERSION,
				"vshare-scheduler speaks protocol versions %u "
				"to %u, the client version %u in a version %u "
				"frame", VS_PROTO_VERSION_MIN, VS_PROTO_VERSION,
				m->proto_version, c->rx.version);
		conn_close(c);
		return;
	}
	if (c->client != NULL) {
		conn_send_error(c, VS_E_STATE, 0, "hello sent twice");
		return;
	}
	memcpy(label, m->label, VS_LABEL_MAX);
	label[VS_LABEL_MAX] = '\0';
	vs_label_clean(label);
	c->client = sched_client_new(c->srv->sched, &c->cred, label, c);
	if (c->client == NULL) {
		conn_close(c);
		return;
	}
	/* The first client of a user brings the configured weight; later
	 * ones keep the user's (vsharectl set-weight may have changed it). */
	conf_policy_of(c->srv->conf, c->cred.uid, &pol);
	if (sched_uid_info(c->srv->sched, c->cred.uid, &ui) == 0 &&
	    ui.n_clients == 1)
		sched_client_set_weight(c->srv->sched, c->client, pol.weight);
	sched_client_set_class(c->client, m->klass);
	sched_client_set_proto(c->client, c->rx.version);
	set_class_policy(c);
	vs_label_escape(label, shown, sizeof(shown));
	plog_info(c, "client %u \"%s\" registered: pid %d, uid %u, protocol "
		  "%u, class %s%s; policy: limit %llu bytes per GPU (0: none)%s, "
		  "weight %u", sched_client_id(c->client), shown, c->cred.pid,
		  c->cred.uid, c->rx.version, vs_class_name(m->klass),
		  m->klass == VS_CLASS_INTERACTIVE && !pol.interactive ?
		  " (not allowed: batch)" : "", (unsigned long long)pol.mem_limit,
		  pol.require ? ", scheduler required" : "", pol.weight);
	memset(&w, 0, sizeof(w));
	w.proto_version = c->rx.version;
	w.client_id = sched_client_id(c->client);
	conn_send(c, VS_MSG_WELCOME, &w, sizeof(w));
	lockpage_send(c);
	send_policy(c);
}

static void log_new_gpu(struct conn *c, const struct sched_gpu *g)
{
	struct sched_gpu_info gi;
	char uuid[VS_UUID_STR_LEN];

	sched_gpu_info(g, &gi);
	vs_uuid_format(gi.uuid, uuid);
	plog_info(c, "first attach of GPU %u, %s: %.1f GiB, capacity %.1f "
		  "GiB, mode %s, quantum %u s", gi.index, uuid,
		  (double)gi.total_mem / (1 << 30),
		  (double)gi.capacity / (1 << 30), vs_mode_name(gi.mode),
		  gi.tq_ms / 1000);
}

static uint64_t gpu_total(const struct sched_gpu *g)
{
	struct sched_gpu_info gi;

	if (g == NULL)
		return 0;
	sched_gpu_info(g, &gi);
	return gi.total_mem;
}

/* Which limit refused an ATTACH or a REQUEST: what to tell the client,
 * the limit's value, and the reason it is counted under (or none). */
struct limit {
	const char *name;
	uint32_t value;
	int reason;                 /* METRICS_REFUSE_*, -1: not a limit */
};

static struct limit limit_of(const struct conn *c, uint16_t type, int rc,
			     const uint8_t uuid[VS_UUID_LEN])
{
	const struct conf *l = c->srv->conf;
	const struct sched *sc = c->srv->sched;
	struct sched_uid_info ui;

	/* VS_E_FULL is the GPU table only for a new GPU with the table
	 * full; otherwise the policy ran out of memory. */
	if (rc == VS_E_FULL && type == VS_MSG_ATTACH &&
	    sched_gpu_find(sc, uuid) == NULL &&
	    sched_gpu_count(sc) >= SCHED_MAX_GPUS)
		return (struct limit){ "GPU table full", SCHED_MAX_GPUS,
				       METRICS_REFUSE_gpu_table };
	if (rc == VS_E_FULL)
		return (struct limit){ "out of memory", 0, -1 };
	if (type == VS_MSG_REQUEST)
		return (struct limit){ "uid_requests", l->uid_requests,
				       METRICS_REFUSE_uid_requests };
	if (sched_uid_info(sc, c->cred.uid, &ui) == 0 &&
	    ui.n_gpus >= l->uid_gpus)
		return (struct limit){ "uid_gpus", l->uid_gpus,
				       METRICS_REFUSE_uid_gpus };
	return (struct limit){ "GPUs per client", SCHED_MAX_CLIENT_GPUS,
			       METRICS_REFUSE_client_gpus };
}

/* A refusal by a limit names the GPU first, so that the client knows
 * which GPU to run unshared (include/vshare/proto.h). Counted once, by
 * its reason; logged once per connection: a peer must not be able to
 * fill the log. */
static void refuse(struct conn *c, uint16_t type, const void *payload, int rc)
{
	const uint8_t *id = ((const struct vs_gpu_ref *)payload)->uuid;
	char uuid[VS_UUID_STR_LEN];
	struct limit lim = limit_of(c, type, rc, id);

	if (lim.reason >= 0)
		c->srv->mx.refused[lim.reason]++;
	vs_uuid_format(id, uuid);
	if (!c->refused_once)
		plog_warn(c, "%s refused for uid %u (pid %d) on %s: %s (%u); "
			  "the client runs that GPU unshared",
			  type == VS_MSG_ATTACH ? "attach" : "request",
			  c->cred.uid, c->cred.pid, uuid, lim.name, lim.value);
	c->refused_once = 1;
	conn_send_error(c, rc, lim.value, "%s: %s refused: %s (%u)", uuid,
			type == VS_MSG_ATTACH ? "attach" : "request", lim.name,
			lim.value);
}

/*
 * WAIT_QUERY: the asker's place and who holds the GPU, for the line its
 * shim prints. The holder's label and uid are what every member of the
 * socket's group reads in the status already (status_public, the
 * default); where only admins may read it, they stay hidden. A client
 * asks once per wait; one that asks in a loop is answered
 * VS_WAIT_QUERIES_PER_S times a second and then hears nothing, which
 * costs the loop a comparison.
 */
static int on_wait_query(struct conn *c, const struct vs_wait_query *q)
{
	struct sched_wait_info wi;
	struct sched_client_info ci;
	struct vs_waiting w;
	uint64_t now = uv_now(c->srv->loop);
	int rc, see;

	if (now - c->wq_window >= 1000) {
		c->wq_window = now;
		c->wq_n = 0;
	}
	if (c->wq_n >= VS_WAIT_QUERIES_PER_S)
		return 0;
	c->wq_n++;
	rc = sched_wait_info(c->srv->sched, c->client, q->uuid, &wi);
	if (rc < 0)
		return rc;
	memset(&w, 0, sizeof(w));
	memcpy(w.uuid, q->uuid, VS_UUID_LEN);
	/* Who holds the GPU, since when and what that makes of the wait are
	 * what vsharectl status shows: a peer that may not read the status
	 * hears only its own place. */
	see = c->is_admin || c->srv->conf->status_public;
	if (wi.position != 0) {
		w.position = wi.position;
		w.n_waiting = wi.n_waiting;
		w.waited_ms = wi.waited_ms;
		w.n_holders = see ? wi.n_holders : wi.n_holders != 0;
		w.gpu_index = see ? wi.gpu_index : 0;
		w.held_ms = see ? wi.held_ms : 0;
		w.eta_ms = see ? wi.eta_ms : UINT64_MAX;
	}
	if (wi.holder != NULL && see) {
		sched_client_info(wi.holder, &ci);
		w.holder_uid = ci.cred.uid;
		memcpy(w.holder_label, ci.label, strnlen(ci.label, VS_LABEL_MAX));
	} else if (wi.holder != NULL) {
		w.holder_uid = VS_WAIT_HIDDEN;
	}
	conn_send(c, VS_MSG_WAITING, &w, sizeof(w));
	return 0;
}

/* A client request; the policy answers through the outbox, or with an
 * error code that the client hears as VS_MSG_ERROR. */
/* A client of version 4 hears its GPU's mode at once after an ATTACH
 * that took: it takes the GPU through the lock page only after that, so
 * that a token in a word always belongs to an attached client. */
static void attached(struct conn *c, const uint8_t uuid[VS_UUID_LEN])
{
	const struct sched_gpu *g = sched_gpu_find(c->srv->sched, uuid);
	struct sched_gpu_info gi;
	struct vs_mode m;

	if (c->rx.version < 4 || g == NULL)
		return;
	sched_gpu_info(g, &gi);
	memset(&m, 0, sizeof(m));
	memcpy(m.uuid, uuid, VS_UUID_LEN);
	m.mode = gi.mode;
	conn_send(c, VS_MSG_MODE, &m, sizeof(m));
}

/* Every client request but HELLO starts with its GPU's UUID: an error
 * names it first ("GPU-<uuid>: request: ..."), as a refusal by a limit
 * does, so that a client of version 5 knows which GPU to resynchronise
 * (it asks again, or gives back a take the scheduler did not see). */
static void answer_error(struct conn *c, uint16_t type, const void *payload,
			 int rc)
{
	const struct vs_msg_info *mi = vs_msg_lookup(type);
	char uuid[VS_UUID_STR_LEN];

	if (mi == NULL || mi->role != VS_ROLE_CLIENT || type == VS_MSG_HELLO ||
	    type == VS_MSG_UNSHARED || mi->size < VS_UUID_LEN) {
		conn_send_error(c, rc, 0, "%s: %s", mi ? mi->name : "?",
				vs_err_name(rc));
		return;
	}
	vs_uuid_format(((const struct vs_gpu_ref *)payload)->uuid, uuid);
	conn_send_error(c, rc, 0, "%s: %s: %s", uuid, mi->name,
			vs_err_name(rc));
}

static void on_client_msg(struct conn *c, const struct vs_hdr *h,
			  const void *payload)
{
	struct sched *sc = c->srv->sched;
	int rc;

	if (c->client == NULL) {
		conn_send_error(c, VS_E_STATE, 0, "hello must come first");
		conn_close(c);
		return;
	}
	switch (h->type) {
	case VS_MSG_ATTACH: {
		const struct vs_attach *m = payload;
		const struct sched_gpu *known = sched_gpu_find(sc, m->uuid);
		uint64_t total = gpu_total(known);

		rc = sched_attach(sc, c->client, m->uuid, m->total_mem);
		if (rc >= 0)
			attached(c, m->uuid);
		/* A new GPU may take the slot of an unused one: by UUID. */
		if (rc >= 0 && known == NULL)
			log_new_gpu(c, sched_gpu_find(sc, m->uuid));
		else if (rc >= 0 && m->total_mem != total)
			plog_debug(c, "client %u reports %llu bytes on a GPU "
				   "known with %llu: its report binds its own "
				   "grants only", sched_client_id(c->client),
				   (unsigned long long)m->total_mem,
				   (unsigned long long)total);
		break;
	}
	case VS_MSG_FOOTPRINT: {
		const struct vs_footprint *m = payload;
		rc = sched_footprint(sc, c->client, m->uuid, m->managed,
				     m->pinned);
		break;
	}
	case VS_MSG_REQUEST:
		rc = sched_request(sc, c->client,
				   ((const struct vs_gpu_ref *)payload)->uuid);
		break;
	case VS_MSG_RELEASED:
		rc = sched_released(sc, c->client,
				    ((const struct vs_gpu_ref *)payload)->uuid);
		break;
	case VS_MSG_SWAPPED: {
		const struct vs_swapped *m = payload;

		plog_debug(c, "client %u swapped in %llu bytes in %llu us",
			   sched_client_id(c->client),
			   (unsigned long long)m->bytes,
			   (unsigned long long)m->us);
		rc = sched_swapped(sc, c->client, m->uuid, m->us, m->bytes);
		break;
	}
	case VS_MSG_USAGE: {
		const struct vs_usage *m = payload;

		rc = sched_usage(sc, c->client, m->uuid, m->busy_ms,
				 m->idle_ms, m->swapout_bytes, m->swapout_us);
		break;
	}
	case VS_MSG_UNSHARED: {
		const struct vs_unshared *m = payload;

		rc = sched_unshared(sc, c->client, m->ms, m->reason);
		if (rc == 1)
			plog_info(c, "client %u (uid %u, pid %d) ran unshared "
				  "for %llu ms before it connected (%s)",
				  sched_client_id(c->client),
				  (unsigned)c->cred.uid, (int)c->cred.pid,
				  (unsigned long long)m->ms,
				  m->reason == VS_UNSHARED_ABSENT ?
				  "no scheduler could be reached" :
				  "its connection to the scheduler ended");
		rc = rc > 0 ? 0 : rc;
		break;
	}
	case VS_MSG_WAIT_QUERY:
		rc = on_wait_query(c, payload);
		break;
	case VS_MSG_TOOK:
		rc = sched_took(sc, c->client,
				((const struct vs_gpu_ref *)payload)->uuid);
		if (rc == 0)
			plog_debug(c, "client %u took its GPU through the "
				   "lock page", sched_client_id(c->client));
		else if (rc == VS_E_STATE && !c->took_refused)
			plog_info(c, "client %u (uid %u, pid %d) says it took "
				  "a GPU through the lock page, but its token "
				  "was not in the word: refused (counted from "
				  "now on, not logged)",
				  sched_client_id(c->client),
				  (unsigned)c->cred.uid, (int)c->cred.pid);
		if (rc == VS_E_STATE)
			c->took_refused = 1;
		break;
	default:
		rc = VS_E_PROTO;
		break;
	}
	if (rc == VS_E_LIMIT || rc == VS_E_FULL)
		refuse(c, h->type, payload, rc);
	else if (rc < 0)
		answer_error(c, h->type, payload, rc);
}

static void dispatch(struct conn *c, const struct vs_hdr *h,
		     const void *payload)
{
	const struct vs_msg_info *mi = vs_msg_lookup(h->type);

	if (h->type == VS_MSG_STATUS &&
	    (c->is_admin || c->srv->conf->status_public))
		stq_request(c); /* ctl.c answers a metrics request itself */
	else if (mi != NULL && mi->role == VS_ROLE_ADMIN)
		ctl_handle(c, h, payload);
	else if (h->type == VS_MSG_HELLO)
		on_hello(c, payload);
	else
		on_client_msg(c, h, payload);
}

/* conn.c reports to this file through these, never by name. */
static const struct conn_events events = {
	.frame = dispatch,
	.gone = peer_gone,
	.read_done = srv_flush,
};

static void on_signal(uv_signal_t *sig, int signum)
{
	struct srv *s = sig->data;
	int rc;

	if (signum == SIGHUP) {
		log_info("SIGHUP: reloading %s", s->conf_path);
		/* systemd (Type=notify) shows the unit as reloading until
		 * the READY=1 that follows, kept config or new. Without
		 * NOTIFY_SOCKET these calls do nothing. */
		sd_notify(0, "RELOADING=1");
		rc = reload_conf(s);
		sd_notify(0, "READY=1");
		if (rc != 0)
			return;
		/* Running programs take the new policy at once: a lower
		 * limit refuses their next allocations. */
		for (struct conn *c = s->conns, *next; c != NULL; c = next) {
			next = c->next;
			set_class_policy(c);
			send_policy(c);
		}
		srv_flush(s);
		return;
	}
	log_info("%s: shutting down", signum == SIGINT ? "SIGINT" : "SIGTERM");
	srv_stop(s);
}

/* For the start-up line: the socket's group by name. */
static const char *group_name(int has, gid_t gid)
{
	static char num[16];
	const struct group *gr;

	if (!has)
		return "the daemon's own";
	gr = getgrgid(gid);
	if (gr != NULL)
		return gr->gr_name;
	snprintf(num, sizeof(num), "%u", (unsigned)gid);
	return num;
}

static char *metrics_text(void *arg, size_t *len)
{
	/* A render reads the policy's state and changes nothing (a take
	 * not yet told shows as such), so there is nothing to flush. */
	return ctl_metrics_text(arg, 1, len);
}

/* The metrics over HTTP, when metrics_listen asks for them: 0, or -1
 * (logged) when the address cannot be served. */
static int http_up(struct srv *s)
{
	struct sockaddr_storage ss;
	unsigned len;
	char err[160];

	if (s->conf->metrics_listen[0] == '\0')
		return 0;
	if (conf_listen_parse(s->conf->metrics_listen, &ss, &len, err,
			      sizeof(err)) != 0 ||
	    http_start(&s->http, s->loop, (const struct sockaddr *)&ss,
		       (socklen_t)len, metrics_text, s, err, sizeof(err)) != 0) {
		log_error("metrics_listen %s: %s", s->conf->metrics_listen,
			  err);
		return -1;
	}
	log_info("metrics on http://%s/metrics", s->conf->metrics_listen);
	return 0;
}

int srv_start(struct srv *s)
{
	struct sched_cfg cfg;
	int rc;

	conf_sched_cfg(s->conf, &cfg);
	if (nvml_open() == 0) {
		cfg.total_fn = nvml_total;
		cfg.index_fn = nvml_index;
		s->nvml = 1;
	}
	s->timer_due = SCHED_NO_DEADLINE;
	s->events = &events;
	s->lock_fd = s->words_fd = -1;
	s->lock = NULL;
	s->words = NULL;
	s->sched = sched_new(&cfg, loop_clock, s->loop);
	if (s->sched == NULL)
		return -1;
	if (s->conf->lock_page) {
		rc = lockpage_create(s);
		if (rc != 0)
			log_warn("no lock page (%s): every grant goes through "
				 "the socket", strerror(-rc));
		sched_lock_set(s->sched, s->lock, s->words);
	}
	uv_timer_init(s->loop, &s->timer);
	s->timer.data = s;
	stq_init(s);
	uv_timer_init(s->loop, &s->sweep);
	s->sweep.data = s;
	uv_timer_start(&s->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
	for (int i = 0; i < 3; i++) {
		static const int signums[3] = { SIGTERM, SIGINT, SIGHUP };

		uv_signal_init(s->loop, &s->sig[i]);
		s->sig[i].data = s;
		uv_signal_start(&s->sig[i], on_signal, signums[i]);
	}
	rc = sock_prepare(s);
	if (rc == 0)
		rc = sock_listen(s, conn_accept);
	if (rc == 0)
		rc = http_up(s);
	if (rc != 0) {
		srv_stop(s);
		return -1;
	}
	log_info("listening on %s (mode %04o, group %s); admin requests from "
		 "root%s%s; quantum %u s, mode %s", s->path,
		 s->conf->socket_mode, group_name(s->has_sock_gid, s->sock_gid),
		 s->has_admin_gid ? " and group " : " only",
		 s->has_admin_gid ? s->admin_group_name : "", s->conf->tq_s,
		 vs_mode_name(s->conf->mode));
	/* Only now that connect() on the socket succeeds: systemd starts
	 * the units ordered after this one when it reads READY=1. */
	sd_notifyf(0, "READY=1\nSTATUS=listening on %s", s->path);
	return 0;
}

/* Close every handle; uv_run then returns. The policy is freed by the
 * caller after the loop has run the close callbacks. */
void srv_stop(struct srv *s)
{
	if (s->stopping)
		return;
	s->stopping = 1;
	sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
	while (s->conns != NULL)
		conn_close(s->conns);
	sched_out_clear(s->sched);
	srv_flush(s);
	sock_close(s);
	uv_close((uv_handle_t *)&s->timer, NULL);
	uv_close((uv_handle_t *)&s->sweep, NULL);
	stq_close(s);
	http_stop(s->http);
	s->http = NULL;
	nvml_close();
	for (int i = 0; i < 3; i++)
		uv_close((uv_handle_t *)&s->sig[i], NULL);
}
