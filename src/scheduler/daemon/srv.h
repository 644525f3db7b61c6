/*
 * The daemon's libuv layer: the listening socket (sock_*), one connection
 * per peer (conn_*: framing only), dispatch of client requests to the
 * policy and of its outbox to the peers (srv_*), admin requests (ctl_*),
 * status requests (stq_*) and SIGHUP (reload_*). Everything runs on one
 * loop thread, but for the rendering of status documents (stq.c), which
 * works on a private copy of the policy.
 *
 * Calls go one way (no circles: docs/scheduler.md): srv.c calls ctl.c,
 * stq.c, reload.c, http.c, lockpage.c, srv_out.c, conn.c and sock.c;
 * srv_out.c (the outbox going out) calls conn.c; stq.c calls ctl.c and
 * conn.c; ctl.c calls metrics.c and conn.c; conn.c calls sock.c and
 * cool.c (the policy layer). A lower file reports upward through a return
 * value, or through the callbacks srv.c hands down: struct conn_events
 * for conn.c, the accept callback of sock_listen for sock.c. srv.c,
 * srv_out.c, ctl.c and conn.c write the lines about a peer through
 * peerlog.c, which calls nothing of theirs. This is the top layer of the
 * daemon (src/scheduler/CMakeLists.txt): it calls the configuration
 * (conf/) and the policy (policy/), which never call it.
 */
#ifndef VSHARE_SRV_H
#define VSHARE_SRV_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "conf.h"
#include "cool.h"
#include "frame.h"
#include "http.h"
#include "label.h"
#include "log.h"
#include "metrics.h"
#include "names.h"
#include "sched_policy.h"
#include "vshare/proto.h"

/* Bytes asked of one read: a few hundred requests. A peer whose output
 * backs up is no longer read, and what it sent beyond the frame that
 * filled its queue waits in its stash, so this bounds the stash. */
#define CONN_READ_MAX   4096u

struct srv;
struct conn;

/* What a connection reports to the layer above it. */
struct conn_events {
	/* A complete, valid frame. */
	void (*frame)(struct conn *c, const struct vs_hdr *h,
		      const void *payload);
	/* The connection is closing: forget its client. */
	void (*gone)(struct conn *c);
	/* Every frame of one read was handed over: answer them. */
	void (*read_done)(struct srv *s);
};

struct conn {
	uv_pipe_t pipe;              /* first: the handle is the conn */
	struct srv *srv;
	struct conn *prev, *next;    /* srv->conns */
	struct sched_client *client; /* from HELLO on */
	struct sched_cred cred;      /* SO_PEERCRED */
	int is_admin;
	int closing;
	int paused;                  /* reading stopped: output backed up */
	int refused_once;            /* a refusal (limit, not admin) was
				      * logged: later ones are counted */
	int took_refused;            /* a TOOK refusal was logged */
	int counted;                 /* in its uid's connection count */
	uint64_t wq_window;          /* start of this second of WAIT_QUERYs */
	uint32_t wq_n;               /* answered in it */
	uint64_t t_idle;             /* accept or last whole frame, ms */
	uint64_t t_frame;            /* first byte of a partial frame, or 0 */
	uint64_t log_tat;            /* its log bucket's clock (peerlog.c) */
	uint64_t outq;               /* bytes queued, with their overhead */
	uint32_t status_gen;         /* waits for this status rendering */
	unsigned char *stash;        /* read, not yet decoded (paused) */
	size_t stash_len;
	struct vs_frx rx;             /* the frame being received */
};

/* Connections per uid, for the uid_conns limit. */
/* Connections that only root and the admin group may have beyond
 * max_clients (conn.c): vsharectl is served when others filled it. */
#define CONN_ADMIN_RESERVE 64u

struct srv_uid {
	uint32_t uid;
	uint32_t n;
};

