/*
 * A scheduler stand-in on a temporary Unix socket: one connection at a
 * time, every frame it receives queued for the test to inspect, frames
 * sent when the test says so (or grants sent at once in automatic mode).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fake.h"

#define QCAP 1024
#define CMD_NONE 0
#define CMD_KICK 1
#define CMD_STOP 2
#define CMD_WAKE 3                  /* look at the settings again */

static struct {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	pthread_mutex_t send_mu;
	pthread_t thr;
	int running;
	int lfd, cfd, wake[2];
	int cmd;
	int auto_grant;
	int refuse_requests;        /* answer so many REQUESTs with VS_E_STATE */
	int no_welcome;
	int speak;
	int conns;
	int queue_full;             /* atomic: accept nothing (fs_queue_full) */
	int fill[8], n_fill;        /* the connections that fill the queue */
	/* The client's protocol state per GPU, on this connection (atomics). */
	int attached[FAKE_GPUS], reported[FAKE_GPUS];
	int held[FAKE_GPUS], asked[FAKE_GPUS];
	int counts[0x110];
	struct fs_msg q[QCAP];
	unsigned qhead, qtail;
	char dir[80];
	char path[108];
} fs = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	 .send_mu = PTHREAD_MUTEX_INITIALIZER, .lfd = -1, .cfd = -1 };

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* At exit, passed or failed (a failed assertion ends the test process):
 * the socket and its directory go. A forked child leaves with _exit and
 * removes nothing of its parent's. */
static void fs_cleanup(void)
{
	if (fs.path[0] != '\0')
		unlink(fs.path);
	if (fs.dir[0] != '\0')
		rmdir(fs.dir);
}

const char *fs_path(void)
{
	const char *tmp = getenv("TMPDIR");

	if (fs.path[0] == '\0') {
		/* A Unix socket path has at most 107 bytes. */
		if (tmp == NULL || *tmp == '\0' || strlen(tmp) > 60)
			tmp = "/tmp";
		snprintf(fs.dir, sizeof(fs.dir), "%s/vsgate.XXXXXX", tmp);
		if (mkdtemp(fs.dir) == NULL)
			abort();
		atexit(fs_cleanup);
		snprintf(fs.path, sizeof(fs.path), "%s/s.sock", fs.dir);
		setenv("VSHARE_SOCKET", fs.path, 1);
	}
	return fs.path;
}

static void send_locked_fd(int fd, const struct vs_hdr *h, const void *p)
{
	unsigned char buf[512];
	size_t n = sizeof(*h) + h->length;

	memcpy(buf, h, sizeof(*h));
	memcpy(buf + sizeof(*h), p, h->length);
	if (fd >= 0)
		(void)!send(fd, buf, n, MSG_NOSIGNAL);
}

void fs_send_raw(const struct vs_hdr *h, const void *payload)
{
	struct vs_hdr v = *h;
	int speak = __atomic_load_n(&fs.speak, __ATOMIC_SEQ_CST);

	if (speak != 0)
		v.version = (uint16_t)speak;
	pthread_mutex_lock(&fs.send_mu);
	send_locked_fd(__atomic_load_n(&fs.cfd, __ATOMIC_SEQ_CST), &v, payload);
	pthread_mutex_unlock(&fs.send_mu);
}

void fs_speak(uint16_t v)
{
	__atomic_store_n(&fs.speak, v, __ATOMIC_SEQ_CST);
}

/* What a scheduler of an older version answers a newer HELLO (conn.c). */
static void refuse_version(int speak)
{
	struct vs_error e;
	struct vs_hdr h;

	memset(&e, 0, sizeof(e));
	e.code = VS_E_VERSION;
	e.detail = (uint32_t)speak;
	snprintf(e.msg, sizeof(e.msg), "vshare-scheduler speaks protocol "
		 "version %d: update the older side", speak);
	vs_hdr_init(&h, VS_MSG_ERROR, sizeof(e));
	fs_send_raw(&h, &e);
}

static void grant_fd(int dev, uint32_t flags)
{
	struct vs_grant m;
	struct vs_hdr h;

	memset(&m, 0, sizeof(m));
	fake_uuid(dev, m.uuid);
	m.kind = VS_GRANT_EXCLUSIVE;
	m.flags = flags;
	m.tq_ms = 1000;
	vs_hdr_init(&h, VS_MSG_GRANT, sizeof(m));
	/* From here on the client may open its gate. */
	__atomic_store_n(&fk.released[dev], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fs.held[dev], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fs.asked[dev], 0, __ATOMIC_SEQ_CST);
	fs_send_raw(&h, &m);
}

void fs_grant(int dev, uint32_t flags)
{
	grant_fd(dev, flags);
}

