/*
 * Frames between the shim and the scheduler: sending, reading, checking
 * with the shared protocol table, and handling what the scheduler says.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "atomics.h"
#include "client_int.h"
#include "frame.h"
#include "log.h"

void client_set_sock(int fd)
{
	if (fd < 0 && client_c.sock < 0)
		return;
	/* A socket the program closed is not closed again: its number may
	 * be one of the program's own descriptors by now. */
	/* The page belongs to the connection it came with. */
	client_lock_drop();
	own_fd_close(&client_c.sock_id);
	own_fd_take(&client_c.sock_id, fd);
	client_c.sock = fd;
	client_c.welcomed = 0;
	client_c.welcome_new = 0;
}

/* Wait for room in the socket, at most CLIENT_SEND_WAIT_MS in all. The
 * client thread blocks every signal, but an EINTR is no failure either. */
static int wait_room(void)
{
	uint64_t end = gate_now_ms() + CLIENT_SEND_WAIT_MS, now;
	struct pollfd pf = { .fd = client_c.sock, .events = POLLOUT };
	int r;

	for (;;) {
		now = gate_now_ms();
		if (now >= end)
			return -1;
		r = poll(&pf, 1, (int)(end - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || (pf.revents & (POLLERR | POLLHUP | POLLNVAL)))
			return -1;
		return 0;
	}
}

static int send_all(const unsigned char *buf, size_t n)
{
	size_t off = 0;

	if (!own_fd_valid(&client_c.sock_id))
		return -1;
	while (off < n) {
		ssize_t w = send(client_c.sock, buf + off, n - off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) &&
		    wait_room() == 0)
			continue;
		if (w <= 0)
			return -1;
		off += (size_t)w;
	}
	return 0;
}

int client_send(uint16_t type, const void *payload, uint32_t len)
{
	unsigned char buf[sizeof(struct vs_hdr) + 256];

	if (len > sizeof(buf) - sizeof(struct vs_hdr) || client_c.sock < 0)
		return -1;
	vs_hdr_init_v((struct vs_hdr *)buf, client_version(), type, len);
	memcpy(buf + sizeof(struct vs_hdr), payload, len);
	return send_all(buf, sizeof(struct vs_hdr) + len);
}

int client_hello(void)
{
	struct vs_hello m;

	memset(&m, 0, sizeof(m));
	m.proto_version = client_version();
	/* A scheduler older than version 6 knows no class: batch there. */
	if (m.proto_version >= 6)
		m.klass = client_g.conf.klass;
	memcpy(m.label, client_g.conf.label,
	       strnlen(client_g.conf.label, VS_LABEL_MAX));
	return client_send(VS_MSG_HELLO, &m, sizeof(m));
}

static int gpu_by_uuid(const uint8_t uuid[VS_UUID_LEN])
{
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		const struct client_gpu *c = &client_g.gpu[i];

		if (c->known && memcmp(c->uuid, uuid, VS_UUID_LEN) == 0)
			return i;
	}
	return -1;
}