struct srv {
	uv_loop_t *loop;
	struct conf *conf;
	struct sched *sched;
	const struct conn_events *events; /* set by srv_start */
	uv_pipe_t listener;
	uv_timer_t timer;
	uv_signal_t sig[3];          /* SIGTERM, SIGINT, SIGHUP */
	const char *conf_path;       /* for SIGHUP */
	int conf_must_exist;
	int log_level_arg;           /* --log-level, or -1 */
	char path[CONF_PATH_MAX];
	int have_socket;
	/* sock.c: the socket's directory, checked and held open; the
	 * socket's name in it, and its path with no link on the way. */
	int sock_dir, has_sock_dir;
	const char *sock_name;
	char bind_path[CONF_PATH_MAX];
	/* sock.c: the listening socket systemd passed (socket activation),
	 * checked by sock_prepare, listened on by sock_listen; the file is
	 * systemd's, never removed here. */
	int passed_fd, has_passed_fd;
	/* sock.c: the accepts of this loop turn; one held for the next. */
	int (*accept_one)(struct srv *s);
	uv_check_t acc_check;
	unsigned acc_turn;
	int acc_held;
	struct cool cool;            /* uids refused in bursts (cool.c) */
	gid_t sock_gid, admin_gid;
	int has_sock_gid, has_admin_gid;
	char admin_group_name[CONF_NAME_MAX];
	struct conn *conns;
	size_t n_conns;
	uv_timer_t sweep;            /* hello and frame deadlines */
	uint64_t outq_total;         /* every conn's outq */
	struct srv_uid *uids;
	size_t n_uids, cap_uids;
	struct peerlog_uid *log_uids; /* log buckets per uid (peerlog.c) */
	size_t n_log_uids, cap_log_uids;
	/* stq.c: status renderings */
	uv_work_t st_work;
	uv_timer_t st_timer;
	struct sched *st_snap;
	char *st_json;
	size_t st_len;
	uint32_t st_cur, st_next;    /* rendering in flight, next one */
	int st_busy;
	int st_answering;            /* after() is sending replies */
	uint64_t st_last;            /* end of the last rendering */
	uint64_t st_cost;            /* its cost to the loop, ns */
	uint64_t st_gap;             /* ms before the next one may start */
	uint64_t timer_due;
	struct metrics_daemon mx;    /* connection counters, for metrics */
	struct names *names;         /* labels' names (names.c), or NULL */
	struct names *st_names;      /* the rendering's reference to them */
	struct metrics_cache mcache; /* the text every metrics reader gets */
	struct metrics_cache mcache_pub; /* the same less the series by uid
				      * and by client: HTTP's while
				      * status_public is false */
	struct http *http;           /* metrics_listen's server, or NULL */
	int nvml;                    /* NVML is loaded (nvml.c) */
	uint64_t use_at;             /* use.c: the last look at NVML, ms */
	int lock_fd;                 /* the lock's state page, -1: none */
	struct vs_lock_page *lock;   /* its mapping */
	int words_fd;                /* the lock's words page */
	struct vs_lock_words *words; /* its mapping */
	struct sched_out *batch;     /* srv_flush's copy of the outbox */
	size_t batch_cap;
	int flushing;
	int stopping;
};

/* lockpage.c: the lock's two pages shared with clients (proto.h).
 * create: 0, or -errno and no pages (every grant then goes through
 * REQUEST). */
int  lockpage_create(struct srv *s);
void lockpage_destroy(struct srv *s);
/* Give a client of version 5 or later its token and pass it the pages,
 * after its WELCOME. */
void lockpage_send(struct conn *c);

/* peerlog.c: lines about a peer (c may be NULL: not limited), at most
 * a burst and then one a second per connection and per uid; the rest
 * are counted per uid and the count logged. The sweep logs the counts of
 * uids whose bucket is full again; free logs what is left to tell. */