void fs_drop(int dev, uint32_t reason)
{
	struct vs_drop m;
	struct vs_hdr h;

	memset(&m, 0, sizeof(m));
	fake_uuid(dev, m.uuid);
	m.reason = reason;
	vs_hdr_init(&h, VS_MSG_DROP, sizeof(m));
	fs_send_raw(&h, &m);
}

void fs_refuse(int dev, const char *what)
{
	char u[VS_UUID_STR_LEN];
	uint8_t uuid[VS_UUID_LEN];
	struct vs_error e;
	struct vs_hdr h;

	/* The scheduler counts neither the take nor the request it refuses. */
	if (strcmp(what, "took") == 0)
		__atomic_store_n(&fs.held[dev], 0, __ATOMIC_SEQ_CST);
	if (strcmp(what, "request") == 0)
		__atomic_store_n(&fs.asked[dev], 0, __ATOMIC_SEQ_CST);
	memset(&e, 0, sizeof(e));
	e.code = VS_E_STATE;
	fake_uuid(dev, uuid);
	vs_uuid_format(uuid, u);
	snprintf(e.msg, sizeof(e.msg), "%s: %s: %s", u, what,
		 vs_err_name(VS_E_STATE));
	vs_hdr_init(&h, VS_MSG_ERROR, sizeof(e));
	fs_send_raw(&h, &e);
}

void fs_refuse_requests(int n)
{
	__atomic_store_n(&fs.refuse_requests, n, __ATOMIC_SEQ_CST);
}

/* 1 if this REQUEST is one to refuse (fs_refuse_requests). */
static int refuse_one(void)
{
	int n = __atomic_load_n(&fs.refuse_requests, __ATOMIC_SEQ_CST);

	while (n > 0 && !__atomic_compare_exchange_n(&fs.refuse_requests, &n,
						     n - 1, 0, __ATOMIC_SEQ_CST,
						     __ATOMIC_SEQ_CST))
		;
	return n > 0;
}

void fs_no_welcome(int on)
{
	__atomic_store_n(&fs.no_welcome, on, __ATOMIC_SEQ_CST);
}

void fs_auto_grant(int on)
{
	__atomic_store_n(&fs.auto_grant, on, __ATOMIC_SEQ_CST);
}

static int dev_of(const uint8_t *uuid)
{
	for (int d = 0; d < FAKE_GPUS; d++) {
		uint8_t u[VS_UUID_LEN];

		fake_uuid(d, u);
		if (memcmp(u, uuid, VS_UUID_LEN) == 0)
			return d;
	}
	return -1;
}

/* What the real scheduler would refuse: a REQUEST from the holder, a
 * second one, or one for a GPU not attached with its footprint. */
static void check_order(const struct fs_msg *m, int dev)
{
	if (dev < 0)
		return;
	if (m->type == VS_MSG_ATTACH)
		__atomic_store_n(&fs.attached[dev], 1, __ATOMIC_SEQ_CST);
	if (m->type == VS_MSG_FOOTPRINT)
		__atomic_store_n(&fs.reported[dev], 1, __ATOMIC_SEQ_CST);
	if (m->type == VS_MSG_RELEASED)
		__atomic_store_n(&fs.held[dev], 0, __ATOMIC_SEQ_CST);
	if (m->type == VS_MSG_TOOK)
		__atomic_store_n(&fs.held[dev], 1, __ATOMIC_SEQ_CST);
	if (m->type != VS_MSG_REQUEST)
		return;
	if (__atomic_load_n(&fs.held[dev], __ATOMIC_SEQ_CST) ||
	    __atomic_exchange_n(&fs.asked[dev], 1, __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&fs.attached[dev], __ATOMIC_SEQ_CST) ||
	    !__atomic_load_n(&fs.reported[dev], __ATOMIC_SEQ_CST))
		__atomic_add_fetch(&fk.bad_order, 1, __ATOMIC_SEQ_CST);
}

/* LOCK_PAGE in the client's version, with both descriptors; a
 * version-4 frame (words 0) with the one page of an older scheduler,
 * which the client must not use. */
static void send_page(uint16_t version)
{
	struct vs_lock_info li = { FS_TOKEN, sizeof(struct vs_lock_page),
				   version >= 5 ? sizeof(struct vs_lock_words) : 0 };
	unsigned char buf[sizeof(struct vs_hdr) + sizeof(li)];
	int fds[2];
	size_t nfd = fs_lock_fds(version, fds);
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(fds))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *cm;
	struct vs_hdr h;

	memset(&ctl, 0, sizeof(ctl));
	mh.msg_controllen = CMSG_SPACE(nfd * sizeof(int));
	vs_hdr_init_v(&h, version, VS_MSG_LOCK_PAGE, sizeof(li));
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &li, sizeof(li));
	cm = CMSG_FIRSTHDR(&mh);
	if (cm == NULL)
		return;
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(nfd * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, nfd * sizeof(int));
	pthread_mutex_lock(&fs.send_mu);
	(void)!sendmsg(__atomic_load_n(&fs.cfd, __ATOMIC_SEQ_CST), &mh,
		       MSG_NOSIGNAL);
	pthread_mutex_unlock(&fs.send_mu);
}