static void on_grant(const struct vs_grant *m)
{
	int dev = gpu_by_uuid(m->uuid);
	struct client_gpu *c;
	struct client_swap sw = { 0, 0 };
	uint64_t waited_ns;

	if (dev < 0)
		return;
	c = &client_g.gpu[dev];
	waited_ns = c->wait.since_ns ? gate_now_ns() - c->wait.since_ns : 0;
	/* The grant came: no more polling for it. */
	client_c.spin_until_ns = 0;
	/* Before the gate opens: under oversubscription the top swaps the
	 * memory in here, one bulk prefetch being several times faster than
	 * the page faults it replaces. What it cost goes to a scheduler that
	 * counts it (client_work.c), which a version-1 one does not. */
	if (!c->held) {
		client_g.cb->granted(client_g.cb->arg, dev, m->flags, &sw);
		c->swap = client_version() >= 2 ? sw : (struct client_swap){ 0, 0 };
		client_use_start(c, gate_now_ms());
	}
	c->held = 1;
	c->requested = 0;
	c->want = 0;
	c->drop = 0;
	/* The scheduler and this process agree again: it holds. */
	c->resync = 0;
	A_STORE(&c->page_skip, 0);
	/* An interactive program shares the GPU and will wait for this
	 * process's queued work whenever it preempts it: keep that short. */
	gate_pace(dev, (m->flags & VS_GRANTF_PACE) != 0);
	gate_grant(dev);
	client_wait_granted(dev);
	log_debug("GPU %d granted (%s, quantum %u ms%s%s) after %.2f ms of "
		  "waiting; swap-in %.2f ms", dev,
		  m->kind == VS_GRANT_EXCLUSIVE ? "exclusive" : "shared",
		  m->tq_ms, (m->flags & VS_GRANTF_OVERSUB) ? ", oversubscribed" : "",
		  gate_pacing(dev) ? ", paced: an interactive program shares it" : "",
		  (double)waited_ns / 1e6, (double)sw.us / 1e3);
}

/* A resynchronisation of dev is due (client_work.c sends it): `what`
 * adds to one that may be pending. */
static void resync(int dev, struct client_gpu *c, int what, const char *why)
{
	c->resync |= what;
	log_debug("GPU %d: %s: %s", dev, why,
		  (what & CLIENT_RESYNC_RELEASE) ? "releasing it, then asking "
		  "again if it is wanted" : "asking again if it is wanted");
}

/*
 * A DROP for a GPU this process does not hold: the scheduler counts it
 * as a holder (it adopted a token that another client copied into the
 * words, or a take this process gave back), or the drop crossed our
 * RELEASED. A RELEASED clears the first; the second answers it with
 * VS_E_STATE, which is only logged. While a REQUEST is out, nothing: its
 * answer settles it (a GRANT, or VS_E_STATE for it, below), and a
 * RELEASED now could cross the GRANT and release it.
 */
static void drop_not_held(int dev, struct client_gpu *c)
{
	if (c->requested || (c->resync & CLIENT_RESYNC_RELEASE))
		return;
	resync(dev, c, CLIENT_RESYNC_ASK | CLIENT_RESYNC_RELEASE,
	       "the scheduler asks for it back, but it is not held");
}

static void on_drop(const struct vs_drop *m)
{
	int dev = gpu_by_uuid(m->uuid);
	struct client_gpu *c;

	if (dev < 0)
		return;
	c = &client_g.gpu[dev];
	if (!c->held) {
		drop_not_held(dev, c);
		return;
	}
	/* An urgent reason overrides a pending idle drop, never the reverse. */
	if (c->drop == 0)
		c->drop_ns = gate_now_ns();
	if (c->drop == 0 || c->drop == VS_DROP_IDLE)
		c->drop = m->reason;
	log_debug("GPU %d: drop requested (%s)", dev,
		  vs_drop_reason_name(m->reason));
}

static void on_version(uint32_t theirs)
{
	/* An older scheduler that we can speak to: connect again at once in
	 * its version, with no outage to tell. */
	if (theirs >= VS_PROTO_VERSION_MIN && theirs < client_version()) {
		client_c.version = (uint16_t)theirs;
		client_c.downgrade = 1;
		log_info("the scheduler speaks protocol version %u: speaking it "
			 "(swap-ins go unreported)", theirs);
		return;
	}
	if (!client_g.conf.require_sched)
		client_c.version_dead = 1;
	if (client_c.version_seen)
		return;
	client_c.version_seen = 1;
	log_error("the scheduler speaks protocol version %u, this libvshare "
		  "speaks version %u: %s", theirs, VS_PROTO_VERSION,
		  client_g.conf.require_sched ? "waiting for a matching scheduler"
					    : "running unshared");
}

