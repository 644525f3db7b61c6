/*
 * The scheduler client: one background thread that owns the connection to
 * vshare-scheduler and every GPU's protocol state. Application threads
 * never touch either: a thread waiting at a gate sets its GPU's wanted bit
 * and wakes this thread through a socket pair (client_wanted), without
 * taking any lock of the client's.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "client_int.h"
#include "log.h"

/* How long gate_shutdown waits for the thread: it may be inside a
 * synchronize that the exiting driver never finishes. */
#define CLIENT_STOP_WAIT_MS 300


/* The thread's life: RUN_NONE until the first client_prepare or
 * client_wanted starts it, RUN_STARTING while that thread creates it,
 * RUN_RUNNING, RUN_STOPPED once client_stop ran or the thread could not
 * be started (for good: no thread starts after it; a fork child starts
 * again from RUN_NONE). */
enum { RUN_NONE, RUN_STARTING, RUN_RUNNING, RUN_STOPPED };
static int run_state;        /* atomic */
static pthread_t thread;
static pthread_mutex_t done_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cv = PTHREAD_COND_INITIALIZER;
static int thread_done;      /* under done_mu */

/*
 * The wake-up channel: any thread writes to wake_wr, the client thread
 * polls wake_rd. A socket pair rather than an eventfd: every socket has an
 * inode of its own, so own_fd_valid tells it from a descriptor the program
 * opened on its number (all eventfds share one inode). The writers take no
 * lock: wake_fd publishes wake_wr while it may be written, and wake_users
 * counts the writers inside client_wake. The client thread replaces the
 * pair only after unpublishing it and waiting out the writers, so none
 * writes to a descriptor that is being closed (or has become the
 * program's).
 */
static struct own_fd wake_rd = { .fd = -1 }, wake_wr = { .fd = -1 };
static int wake_fd = -1;     /* atomic */
static int wake_users;       /* atomic */

int client_started(void)
{
	return A_LOAD(&run_state) == RUN_RUNNING;
}

static void client_wake(void)
{
	char one = 1;
	int fd;

	/* Count in, then look: with the replacer's unpublish-then-wait (both
	 * sequentially consistent) either this thread sees no channel or the
	 * replacer waits for it. Not blocking (a full channel has a wake-up
	 * pending already), and no SIGPIPE for the calling thread if the
	 * other end is gone. */
	__atomic_add_fetch(&wake_users, 1, __ATOMIC_SEQ_CST);
	fd = A_LOAD(&wake_fd);
	if (fd >= 0 && own_fd_valid(&wake_wr))
		(void)!send(fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
	__atomic_sub_fetch(&wake_users, 1, __ATOMIC_SEQ_CST);
}

/* A fresh wake-up channel; the old one is closed where it is still ours.
 * 0, or -1 if none could be made (the thread then polls on a timeout). */
static int wake_renew(void)
{
	int sv[2], rc;

	rc = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv);
	A_STORE(&wake_fd, -1);
	while (A_LOAD(&wake_users) != 0)
		sched_yield();
	own_fd_close(&wake_rd);
	own_fd_close(&wake_wr);
	if (rc == 0) {
		own_fd_take(&wake_rd, sv[0]);
		own_fd_take(&wake_wr, sv[1]);
		A_STORE(&wake_fd, wake_wr.fd);
	}
	return rc;
}

static void wake_drain(void)
{
	char junk[64];

	if (own_fd_valid(&wake_rd))
		while (recv(wake_rd.fd, junk, sizeof(junk), MSG_DONTWAIT) > 0)
			;
}

/* The program may have closed the client's descriptors (client_fd.c):
 * a lost socket is a lost connection, a lost wake-up channel is made
 * again. Checked before each poll, so the thread neither spins on a
 * closed descriptor nor polls one of the program's. */
static void check_fds(void)
{
	if (!own_fd_valid(&wake_rd) || !own_fd_valid(&wake_wr))
		(void)wake_renew();
	if (client_c.sock >= 0 && !own_fd_valid(&client_c.sock_id))
		client_lost("the program closed the scheduler connection");
}

static void schedule_retry(void)
{
	uint64_t b = client_c.backoff_ms;

	client_c.next_try_ms = gate_now_ms() + b;
	client_c.backoff_ms = b * 2 > CLIENT_BACKOFF_MAX_MS ? CLIENT_BACKOFF_MAX_MS
							    : b * 2;
}