/* -1 when the connection is to be closed. */
static int got(const struct fs_msg *m)
{
	int speak = __atomic_load_n(&fs.speak, __ATOMIC_SEQ_CST);

	int dev = m->len >= VS_UUID_LEN ? dev_of(m->u.ref.uuid) : -1;

	check_order(m, dev);

	if (m->type == VS_MSG_RELEASED && dev >= 0) {
		/* Nothing of the client may run from now until the next grant. */
		if (__atomic_load_n(&fk.in_bracket[dev], __ATOMIC_SEQ_CST) != 0)
			__atomic_add_fetch(&fk.violations, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&fk.released[dev], 1, __ATOMIC_SEQ_CST);
	}
	pthread_mutex_lock(&fs.mu);
	if (m->type < 0x110)
		fs.counts[m->type]++;
	if (fs.qtail - fs.qhead == QCAP)
		fs.qhead++;
	fs.q[fs.qtail++ % QCAP] = *m;
	pthread_cond_broadcast(&fs.cv);
	pthread_mutex_unlock(&fs.mu);
	if (speak != 0 && m->version > speak) {
		refuse_version(speak);
		return -1;
	}
	if (m->type == VS_MSG_HELLO && !__atomic_load_n(&fs.no_welcome, __ATOMIC_SEQ_CST)) {
		struct vs_welcome w = { m->version, 7 };
		struct vs_hdr h;

		vs_hdr_init_v(&h, m->version, VS_MSG_WELCOME, sizeof(w));
		fs_send_raw(&h, &w);
		if (m->version >= 4 && fs_lock_fds(m->version, NULL) > 0)
			send_page(m->version);
	}
	/* What the real scheduler says to a client of version 4 or later,
	 * which takes a GPU through the lock pages only after it: its
	 * ATTACH was read. */
	if (m->type == VS_MSG_ATTACH && m->version >= 4) {
		struct vs_mode md;
		struct vs_hdr h;

		memset(&md, 0, sizeof(md));
		memcpy(md.uuid, m->u.ref.uuid, VS_UUID_LEN);
		md.mode = VS_MODE_ON;
		vs_hdr_init_v(&h, m->version, VS_MSG_MODE, sizeof(md));
		fs_send_raw(&h, &md);
	}
	if (m->type == VS_MSG_REQUEST && dev >= 0 && refuse_one()) {
		fs_refuse(dev, "request");
		return 0;
	}
	if (m->type == VS_MSG_REQUEST && dev >= 0 &&
	    __atomic_load_n(&fs.auto_grant, __ATOMIC_SEQ_CST))
		grant_fd(dev, 0);
	return 0;
}

/* Read whole frames; -1 when the peer is gone. */
static int read_frames(int fd)
{
	struct fs_msg m;
	struct vs_hdr h;
	ssize_t r;

	r = recv(fd, &h, sizeof(h), MSG_WAITALL);
	if (r != (ssize_t)sizeof(h) || h.length > sizeof(m.u.raw))
		return -1;
	memset(&m, 0, sizeof(m));
	m.type = h.type;
	m.version = h.version;
	m.len = h.length;
	m.at_ms = now_ms();
	if (h.length && recv(fd, m.u.raw, h.length, MSG_WAITALL) != (ssize_t)h.length)
		return -1;
	return got(&m);
}

static void close_conn(void)
{
	pthread_mutex_lock(&fs.send_mu);
	if (fs.cfd >= 0)
		close(fs.cfd);
	__atomic_store_n(&fs.cfd, -1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&fs.send_mu);
}

static int take_cmd(void)
{
	int c;

	pthread_mutex_lock(&fs.mu);
	c = fs.cmd;
	fs.cmd = CMD_NONE;
	pthread_cond_broadcast(&fs.cv);
	pthread_mutex_unlock(&fs.mu);
	return c;
}

