/*
 * sched_bench: many synthetic clients cycling the GPU lock of one
 * vshare-scheduler, from one process (epoll), to measure the daemon.
 *
 *   sched_bench --socket PATH [--clients N] [--seconds S] [--hold-us H]
 *               [--think-us T]
 *
 * Each client: request, wait for the grant (the grant round trip is
 * measured from the request's send to the grant's arrival), hold H us,
 * release, think T us, again. It prints one line:
 *   clients=N seconds=S grants=G ops_per_s=X rtt_p50_us=.. rtt_p99_us=..
 *   rtt_max_us=.. handoff_p50_us=.. handoff_p99_us=..
 * where a hand-off is the time from one client's release to the next
 * exclusive grant while others wait (mode on only; 0 otherwise).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "vshare/proto.h"

struct bc {
	int fd;
	int holding;
	double t_req;
	size_t in_len;
	unsigned char in[512];
};

/* Deadlines are constant offsets from now, so they expire in the order
 * they were set: a FIFO ring is a priority queue here. */
struct fifo {
	int *who;
	double *due;
	size_t head, n, cap;
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void fifo_push(struct fifo *f, int who, double due)
{
	size_t i = (f->head + f->n++) % f->cap;

	f->who[i] = who;
	f->due[i] = due;
}

static int fifo_pop_due(struct fifo *f, double t)
{
	int who;

	if (f->n == 0 || f->due[f->head] > t)
		return -1;
	who = f->who[f->head];
	f->head = (f->head + 1) % f->cap;
	f->n--;
	return who;
}

static uint8_t uuid[VS_UUID_LEN] = { 0xbe, 0x1c };
static double *rtt, *handoff;
static size_t n_rtt, n_handoff, cap_samples;
static double last_release;
static int waiting;

static void send_msg(struct bc *c, uint16_t type, const void *p, uint32_t len)
{
	unsigned char buf[sizeof(struct vs_hdr) + 128];
	struct vs_hdr h;

	vs_hdr_init(&h, type, len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(struct vs_hdr), p, len);
	if (send(c->fd, buf, sizeof(struct vs_hdr) + len, MSG_NOSIGNAL) < 0) {
		perror("send");
		exit(1);
	}
}

static void request(struct bc *c)
{
	c->t_req = now_us();
	waiting++;
	send_msg(c, VS_MSG_REQUEST, uuid, VS_UUID_LEN);
}

static void release(struct bc *c)
{
	c->holding = 0;
	last_release = now_us();
	send_msg(c, VS_MSG_RELEASED, uuid, VS_UUID_LEN);
}

static int connect_one(const char *path, struct bc *c)
{
	struct sockaddr_un sa;
	struct vs_hello h;
	struct vs_attach a;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		return -1;
	memset(&h, 0, sizeof(h));
	h.proto_version = VS_PROTO_VERSION;
	memcpy(h.label, "bench", 5);
	memset(&a, 0, sizeof(a));
	memcpy(a.uuid, uuid, VS_UUID_LEN);
	a.total_mem = 80ull << 30;
	send_msg(c, VS_MSG_HELLO, &h, sizeof(h));
	send_msg(c, VS_MSG_ATTACH, &a, sizeof(a));
	return 0;
}

static void sample(double **arr, size_t *n, double v)
{
	if (*n < cap_samples)
		(*arr)[(*n)++] = v;
}

/* Frames that arrived; 1 for each grant. */
static int on_input(struct bc *c, double t, int *grants)
{
	ssize_t r = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
	const size_t hs = sizeof(struct vs_hdr);

	if (r <= 0)
		return -1;
	c->in_len += (size_t)r;
	while (c->in_len >= hs) {
		struct vs_hdr h;

		memcpy(&h, c->in, hs);
		if (vs_check_hdr(&h, VS_ROLE_SCHEDULER) != VS_OK)
			return -1;
		if (c->in_len < hs + h.length)
			break;
		if (h.type == VS_MSG_GRANT) {
			waiting--;
			sample(&rtt, &n_rtt, t - c->t_req);
			/* Someone else waited too: this grant followed the
			 * last release directly. */
			if (waiting > 0 && last_release > 0 &&
			    ((const struct vs_grant *)(const void *)
			     (c->in + hs))->kind == VS_GRANT_EXCLUSIVE)
				sample(&handoff, &n_handoff, t - last_release);
			c->holding = 1;
			(*grants)++;
		} else if (h.type == VS_MSG_ERROR) {
			fprintf(stderr, "error from the scheduler\n");
			return -1;
		}
		memmove(c->in, c->in + hs + h.length, c->in_len - hs - h.length);
		c->in_len -= hs + h.length;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	return v[(size_t)(p * (double)(n - 1))];
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", 1, NULL, 's' }, { "clients", 1, NULL, 'n' },
		{ "seconds", 1, NULL, 'd' }, { "hold-us", 1, NULL, 'H' },
		{ "think-us", 1, NULL, 'T' }, { NULL, 0, NULL, 0 },
	};
	const char *path = getenv("VSHARE_SOCKET");
	int n = 1000, ch, ep, grants = 0;
	double secs = 5, hold = 0, think = 0, t0, end, t;
	struct fifo holdq, thinkq;
	struct epoll_event ev, evs[256];
	struct rlimit rl;
	struct bc *cl;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 's': path = optarg; break;
		case 'n': n = atoi(optarg); break;
		case 'd': secs = atof(optarg); break;
		case 'H': hold = atof(optarg); break;
		case 'T': think = atof(optarg); break;
		default: return 2;
		}
	}
	if (path == NULL || n < 1)
		return 2;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	cap_samples = 20u << 20;
	cl = calloc((size_t)n, sizeof(*cl));
	rtt = malloc(cap_samples * sizeof(double));
	handoff = malloc(cap_samples * sizeof(double));
	holdq.who = malloc((size_t)n * sizeof(int));
	holdq.due = malloc((size_t)n * sizeof(double));
	thinkq.who = malloc((size_t)n * sizeof(int));
	thinkq.due = malloc((size_t)n * sizeof(double));
	holdq.cap = thinkq.cap = (size_t)n;
	holdq.head = holdq.n = thinkq.head = thinkq.n = 0;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!cl || !rtt || !handoff || !holdq.who || !holdq.due || !thinkq.who ||
	    !thinkq.due || ep < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		if (connect_one(path, &cl[i]) != 0) {
			fprintf(stderr, "connect %d: %s\n", i, strerror(errno));
			return 1;
		}
		ev.events = EPOLLIN;
		ev.data.u32 = (uint32_t)i;
		epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
	}
	t0 = now_us();
	end = t0 + secs * 1e6;
	/* Without think time everyone starts at once; with it the starts are
	 * spread over one cycle, as independent clients would be, instead of
	 * arriving as one burst per cycle forever. */
	for (int i = 0; i < n; i++) {
		if (hold + think == 0)
			request(&cl[i]);
		else
			fifo_push(&thinkq, i, t0 + (hold + think) * i / n);
	}
	while ((t = now_us()) < end) {
		int k, who;
		double wait_us = 100000;
		struct timespec ts;

		while ((who = fifo_pop_due(&holdq, t)) >= 0) {
			release(&cl[who]);
			fifo_push(&thinkq, who, t + think);
		}
		while ((who = fifo_pop_due(&thinkq, t)) >= 0)
			request(&cl[who]);
		/* Sleep to the next deadline, not spin: a spinning client
		 * would steal the CPU the daemon needs. */
		if (holdq.n && holdq.due[holdq.head] - t < wait_us)
			wait_us = holdq.due[holdq.head] - t;
		if (thinkq.n && thinkq.due[thinkq.head] - t < wait_us)
			wait_us = thinkq.due[thinkq.head] - t;
		if (wait_us < 0)
			wait_us = 0;
		ts.tv_sec = (time_t)(wait_us / 1e6);
		ts.tv_nsec = (long)((wait_us - (double)ts.tv_sec * 1e6) * 1e3);
		k = epoll_pwait2(ep, evs, 256, &ts, NULL);
		t = now_us();
		for (int j = 0; j < k; j++) {
			struct bc *c = &cl[evs[j].data.u32];
			int g = 0;

			if (on_input(c, t, &g) != 0) {
				fprintf(stderr, "connection lost\n");
				return 1;
			}
			grants += g;
			if (g && hold == 0 && think == 0) {
				release(c);
				request(c);
			} else if (g) {
				fifo_push(&holdq, (int)evs[j].data.u32, t + hold);
			}
		}
	}
	t = now_us() - t0;
	qsort(rtt, n_rtt, sizeof(double), cmp);
	qsort(handoff, n_handoff, sizeof(double), cmp);
	printf("clients=%d seconds=%.1f grants=%d ops_per_s=%.0f "
	       "rtt_p50_us=%.0f rtt_p99_us=%.0f rtt_max_us=%.0f "
	       "handoff_p50_us=%.0f handoff_p99_us=%.0f\n", n, t / 1e6, grants,
	       grants / (t / 1e6), pct(rtt, n_rtt, 0.5), pct(rtt, n_rtt, 0.99),
	       n_rtt ? rtt[n_rtt - 1] : 0, pct(handoff, n_handoff, 0.5),
	       pct(handoff, n_handoff, 0.99));
	return 0;
}