struct peerlog_uid;
void peer_log(struct conn *c, enum log_level level, const char *func,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define plog_warn(c, ...)  peer_log((c), LOG_LVL_WARN, __func__, __VA_ARGS__)
#define plog_info(c, ...)  peer_log((c), LOG_LVL_INFO, __func__, __VA_ARGS__)
#define plog_debug(c, ...) peer_log((c), LOG_LVL_DEBUG, __func__, __VA_ARGS__)
void peerlog_sweep(struct srv *s);
void peerlog_free(struct srv *s);

/* sock.c */
/* The socket's directory (made where missing, refused where another user
 * could change it), then the socket systemd passed (sd_listen_fds), which
 * must be the configured one, or else a stale file; 0 or -errno
 * (logged). */
int sock_prepare(struct srv *s);
/* Bind (or take systemd's socket), own, listen. accept_one takes the connection waiting in the
 * listener (uv_accept): 0, or -1 when it could not (out of memory; the
 * connection waits for the next loop turn). 0 or -errno. */
int sock_listen(struct srv *s, int (*accept_one)(struct srv *s));
/* Remove the socket, close the listener and the directory. */
void sock_close(struct srv *s);
int sock_peer(int fd, struct sched_cred *cred, const struct srv *s,
	      int *is_admin);

/* conn.c; the listener's data is the struct srv, whose events it calls.
 * accept: sock_listen's accept_one. */
int  conn_accept(struct srv *s);
void conn_send(struct conn *c, uint16_t type, const void *payload,
	       uint32_t len);
void conn_send_error(struct conn *c, int32_t code, uint32_t detail,
		     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define CONN_MAX_FDS 2
int  conn_send_fds(struct conn *c, uint16_t type, const void *payload,
		   uint32_t len, const int *fds, unsigned n_fds);
void conn_close(struct conn *c);
/* Close peers past their hello or frame deadline (the sweep timer). */
void conn_sweep(struct srv *s);
/* Stop reading a peer, and read it again (first what it sent meanwhile)
 * unless its output is still backed up. */
void conn_pause(struct conn *c);
void conn_resume(struct conn *c);

/* stq.c: status requests, rendered off the loop */
void stq_init(struct srv *s);
void stq_close(struct srv *s);
void stq_request(struct conn *c);

/* srv.c: the peers' messages to the policy, start and stop */
int  srv_start(struct srv *s);
void srv_stop(struct srv *s);

/* srv_out.c: the policy's outbox to the peers, the loop timer */
void srv_flush(struct srv *s);       /* outbox to peers, re-arm the timer */
/* "client 3 "train" (pid 1234)" for log lines: who the policy acts on,
 * its label escaped (vs_label_escape), in WHO_MAX bytes. */
#define WHO_MAX (VS_LABEL_ESC_SIZE(VS_LABEL_MAX) + 48)
void srv_who(const struct conn *c, uint32_t id, char *out, size_t n);

/* reload.c: SIGHUP; 0, or -1 with the running configuration kept. The
 * caller flushes the outbox: a new quantum or mode may have changed who
 * holds a GPU. */
int  reload_conf(struct srv *s);

/* ctl.c */
void ctl_handle(struct conn *c, const struct vs_hdr *h, const void *payload);
/* The status as JSON of at most max bytes (clients beyond it are
 * counted in "clients_omitted"); NULL when out of memory. */
char *ctl_status_json(const struct sched *sched, const struct names *names,
		      size_t max, size_t *len);
/* The metrics text (metrics.c) of the daemon, at most METRICS_CACHE_MS
 * old, malloc'd; NULL when out of memory. */
/* The metrics text; `http`: for the HTTP endpoint, which anyone who
 * reaches its address reads, so that without status_public it has no
 * series by uid or by client (the socket's METRICS has them, for
 * admins only then). */
char *ctl_metrics_text(struct srv *s, int http, size_t *len);

/* use.c: each GPU's processes as NVML sees them, into the policy
 * (sched_gpu_use), at most once per USE_REFRESH_MS: called before a
 * status or metrics rendering, so that a node nobody asks costs no
 * NVML query. */
#define USE_REFRESH_MS 1000u
void use_refresh(struct srv *s);

#endif
