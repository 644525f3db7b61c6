/*
 * sched_testclient: a synthetic vshare client for the integration tests.
 * It opens one or many connections to the scheduler, each of which says
 * hello, attaches one GPU, reports a footprint and cycles the lock:
 * request, hold for --hold-ms (or until a hard drop), release, pause.
 * Every event is printed with a CLOCK_MONOTONIC timestamp so that tests
 * can order the events of several processes.
 *
 *   sched_testclient --socket PATH [--uuid U] [--total-mem B] [--managed B]
 *       [--pinned B] [--label L] [--hold-ms N] [--gap-ms N] [--cycles K]
 *       [--clients N] [--ignore-drops] [--check-exclusive] [--stay]
 *       [--timeout-ms N] [--proto-version V] [--swapped US] [--quiet]
 *
 * --proto-version speaks version V in every frame (a version-1 shim with
 * 1); --swapped reports a swap-in of US microseconds (of --managed bytes,
 * or 1) after each grant, as the shim does after an oversubscribed one.
 *
 * Output lines: "<ms> <label>#<conn> <event> key=value..."; events: welcome,
 * grant, drop, mode, error, released, closed; at the end "summary ...".
 * Exit status: 0 all cycles done, 1 failure/timeout, 4 an ERROR arrived.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "vshare/proto.h"

enum cstate { C_WAIT, C_HOLD, C_GAP, C_DONE, C_DEAD };

struct cl {
	int fd;
	enum cstate st;
	uint32_t id;
	int cycles;
	double due;       /* end of hold or gap */
	double t_req;
	struct vs_frx rx;  /* the scheduler's frames, as the shim reads them */
};

static struct {
	const char *socket, *label;
	uint8_t uuid[VS_UUID_LEN];
	uint64_t total_mem, managed, pinned;
	int hold_ms, gap_ms, cycles, clients, ignore_drops, check_excl;
	int stay, quiet, timeout_ms;
	unsigned proto_version;
	long long swapped_us;   /* -1: no SWAPPED */
} opt;