static void *fs_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd pf[3] = {
			{ .fd = fs.wake[0], .events = POLLIN },
			{ .fd = __atomic_load_n(&fs.queue_full, __ATOMIC_SEQ_CST) ?
				-1 : fs.lfd, .events = POLLIN },
			{ .fd = fs.cfd, .events = POLLIN },
		};
		char c;

		if (poll(pf, 3, -1) < 0)
			continue;
		if (pf[0].revents & POLLIN) {
			(void)!read(fs.wake[0], &c, 1);
			int cmd = take_cmd();
			if (cmd == CMD_KICK || cmd == CMD_STOP)
				close_conn();
			if (cmd == CMD_STOP)
				return NULL;
			continue;
		}
		if (pf[1].revents & POLLIN) {
			int fd = accept4(fs.lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				close_conn();
				for (int d = 0; d < FAKE_GPUS; d++) {
					__atomic_store_n(&fs.attached[d], 0, __ATOMIC_SEQ_CST);
					__atomic_store_n(&fs.reported[d], 0, __ATOMIC_SEQ_CST);
					__atomic_store_n(&fs.held[d], 0, __ATOMIC_SEQ_CST);
					__atomic_store_n(&fs.asked[d], 0, __ATOMIC_SEQ_CST);
				}
				__atomic_store_n(&fs.cfd, fd, __ATOMIC_SEQ_CST);
				pthread_mutex_lock(&fs.mu);
				fs.conns++;
				pthread_mutex_unlock(&fs.mu);
			}
		}
		if (pf[2].fd >= 0 && (pf[2].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    read_frames(fs.cfd) != 0)
			close_conn();
	}
}

static void command(int cmd);

/* Connect without blocking until the listen queue is full: the next
 * connect, the client's, then gets EAGAIN. */
static void fill_queue(const struct sockaddr_un *sa)
{
	int full = 0;

	while (!full && fs.n_fill < (int)(sizeof(fs.fill) / sizeof(fs.fill[0]))) {
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

		if (fd < 0)
			abort();
		if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
			fs.fill[fs.n_fill++] = fd;
			continue;
		}
		if (errno != EAGAIN)
			abort();
		close(fd);
		full = 1;
	}
	if (!full)
		abort();
}

void fs_queue_full(void)
{
	__atomic_store_n(&fs.queue_full, 1, __ATOMIC_SEQ_CST);
}

void fs_accept_again(void)
{
	__atomic_store_n(&fs.queue_full, 0, __ATOMIC_SEQ_CST);
	command(CMD_WAKE);
}

void fs_start(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	fs_path();
	unlink(fs.path);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", fs.path);
	fs.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fs.lfd < 0 || bind(fs.lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
	    listen(fs.lfd, fs.queue_full ? 0 : 8) != 0 || pipe(fs.wake) != 0)
		abort();
	if (fs.queue_full)
		fill_queue(&sa);
	fs.running = 1;
	pthread_create(&fs.thr, NULL, fs_main, NULL);
}

static void command(int cmd)
{
	pthread_mutex_lock(&fs.mu);
	fs.cmd = cmd;
	(void)!write(fs.wake[1], "x", 1);
	while (fs.cmd != CMD_NONE)
		pthread_cond_wait(&fs.cv, &fs.mu);
	pthread_mutex_unlock(&fs.mu);
}

static void clear_released(void)
{
	for (int d = 0; d < FAKE_GPUS; d++)
		__atomic_store_n(&fk.released[d], 0, __ATOMIC_SEQ_CST);
}

void fs_kick(void)
{
	command(CMD_KICK);
	clear_released();
}

void fs_stop(void)
{
	if (!fs.running)
		return;
	command(CMD_STOP);
	pthread_join(fs.thr, NULL);
	close(fs.lfd);
	close(fs.wake[0]);
	close(fs.wake[1]);
	fs.lfd = -1;
	while (fs.n_fill > 0)
		close(fs.fill[--fs.n_fill]);
	fs.running = 0;
	unlink(fs.path);
	clear_released();
}

int fs_wait(uint16_t type, struct fs_msg *out, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int rc = -1;

	pthread_mutex_lock(&fs.mu);
	for (;;) {
		while (fs.qhead != fs.qtail) {
			struct fs_msg *m = &fs.q[fs.qhead++ % QCAP];

			if (m->type == type) {
				if (out)
					*out = *m;
				rc = 0;
				goto done;
			}
		}
		if (now_ms() >= end)
			break;
		pthread_mutex_unlock(&fs.mu);
		sleep_ms(2);
		pthread_mutex_lock(&fs.mu);
	}
done:
	pthread_mutex_unlock(&fs.mu);
	return rc;
}

int fs_count(uint16_t type)
{
	int n;

	pthread_mutex_lock(&fs.mu);
	n = type < 0x110 ? fs.counts[type] : 0;
	pthread_mutex_unlock(&fs.mu);
	return n;
}

int fs_connections(void)
{
	int n;

	pthread_mutex_lock(&fs.mu);
	n = fs.conns;
	pthread_mutex_unlock(&fs.mu);
	return n;
}