/* The GPUs were attached right behind a HELLO that the scheduler
 * refused (client_register): again on the next connection. */
static void forget_attached(void)
{
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		client_g.gpu[i].attached = client_g.gpu[i].fp_valid = 0;
}

void client_lost(const char *why)
{
	int held[GATE_MAX_GPUS], quiet, full;
	char told[VS_ERRMSG_MAX];

	/* An older scheduler refused our HELLO's version (nothing else was
	 * said on the connection): HELLO again at once, in its version. */
	if (client_c.downgrade && !client_c.welcomed) {
		client_c.downgrade = 0;
		forget_attached();
		client_set_sock(-1);
		client_c.rlen = 0;
		client_c.refusal[0] = '\0';
		client_c.next_try_ms = 0;
		return;
	}
	client_c.downgrade = 0;
	client_settle_mark();
	/* A scheduler that served us may come back upgraded: the next
	 * connection starts in our own version again. */
	if (client_c.welcomed)
		client_c.version = 0;

	/* One line per outage: a scheduler that accepts and hangs up (or
	 * never answers) is not reported at every attempt. */
	if (client_c.welcomed &&
	    gate_now_ms() - client_c.welcome_ms >= CLIENT_STABLE_MS) {
		client_c.backoff_ms = CLIENT_BACKOFF_MIN_MS;
		client_c.warned = 0;
		client_c.back_told = 0;
	}
	quiet = client_c.warned;
	/* The scheduler said why before it closed (max_clients, uid_conns):
	 * that is the reason to tell. */
	/* Once refused for a full table, a later attempt that fails
	 * otherwise (no answer in time from a loaded scheduler) still
	 * waits: the scheduler is there. */
	full = client_c.refusal_code == VS_E_FULL || client_c.full;
	if (client_c.refusal[0] != '\0') {
		snprintf(told, sizeof(told), "%s", client_c.refusal);
		client_c.refusal[0] = '\0';
		why = told;
	}
	client_c.refusal_code = 0;
	client_set_sock(-1);
	client_c.rlen = 0;
	client_c.refusals = 0;
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		struct client_gpu *c = &client_g.gpu[i];

		held[i] = c->held;
		/* A take not told yet was of the lost connection's page: the
		 * scheduler adopted it as that connection ended. */
		c->held = c->requested = c->attached = c->fp_valid = c->took = 0;
		c->swap.bytes = 0;
		/* What the lost connection's scheduler did not hear of this
		 * hold is not told to the next one: it did not see it. */
		memset(&c->use, 0, sizeof(c->use));
		c->drop = 0;
		/* The next scheduler's state starts afresh, and so does ours. */
		c->quiet = c->resync = 0;
		c->resync_ms = 0;
		A_STORE(&c->page_skip, 0);
		/* A GPU refused on the lost connection is asked for again on
		 * the next one; running unshared meanwhile opens it anyway,
		 * and waiting keeps it closed. */
		c->refused = 0;
		c->retry_step_ms = 0;
		c->want = client_learn(i);
	}
	/* The backoff restarts from its minimum only after a working
	 * connection (CLIENT_STABLE_MS), so a scheduler that accepts and
	 * then hangs up is not hammered. */
	schedule_retry();
	if (client_stopping())
		return;
	client_c.warned = 1;
	/* The scheduler is there and its table is full: other programs'
	 * connections (its admins', or a uid with as many as any) must not
	 * push this one to run unshared. GPU work waits while it asks again
	 * with its backoff, as through a busy listen queue, and says so
	 * once. */
	if (full) {
		if (!client_c.full)
			log_warn("the scheduler at %s is full (%s): GPU work "
				 "waits for a place, asking again every %u s at "
				 "most", client_g.conf.socket_path, why,
				 CLIENT_BACKOFF_MAX_MS / 1000u);
		client_c.full = 1;
		for (int i = 0; i < GATE_MAX_GPUS; i++)
			if (held[i])
				(void)client_take(i);
		return;
	}
	if (!client_g.conf.require_sched) {
		if (!client_c.version_seen && !quiet)
			log_warn("lost the scheduler (%s): running unshared until "
				 "it is back", why);
		client_unshared_begin(VS_UNSHARED_LOST);
		(void)gate_set_unshared(1);
		return;
	}
	if (!client_c.version_seen && !quiet)
		log_warn("lost the scheduler (%s): GPU work waits until it is "
			 "back", why);
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		if (held[i])
			(void)client_take(i);
}