/* The scheduler refused one GPU (a per-user limit, or its GPU table is
 * full). Without VSHARE_REQUIRE_SCHEDULER that GPU runs unshared for the
 * rest of this connection: waiting for a GRANT that will not come would
 * hang the program silently. With it, GPU work waits, says why, and the
 * GPU is asked for again after a growing pause, since limits free up as
 * other programs end. */
static void on_refused(int dev, const struct vs_error *m)
{
	struct client_gpu *c = &client_g.gpu[dev];
	uint64_t step;

	c->requested = 0;
	/* Whether the refusal was of the ATTACH (no record of this GPU on
	 * the scheduler) or of a REQUEST, the next attempt starts over. */
	c->attached = 0;
	c->fp_valid = 0;
	if (!c->refused)
		client_c.refusals++;
	if (!client_g.conf.require_sched) {
		if (!c->refused)
			log_warn("GPU %d runs unshared: the scheduler refused it "
				 "(%s)", dev, m->msg);
		c->refused = 1;
		gate_open_unshared(dev);
		return;
	}
	step = c->retry_step_ms ? c->retry_step_ms : CLIENT_REFUSED_RETRY_MIN_MS;
	if (c->retry_step_ms == 0)
		log_warn("GPU %d: GPU work waits (VSHARE_REQUIRE_SCHEDULER): "
			 "the scheduler refused it (%s); asking again every "
			 "%u s at most", dev, m->msg,
			 CLIENT_REFUSED_RETRY_MAX_MS / 1000u);
	c->refused = 1;
	c->retry_ms = gate_now_ms() + step;
	c->retry_step_ms = step * 2 > CLIENT_REFUSED_RETRY_MAX_MS ?
			   CLIENT_REFUSED_RETRY_MAX_MS : step * 2;
}

/* A refusal names the GPU first ("GPU-<uuid>: ..."); one without a GPU is
 * the refusal of the connection itself, which the scheduler closes next. */
static int refused_dev(const struct vs_error *m)
{
	char u[VS_UUID_STR_LEN];
	uint8_t uuid[VS_UUID_LEN];
	size_t n = VS_UUID_STR_LEN - 1;

	if (strncmp(m->msg, "GPU-", 4) != 0 || strnlen(m->msg, sizeof(m->msg)) <= n ||
	    m->msg[n] != ':')
		return -1;
	memcpy(u, m->msg, n);
	u[n] = '\0';
	if (vs_uuid_parse(u, uuid) != 0)
		return -1;
	return gpu_by_uuid(uuid);
}

/* The name of the refused message in a refusal that names its GPU:
 * "GPU-<uuid>: <name>: ...". */
static int refused_msg(const struct vs_error *m, const char *name)
{
	const char *p = m->msg + VS_UUID_STR_LEN;
	size_t n = strlen(name);

	while (*p == ' ')
		p++;
	return strncmp(p, name, n) == 0 && p[n] == ':';
}

/*
 * VS_E_STATE about one GPU: the scheduler's state and ours differ.
 * - TOOK refused: the scheduler did not see our take (another client
 *   took the same opening, or wrote over our token) and does not count
 *   us as a holder. The GPU is given back as on a drop, without the
 *   RELEASED, and asked for with a REQUEST if it is still wanted.
 * - REQUEST refused: the scheduler counts us as holding or waiting (it
 *   adopted a token another client copied): a RELEASED clears that, then
 *   the REQUEST goes out again. Were the GPU held, the refusal would be
 *   of an older REQUEST that its GRANT answered: nothing then.
 * Anything else (a RELEASED that crossed a drop...) is only logged, so
 * that no answer ever makes the client send again unbounded.
 */
static void on_state(int dev, const struct vs_error *m)
{
	struct client_gpu *c = &client_g.gpu[dev];

	if (refused_msg(m, "took") && c->held && !c->took) {
		c->drop = VS_DROP_QUANTUM;
		c->drop_ns = gate_now_ns();
		c->quiet = 1;
		A_STORE(&c->page_skip, 1);
		resync(dev, c, CLIENT_RESYNC_ASK,
		       "the scheduler refused its take, giving it back");
		return;
	}
	if (refused_msg(m, "request") && !c->held) {
		c->requested = 0;
		resync(dev, c, CLIENT_RESYNC_ASK | CLIENT_RESYNC_RELEASE,
		       "the scheduler refused its request");
		return;
	}
	log_debug("the scheduler reports %s: %s", vs_err_name(m->code), m->msg);
}