static int holders, max_holders, errors, failures;
static long grants;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void event(int i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void event(int i, const char *fmt, ...)
{
	va_list ap;

	if (opt.quiet)
		return;
	printf("%.3f %s#%d ", now_ms(), opt.label, i);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static int send_msg(struct cl *c, uint16_t type, const void *p, uint32_t len)
{
	unsigned char buf[sizeof(struct vs_hdr) + 128];
	struct vs_hdr h;

	vs_hdr_init_v(&h, (uint16_t)opt.proto_version, type, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(struct vs_hdr), p, len);
	if (send(c->fd, buf, sizeof(struct vs_hdr) + len, MSG_NOSIGNAL) !=
	    (ssize_t)(sizeof(struct vs_hdr) + len))
		return -1;
	return 0;
}

static void request(struct cl *c)
{
	struct vs_gpu_ref r;

	memcpy(r.uuid, opt.uuid, VS_UUID_LEN);
	c->st = C_WAIT;
	c->t_req = now_ms();
	send_msg(c, VS_MSG_REQUEST, &r, sizeof(r));
}

static void release(struct cl *c, int i)
{
	struct vs_gpu_ref r;

	memcpy(r.uuid, opt.uuid, VS_UUID_LEN);
	holders--;
	c->cycles++;
	/* Stamped before it is sent, so it orders before the next grant. */
	event(i, "released cycle=%d", c->cycles);
	send_msg(c, VS_MSG_RELEASED, &r, sizeof(r));
	if (c->cycles >= opt.cycles) {
		c->st = C_DONE;
	} else {
		c->st = C_GAP;
		c->due = now_ms() + opt.gap_ms;
	}
}

static int start(struct cl *c)
{
	struct sockaddr_un sa;
	struct vs_hello h;
	struct vs_attach a;
	struct vs_footprint f;

	vs_frx_init(&c->rx, VS_ROLE_SCHEDULER, VS_FRX_INLINE);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", opt.socket);
	c->fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	memset(&h, 0, sizeof(h));
	h.proto_version = opt.proto_version;
	memcpy(h.label, opt.label, strnlen(opt.label, sizeof(h.label)));
	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, opt.uuid, VS_UUID_LEN);
	a.total_mem = opt.total_mem;
	memset(&f, 0, sizeof(f));
	memcpy(f.uuid, opt.uuid, VS_UUID_LEN);
	f.managed = opt.managed;
	f.pinned = opt.pinned;
	if (send_msg(c, VS_MSG_HELLO, &h, sizeof(h)) ||
	    send_msg(c, VS_MSG_ATTACH, &a, sizeof(a)) ||
	    send_msg(c, VS_MSG_FOOTPRINT, &f, sizeof(f)))
		return -1;
	if (opt.cycles > 0)
		request(c);
	else
		c->st = C_DONE;
	return 0;
}

static void swapped(struct cl *c)
{
	struct vs_swapped m;

	memset(&m, 0, sizeof(m));
	memcpy(m.uuid, opt.uuid, VS_UUID_LEN);
	m.us = (uint64_t)opt.swapped_us;
	m.bytes = opt.managed ? opt.managed : 1;
	send_msg(c, VS_MSG_SWAPPED, &m, sizeof(m));
}

static void on_frame(struct cl *c, int i, const struct vs_hdr *h,
		     const void *p)
{
	switch (h->type) {
	case VS_MSG_WELCOME:
		c->id = ((const struct vs_welcome *)p)->client_id;
		event(i, "welcome id=%u", c->id);
		break;
	case VS_MSG_GRANT: {
		const struct vs_grant *g = p;

		grants++;
		if (++holders > max_holders)
			max_holders = holders;
		if (opt.check_excl && holders > 1) {
			fprintf(stderr, "two holders at once\n");
			failures++;
		}
		event(i, "grant kind=%s flags=%u tq_ms=%u rtt_ms=%.3f",
		      g->kind ? "exclusive" : "shared", g->flags, g->tq_ms,
		      now_ms() - c->t_req);
		c->st = C_HOLD;
		c->due = now_ms() + opt.hold_ms;
		if (opt.swapped_us >= 0)
			swapped(c);
		break;
	}
	case VS_MSG_DROP: {
		const struct vs_drop *d = p;

		event(i, "drop reason=%u", d->reason);
		if (c->st == C_HOLD && d->reason != VS_DROP_IDLE &&
		    !opt.ignore_drops)
			release(c, i);
		break;
	}
	case VS_MSG_MODE:
		event(i, "mode mode=%s", vs_mode_name(((const struct vs_mode *)p)->mode));
		break;
	case VS_MSG_ERROR: {
		const struct vs_error *e = p;

		errors++;
		event(i, "error code=%d detail=%u msg=%s", e->code, e->detail,
		      e->msg);
		break;
	}
	default:
		break;
	}
}

/* Read what is there; -1 when the connection is gone. A scheduler of
 * another version ends it, after its error is printed. */
static int on_readable(struct cl *c, int i)
{
	unsigned char buf[4096];
	const unsigned char *p = buf;
	ssize_t got = read(c->fd, buf, sizeof(buf));
	size_t n;
	enum vs_frx_result r;

	if (got <= 0)
		return -1;
	n = (size_t)got;
	while ((r = vs_frx_push(&c->rx, &p, &n)) == VS_FRX_FRAME)
		on_frame(c, i, &c->rx.in.hdr, vs_frx_payload(&c->rx));
	if (r == VS_FRX_VERSION && vs_frx_foreign_error(&c->rx) != NULL)
		on_frame(c, i, &c->rx.in.hdr, vs_frx_foreign_error(&c->rx));
	return r == VS_FRX_MORE ? 0 : -1;
}

static int parse_opts(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", 1, NULL, 's' }, { "uuid", 1, NULL, 'u' },
		{ "total-mem", 1, NULL, 'T' }, { "managed", 1, NULL, 'm' },
		{ "pinned", 1, NULL, 'p' }, { "label", 1, NULL, 'l' },
		{ "hold-ms", 1, NULL, 'H' }, { "gap-ms", 1, NULL, 'G' },
		{ "cycles", 1, NULL, 'k' }, { "clients", 1, NULL, 'n' },
		{ "ignore-drops", 0, NULL, 'i' }, { "check-exclusive", 0, NULL, 'x' },
		{ "stay", 0, NULL, 'S' }, { "timeout-ms", 1, NULL, 't' },
		{ "proto-version", 1, NULL, 'v' }, { "quiet", 0, NULL, 'q' },
		{ "swapped", 1, NULL, 'w' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	opt.label = "testclient";
	opt.total_mem = 16ull << 30;
	opt.cycles = 1;
	opt.clients = 1;
	opt.timeout_ms = 15000;
	opt.proto_version = VS_PROTO_VERSION;
	opt.swapped_us = -1;
	vs_uuid_parse("GPU-00000000-0000-0000-0000-000000000001", opt.uuid);
	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': opt.socket = optarg; break;
		case 'u':
			if (vs_uuid_parse(optarg, opt.uuid) != 0)
				return -1;
			break;
		case 'T': opt.total_mem = strtoull(optarg, NULL, 0); break;
		case 'm': opt.managed = strtoull(optarg, NULL, 0); break;
		case 'p': opt.pinned = strtoull(optarg, NULL, 0); break;
		case 'l': opt.label = optarg; break;
		case 'H': opt.hold_ms = atoi(optarg); break;
		case 'G': opt.gap_ms = atoi(optarg); break;
		case 'k': opt.cycles = atoi(optarg); break;
		case 'n': opt.clients = atoi(optarg); break;
		case 'i': opt.ignore_drops = 1; break;
		case 'x': opt.check_excl = 1; break;
		case 'S': opt.stay = 1; break;
		case 't': opt.timeout_ms = atoi(optarg); break;
		case 'v': opt.proto_version = (unsigned)atoi(optarg); break;
		case 'q': opt.quiet = 1; break;
		case 'w': opt.swapped_us = strtoll(optarg, NULL, 0); break;
		default: return -1;
		}
	}
	return opt.socket && opt.clients > 0 ? 0 : -1;
}