static void connect_failed(const char *why)
{
	client_settle_mark();
	schedule_retry();
	/* The scheduler that said it was full has gone: an outage like any
	 * other, told as such. */
	if (client_c.full) {
		client_c.full = 0;
		client_c.warned = 0;
	}
	if (client_c.warned)
		return;
	client_c.warned = 1;
	if (client_g.conf.require_sched) {
		log_warn("no scheduler at %s (%s): GPU work waits for it "
			 "(VSHARE_REQUIRE_SCHEDULER)", client_g.conf.socket_path,
			 why);
		return;
	}
	log_warn("no scheduler at %s (%s): running unshared",
		 client_g.conf.socket_path, why);
	client_unshared_begin(VS_UNSHARED_ABSENT);
	(void)gate_set_unshared(1);
}

/* Back from running unshared: every GPU this process used goes through a
 * release (so nothing of ours still runs when another process is granted)
 * and is requested again; its gate stays closed until the grant. */
static void rejoin(void)
{
	if (!gate_set_unshared(0))
		return;
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		if (client_learn(i) && client_take(i) == 0)
			client_g.gpu[i].want = 1;
}

/* A full listen queue (EAGAIN) is a busy scheduler (client_connect.c):
 * GPU work waits while it tries again, until CLIENT_BUSY_FOR_MS made it
 * no scheduler after all. */
static void try_connect(void)
{
	int fd, err;

	fd = client_connect(&err);
	if (fd < 0 && err != EAGAIN) {
		connect_failed(strerror(err));
		return;
	}
	if (fd < 0) {
		char why[64];

		if (client_connect_busy())
			return;
		snprintf(why, sizeof(why), "its listen queue stayed full for "
			 "%u ms", CLIENT_BUSY_FOR_MS);
		connect_failed(why);
		return;
	}
	client_set_sock(fd);
	client_c.welcome_by_ms = gate_now_ms() + CLIENT_WELCOME_MS;
	if (client_hello() != 0) {
		/* A scheduler that refused the connection (max_clients) may
		 * have closed it before the HELLO went out: its ERROR, which
		 * says why, waits to be read. */
		(void)client_read();
		client_lost("sending hello failed");
		return;
	}
	/* A scheduler that refuses this HELLO's version answers with an
	 * error frame and closes, maybe before the frames behind the HELLO
	 * are sent: their failed send is no loss of its own, the reader
	 * finds the error frame and then the end (a version downgrade). */
	if (client_register() != 0)
		forget_attached();
}

/* Only a scheduler that answered takes the GPUs back from running
 * unshared: one that accepts and then says nothing must not stop the
 * program's work at each attempt. */
static void client_welcomed(void)
{
	if (client_c.warned && !client_c.back_told && !client_c.version_seen)
		log_info("connected to the scheduler at %s", client_g.conf.socket_path);
	client_c.back_told = client_c.warned;
	client_c.version_seen = 0;
	client_c.full = 0;
	client_c.welcomed = 1;
	client_c.welcome_ms = gate_now_ms();
	/* A scheduler older than version 3 has no policy to send. */
	if (client_version() < 3)
		client_settle_mark();
	/* A failed send is found at the next one, as the connection's end. */
	(void)client_unshared_tell();
	rejoin();
}

static int next_timeout(int work)
{
	uint64_t now;
	int t;

	now = gate_now_ms();
	if (client_c.sock >= 0 && !client_c.welcomed) {
		t = client_c.welcome_by_ms > now ? (int)(client_c.welcome_by_ms - now) : 0;
		return work < 0 || t < work ? t : work;
	}
	if (client_c.sock >= 0 || client_c.version_dead)
		return work;
	t = client_c.next_try_ms > now ? (int)(client_c.next_try_ms - now) : 0;
	return work < 0 || t < work ? t : work;
}

/* Right after a REQUEST the GRANT is usually a few tens of microseconds
 * away: poll without sleeping until then, so that the grant does not wait
 * for this thread to wake up. Returns poll's result (0: nothing yet). */
static int spin_poll(struct pollfd *pf, int n)
{
	uint64_t until = A_LOAD(&client_c.spin_until_ns);
	int r = 0;

	while (r == 0 && gate_now_ns() < until) {
		r = poll(pf, (nfds_t)n, 0);
		if (r < 0 && errno == EINTR)
			r = 0;
		/* The scheduler, woken by the REQUEST, may be queued on this
		 * CPU: let it run. */
		if (r == 0)
			sched_yield();
	}
	return r;
}