static void on_error(const struct vs_error *m)
{
	int dev;

	if (m->code == VS_E_VERSION) {
		on_version(m->detail);
		return;
	}
	if (m->code == VS_E_LIMIT || m->code == VS_E_FULL) {
		dev = refused_dev(m);
		if (dev >= 0) {
			on_refused(dev, m);
			return;
		}
		snprintf(client_c.refusal, sizeof(client_c.refusal), "%s",
			 m->msg);
		client_c.refusal_code = m->code;
		return;
	}
	if (m->code == VS_E_STATE && (dev = refused_dev(m)) >= 0) {
		on_state(dev, m);
		return;
	}
	/* Frames already on their way for a refused GPU (its FOOTPRINT or
	 * REQUEST right behind the ATTACH) are refused too: not news. */
	if (client_c.refusals > 0) {
		log_debug("the scheduler reports %s: %s", vs_err_name(m->code),
			  m->msg);
		return;
	}
	log_warn("the scheduler reports %s: %s", vs_err_name(m->code), m->msg);
}

/* The admin's policy for this process's user. A required scheduler
 * makes GPU work wait through an outage rather than run unshared; the
 * policy can add that, never take away what the node or the environment
 * require. The limit goes to the memory layer, which keeps it through an
 * outage. */
static void on_policy(const struct vs_policy *m)
{
	int req = client_g.conf.require_local ||
		  (m->flags & VS_POLICYF_REQUIRE) != 0;

	if (req != client_g.conf.require_sched)
		log_info("the scheduler's policy %s the scheduler", req ?
			 "requires" : "no longer requires");
	client_g.conf.require_sched = req;
	client_g.conf.interactive = client_version() >= 6 &&
		client_g.conf.klass == VS_CLASS_INTERACTIVE &&
		(m->flags & VS_POLICYF_INTERACTIVE) != 0;
	gate_prio_interactive(client_g.conf.interactive);
	/* Asked for, and the admin's policy does not give it: said once,
	 * since the program then waits like any batch job. */
	if (client_g.conf.klass == VS_CLASS_INTERACTIVE &&
	    !(m->flags & VS_POLICYF_INTERACTIVE) && !client_g.conf.klass_told) {
		client_g.conf.klass_told = 1;
		log_warn("VSHARE_CLASS=interactive: %s; this program runs as "
			 "batch", client_version() >= 6 ?
			 "the scheduler's policy does not give this user the "
			 "interactive class" : "the scheduler is too old for "
			 "classes (protocol version 6)");
	}
	client_g.cb->policy(client_g.cb->arg, m->mem_limit);
	client_settle_policy();
	log_debug("policy: memory limit %llu bytes per GPU%s, weight %u",
		  (unsigned long long)m->mem_limit,
		  req ? ", scheduler required" : "", m->weight);
}