/* Timers of every connection; the poll timeout to the next one. */
static int run_timers(struct cl *cl, int *alive)
{
	double t = now_ms(), next = t + 1000;

	*alive = 0;
	for (int i = 0; i < opt.clients; i++) {
		struct cl *c = &cl[i];

		if (c->st == C_HOLD && t >= c->due)
			release(c, i);
		if (c->st == C_GAP && t >= c->due)
			request(c);
		if ((c->st == C_HOLD || c->st == C_GAP) && c->due < next)
			next = c->due;
		if (c->st != C_DONE && c->st != C_DEAD)
			(*alive)++;
	}
	return next > t ? (int)(next - t) + 1 : 0;
}

static int loop(struct cl *cl, struct pollfd *pf)
{
	double end = now_ms() + opt.timeout_ms;
	int alive;

	for (;;) {
		int wait = run_timers(cl, &alive);

		if ((alive == 0 && !opt.stay) || now_ms() > end)
			return alive == 0 ? 0 : -1;
		for (int i = 0; i < opt.clients; i++) {
			pf[i].fd = cl[i].st == C_DEAD ? -1 : cl[i].fd;
			pf[i].events = POLLIN;
		}
		pf[opt.clients].fd = opt.stay ? 0 : -1;
		pf[opt.clients].events = POLLIN;
		if (poll(pf, (nfds_t)opt.clients + 1, wait) < 0 && errno != EINTR)
			return -1;
		if (pf[opt.clients].revents) /* stdin closed: --stay is over */
			return 0;
		for (int i = 0; i < opt.clients; i++) {
			if (!pf[i].revents || on_readable(&cl[i], i) == 0)
				continue;
			event(i, "closed");
			if (cl[i].st == C_HOLD)
				holders--;
			cl[i].st = C_DEAD;
			failures++;
		}
	}
}

int main(int argc, char **argv)
{
	struct cl *cl;
	struct pollfd *pf;
	int rc, done = 0;
	double t0;

	if (parse_opts(argc, argv) != 0) {
		fprintf(stderr, "usage: see the comment at the top of "
			"sched_testclient.c\n");
		return 2;
	}
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	cl = calloc((size_t)opt.clients, sizeof(*cl));
	pf = calloc((size_t)opt.clients + 1, sizeof(*pf));
	if (cl == NULL || pf == NULL)
		return 1;
	t0 = now_ms();
	for (int i = 0; i < opt.clients; i++)
		if (start(&cl[i]) != 0) {
			fprintf(stderr, "connection %d: %s\n", i, strerror(errno));
			return 1;
		}
	rc = loop(cl, pf);
	for (int i = 0; i < opt.clients; i++)
		done += cl[i].cycles >= opt.cycles;
	printf("summary clients=%d done=%d grants=%ld max_holders=%d errors=%d "
	       "failures=%d ms=%.0f\n", opt.clients, done, grants, max_holders,
	       errors, failures, now_ms() - t0);
	fflush(stdout);
	for (int i = 0; i < opt.clients; i++)
		close(cl[i].fd);
	free(cl);
	free(pf);
	if (errors)
		return 4;
	return rc == 0 && failures == 0 && done == opt.clients ? 0 : 1;
}