/* Set on the client thread: it must never wait for what it is to do
 * (client_policy_wait). A flag of its own rather than a comparison with
 * `thread`, which is not written yet when the thread starts. */
static __thread int on_client_thread;

static void *client_main(void *arg)
{
	struct pollfd pf[2];
	int t, n, r;

	(void)arg;
	on_client_thread = 1;
	while (!client_stopping()) {
		if (client_fast_adopt() != 0)
			client_lost("sending to the scheduler failed");
		check_fds();
		if (client_c.sock < 0 && !client_c.version_dead &&
		    gate_now_ms() >= client_c.next_try_ms)
			try_connect();
		if (client_c.sock >= 0 && !client_c.welcomed &&
		    gate_now_ms() >= client_c.welcome_by_ms)
			client_lost("it does not answer");
		t = -1;
		if (client_c.sock >= 0 && client_c.welcomed &&
		    client_work(&t) != 0)
			client_lost("sending to the scheduler failed");
		t = next_timeout(t);
		/* A wake-up channel that could not be made again: look at
		 * least every 100 ms. */
		if (wake_rd.fd < 0 && (t < 0 || t > 100))
			t = 100;
		pf[0] = (struct pollfd){ .fd = wake_rd.fd, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = client_c.sock, .events = POLLIN };
		n = client_c.sock >= 0 ? 2 : 1;
		r = spin_poll(pf, n);
		if (r == 0)
			r = poll(pf, (nfds_t)n, t);
		/* Whatever the error, the thread stays: without it the gates
		 * would never open again. */
		if (r < 0 && errno != EINTR)
			(void)poll(NULL, 0, 10);
		/* Before any frame: a REQUEST a waiting thread sent is this
		 * thread's again (client_work.c, the fast REQUEST). */
		if (client_fast_adopt() != 0)
			client_lost("sending to the scheduler failed");
		if (r <= 0)
			continue;
		/* Frames first: a GRANT opens its gate before anything else. */
		if (client_c.sock >= 0 && (pf[1].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    client_read() != 0)
			client_lost("connection closed");
		/* A WELCOME among the frames: the connection now serves the
		 * GPUs (read by client_msg.c, acted on here). */
		if (client_c.sock >= 0 && client_c.welcome_new) {
			client_c.welcome_new = 0;
			client_welcomed();
		}
		if (pf[0].revents & POLLIN)
			wake_drain();
	}
	(void)client_fast_adopt();
	/* The process ends, and the connection's end releases its GPUs:
	 * what its holds did since their last report goes out first. */
	for (int dev = 0; dev < GATE_MAX_GPUS && client_c.sock >= 0 &&
	     client_c.welcomed; dev++)
		if (client_g.gpu[dev].held &&
		    client_use_due(dev, &client_g.gpu[dev], 1, NULL) != 0)
			break;
	client_set_sock(-1);
	pthread_mutex_lock(&done_mu);
	thread_done = 1;
	pthread_cond_broadcast(&done_cv);
	pthread_mutex_unlock(&done_mu);
	return NULL;
}

void client_init(const struct client_callbacks *cb)
{
	client_g.cb = cb;
	client_conf_read(&client_g.conf);
}

/* Start the thread, once: the first caller creates it, a concurrent one
 * goes on (its wanted bit is seen by the new thread's first pass). A
 * client that cannot start leaves the program running unshared. */
static void client_start(void)
{
	sigset_t all, old;
	int none = RUN_NONE, rc;

	if (A_LOAD(&run_state) != RUN_NONE ||
	    !__atomic_compare_exchange_n(&run_state, &none, RUN_STARTING, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return;
	client_c.sock = -1;
	client_c.backoff_ms = CLIENT_BACKOFF_MIN_MS;
	client_c.next_try_ms = 0;
	thread_done = 0;
	/* The thread must not take the host program's signals. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = wake_renew() != 0 ? -1 : pthread_create(&thread, NULL, client_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		/* For good: no thread will ever settle the policy, and an
		 * allocation must not wait for it each time. */
		A_STORE(&run_state, RUN_STOPPED);
		log_warn("cannot start the scheduler client: running unshared");
		(void)gate_set_unshared(1);
		client_settle_mark();
		return;
	}
	/* client_stop came meanwhile: the thread sees stop_asked and ends. */
	if (!__atomic_compare_exchange_n(&run_state, &(int){ RUN_STARTING },
					 RUN_RUNNING, 0, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		pthread_detach(thread);
}

void client_wanted(void *arg, int dev)
{
	int rc;

	(void)arg;
	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return;
	/* An idle GPU's REQUEST goes out from here (client_work.c); the
	 * client thread, woken, polls for the GRANT. A GPU taken through the
	 * lock page needs no wake-up at all: on an idle machine waking the
	 * client thread costs this thread more than the take itself, and the
	 * TOOK can wait for the thread's next pass (client_work.c). */
	rc = client_started() ? client_fast_request(dev) : -1;
	if (rc == CLIENT_FAST_RC_TOOK)
		return;
	if (rc == 0) {
		client_wake();
		return;
	}
	/* Only the first wait since the client thread last looked wakes it;
	 * the thread finds the waiters through gate_waiting. */
	if (A_XCHG(&client_g.gpu[dev].wanted, 1) != 0 && client_started())
		return;
	client_start();
	client_wake();
}

void client_prepare(int dev)
{
	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return;
	/* The running thread attaches a GPU the gate knows on its next
	 * pass; one that was not running finds it on its first. */
	if (!client_started())
		client_start();
	client_wake();
	/* The first open of a context on dev waits (a round trip or two,
	 * beside the many milliseconds a context costs) until the GPU may be
	 * taken through the lock page: a program's first launch follows
	 * within microseconds, and would otherwise wait for the registration
	 * and then a REQUEST. Once per GPU, bounded. */
	if (!on_client_thread && !A_XCHG(&client_g.gpu[dev].prep_waited, 1))
		client_settle_gpu_wait(dev, CLIENT_PREPARE_WAIT_MS);
}

void client_policy_wait(void)
{
	/* The client thread itself must not wait for what it is to do,
	 * and with VSHARE_DISABLE nothing connects. */
	if (client_settled() || !gate_enabled() || client_stopping() ||
	    on_client_thread)
		return;
	client_start();
	client_wake();
	/* A version downgrade takes a second connection: room for both. */
	client_settle_wait(2 * CLIENT_WELCOME_MS + 100);
}

void client_footprint_changed(int dev)
{
	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return;
	/* Only the first change since the client last looked wakes it. */
	if (A_XCHG(&client_g.gpu[dev].fp_dirty, 1) == 0 && client_started())
		client_wake();
}

void client_stop(void)
{
	struct timespec ts;
	int done = 0;

	A_STORE(&client_g.stop_asked, 1);
	if (A_XCHG(&run_state, RUN_STOPPED) != RUN_RUNNING)
		return;
	client_wake();
	client_deadline(&ts, CLIENT_STOP_WAIT_MS);
	pthread_mutex_lock(&done_mu);
	while (!thread_done &&
	       pthread_cond_timedwait(&done_cv, &done_mu, &ts) == 0)
		;
	done = thread_done;
	pthread_mutex_unlock(&done_mu);
	/* If the thread is stuck (in the driver), leave it: the process is
	 * exiting and the kernel closes the socket, which the scheduler
	 * takes as a release. (A wait on a condition variable, which needs
	 * no GNU extension; pthread_timedjoin_np would do as well, bound to
	 * its old symbol version by glibc_compat.h.) */
	if (done)
		pthread_join(thread, NULL);
	else
		pthread_detach(thread);
}

void client_atfork_child(void)
{
	/* The fork child has no client thread; these descriptors are copies
	 * of the parent's, and closing them leaves its connection alone. A
	 * thread of the parent that was inside client_wake does not exist
	 * here. */
	client_lock_atfork_child();
	own_fd_close(&client_c.sock_id);
	own_fd_close(&wake_rd);
	own_fd_close(&wake_wr);
	A_STORE(&wake_fd, -1);
	A_STORE(&wake_users, 0);
	memset(&client_c, 0, sizeof(client_c));
	client_c.sock = -1;
	client_c.sock_id.fd = -1;
	memset(client_g.gpu, 0, sizeof(client_g.gpu));
	client_wait_atfork_child();
	pthread_mutex_init(&done_mu, NULL);
	pthread_cond_init(&done_cv, NULL);
	client_settle_atfork_child();
	thread_done = 0;
	A_STORE(&client_g.stop_asked, 0);
	A_STORE(&run_state, RUN_NONE);
}