/* Returns -1 if the frame ends the connection. */
static int dispatch(const struct vs_hdr *h, const void *p)
{
	switch (h->type) {
	case VS_MSG_WELCOME: {
		const struct vs_welcome *m = p;

		client_c.client_id = m->client_id;
		log_debug("registered as client %u", m->client_id);
		client_c.welcome_new = 1;
		return 0;
	}
	case VS_MSG_POLICY:
		on_policy(p);
		return 0;
	case VS_MSG_LOCK_PAGE:
		client_lock_map(p);
		return 0;
	case VS_MSG_GRANT:
		on_grant(p);
		return 0;
	case VS_MSG_DROP:
		on_drop(p);
		return 0;
	case VS_MSG_MODE: {
		const struct vs_mode *m = p;
		char u[VS_UUID_STR_LEN];
		int dev = gpu_by_uuid(m->uuid);

		/* The scheduler has read this GPU's ATTACH. */
		if (dev >= 0) {
			A_STORE(&client_g.gpu[dev].lock_ok, 1);
			client_lock_bind(dev, &client_g.gpu[dev]);
			client_settle_notify();
		}
		vs_uuid_format(m->uuid, u);
		log_debug("%s: mode %s", u, vs_mode_name(m->mode));
		return 0;
	}
	case VS_MSG_WAITING: {
		int dev = gpu_by_uuid(((const struct vs_waiting *)p)->uuid);

		if (dev >= 0)
			client_wait_answer(dev, p);
		return 0;
	}
	case VS_MSG_ERROR:
		on_error(p);
		return ((const struct vs_error *)p)->code == VS_E_VERSION ? -1 : 0;
	default:
		/* Reported once per outage, like the loss that follows. */
		if (!client_c.warned)
			log_warn("unexpected %s frame from the scheduler",
				 vs_msg_lookup(h->type) ? vs_msg_lookup(h->type)->name
							: "?");
		return -1;
	}
}

/* A peer of another version: its header layout is the same (frozen), so
 * an error frame it sends can still be read; the reader kept it. */
static int foreign_frame(const struct vs_frx *rx)
{
	const struct vs_error *m = vs_frx_foreign_error(rx);

	if (m != NULL && m->code == VS_E_VERSION && m->detail != 0)
		on_version(m->detail);
	else
		on_version(rx->in.hdr.version);
	return -1;
}

/* One complete frame at the start of rbuf: 1 handled (consumed), 0 need
 * more bytes, -1 end the connection. rbuf keeps an incomplete frame's
 * bytes, so the common reader starts afresh at each call. */
static int one_frame(size_t *used)
{
	const unsigned char *p = client_c.rbuf;
	size_t n = client_c.rlen;
	struct vs_frx rx;

	/* Nothing the scheduler sends a client is longer than the reader's
	 * own storage. */
	vs_frx_init(&rx, VS_ROLE_SCHEDULER, VS_FRX_INLINE);
	switch (vs_frx_push(&rx, &p, &n)) {
	case VS_FRX_MORE:
		return 0;
	case VS_FRX_FRAME:
		*used = client_c.rlen - n;
		return dispatch(&rx.in.hdr, vs_frx_payload(&rx)) < 0 ? -1 : 1;
	case VS_FRX_VERSION:
		return foreign_frame(&rx);
	default:
		if (!client_c.warned)
			log_warn("malformed frame from the scheduler (type 0x%x, "
				 "%u bytes): %s", rx.in.hdr.type,
				 rx.in.hdr.length, rx.why ? rx.why : "?");
		return -1;
	}
}

/* recv, keeping the descriptors passed with the bytes (the lock pages,
 * client_lock.c) and closing any other: none may leak into the program.
 * Descriptors beyond the room for them are closed by the kernel. */
static ssize_t recv_fds(void *buf, size_t len)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t r;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.b;
	mh.msg_controllen = sizeof(ctl.b);
	r = recvmsg(client_c.sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (r < 0)
		return r;
	for (cm = CMSG_FIRSTHDR(&mh); cm != NULL; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t n;

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(fd));
			client_lock_fd(fd);
		}
	}
	return r;
}

int client_read(void)
{
	ssize_t r;
	size_t used;
	int rc;

	if (!own_fd_valid(&client_c.sock_id))
		return -1;
	r = recv_fds(client_c.rbuf + client_c.rlen, CLIENT_RBUF - client_c.rlen);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (r <= 0)
		return -1;
	client_c.rlen += (size_t)r;
	while ((rc = one_frame(&used)) > 0) {
		memmove(client_c.rbuf, client_c.rbuf + used, client_c.rlen - used);
		client_c.rlen -= used;
	}
	return rc < 0 ? -1 : 0;
}
