/*
 * Priority at kernel granularity (include/vshare/proto.h, "Priority"):
 * the lock decides who may use a GPU at all; within that, while an
 * interactive program has work in flight on a GPU, the gates of batch
 * programs there hold their new submissions back, and their work
 * already queued drains. The moment the interactive work has finished,
 * they go on: no idle gap, no grant, no round trip.
 *
 * The state is one cache line of the scheduler's words page per GPU,
 * which every client maps: `busy`, a deadline the interactive program
 * stores before each submission and renews while its work runs, and
 * `seq`, a futex that batch gates sleep on until `busy` clears. The
 * scheduler's sealed state page says per GPU whether an interactive
 * program in force is attached at all (`prio`, and the share of a batch
 * program's time that may be held back); while it says 0, a batch
 * submission costs one load more than before.
 *
 * The interactive side: its submissions mark their streams (the gate's
 * mark operations, as pacing uses), and a watcher thread of this
 * process looks at the marks, renews the deadline meanwhile, and clears
 * `busy` once every mark has passed. A program that stops (SIGSTOP, a
 * debugger) stops renewing: the deadline passes within PRIO_HOLD_NS and
 * the batch gates go on. A program that dies does too, and the
 * scheduler clears `prio` at its EOF.
 *
 * The batch side trusts nothing in the words (any client can write
 * them): a deadline further ahead than the renewal allows counts as
 * none, and a gate holds back at most `prio` percent of its own time (a
 * token bucket: that share of the time elapsed, at most a second's worth
 * saved up), so a hostile writer, or an interactive program that
 * computes non-stop, takes at most that share from a batch program.
 * Nothing waits while a stream capture is active in this process (the
 * work is recorded, not submitted).
 */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "atomics.h"
#include "gate_int.h"
#include "log.h"

/* How far ahead the interactive program's deadline reaches: a stopped
 * program holds batch work back at most this long. The watcher renews
 * it every look, so its work may run longer. */
#define PRIO_HOLD_NS     20000000ull
/* The longest sleep of a held batch thread before it looks again (a
 * wake-up lost to a hostile writer of `seq` costs at most this). */
#define PRIO_NAP_NS      1000000ull
/* The bucket: at most this much of held time saved up, times prio %. */
#define PRIO_WINDOW_NS   1000000000ull
/* The watcher's looks at its marks: a yield between them for the first
 * PRIO_SPIN_NS of work in flight, then a short sleep (timer slack set
 * to 1 us for that thread). A sleep's wake-up costs tens of us, which
 * batch work would wait on top of each interactive kernel: a serving
 * loop's kernels take about 10 us each, with 20 us of Python between
 * them, and on an H200 a watcher that slept after 32 looks left its
 * requests at 1.9x solo where one that yields for 300 us gave 1.0x. */
#define PRIO_SPIN_NS     300000ull
#define PRIO_SPINS       32          /* below GATE_SPIN_MIN_CPUS */
#define PRIO_POLL_NS     20000ull
/* A held batch thread yields between looks for its first
 * PRIO_HOLD_SPIN_NS before it sleeps on the futex: most holds end
 * within it (an interactive kernel), and a futex wake-up would add its
 * own tens of us to each. */
#define PRIO_HOLD_SPIN_NS 100000ull
/* An interactive program seen busy within this long is active: batch
 * work on its GPU keeps its queue short (gate_prio_pace_ns). */
#define PRIO_ACTIVE_NS   1000000000ull
/* The rhythm of requests: a submission after this much quiet (since
 * the program's previous one went in) starts a request; starts more
 * than PRIO_REQ_MAX_NS apart start the rhythm over; PRIO_REQ_SEEN
 * intervals are seen before a prediction, and only intervals whose
 * mean deviation is at most an eighth of their mean are a rhythm. The
 * prediction is the mean less four deviations: early rather than late. */
#define PRIO_REQ_GAP_NS  2000000ull
#define PRIO_REQ_MAX_NS  1000000000ull
#define PRIO_REQ_SEEN    4u
/* A batch queue held to the longer bound until this long before the
 * request beyond that bound's own drain. */
#define PRIO_FAR_MARGIN_NS 1000000ull

const struct gate_prio_test *gate_prio_test;

static struct prio_watch {
	pthread_mutex_t mu;
	pthread_cond_t  cv;
	int      started;          /* atomic: the watcher thread runs */
	int      active;           /* GPUs with work to look after */
} pw = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0 };

static __thread void *prio_stream
	__attribute__((tls_model("initial-exec")));
/* gate_prio_before counted this thread's submission in prio_subm: its
 * _after takes it back, even if the pages were unbound meanwhile. */
static __thread int prio_counted
	__attribute__((tls_model("initial-exec")));

/* Spinning for the time above pays only where CPUs are left for the
 * threads spun for; below GATE_SPIN_MIN_CPUS (or VSHARE_SPIN_US=0 said
 * explicitly) the watcher looks PRIO_SPINS times, and a held batch
 * thread not at all, before they sleep. */
static int prio_spins(void)
{
	if (gate_g.conf.spin_forced)
		return gate_g.conf.spin_ns != 0;
	return gate_g.conf.cpus >= GATE_SPIN_MIN_CPUS;
}

static uint64_t prio_now(void)
{
	const struct gate_prio_test *t = gate_prio_test;

	return t != NULL ? t->now_ns() : gate_now_ns();
}

static void futex_wait(uint32_t *addr, uint32_t val, uint64_t ns)
{
	const struct gate_prio_test *t = gate_prio_test;
	struct timespec ts = { (time_t)(ns / 1000000000u),
			       (long)(ns % 1000000000u) };

	if (t != NULL) {
		t->sleep_ns(addr, val, ns);
		return;
	}
	/* Shared memory of two processes: not a private futex. */
	syscall(SYS_futex, addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static void futex_wake(uint32_t *addr)
{
	if (gate_prio_test != NULL)
		return;
	syscall(SYS_futex, addr, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* ---- binding (the client, as it learns the pages) ---- */

void gate_prio_bind(int dev, const struct vs_lock_slot *slot,
		    struct vs_lock_word *w)
{
	const uint32_t *prio = slot != NULL ? &slot->prio : NULL;
	struct gate_gpu *g;

	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return;
	g = &gate_g.gpu[dev];
	if (prio == NULL || w == NULL)
		prio = NULL, w = NULL;
	/* The word and the count first: a reader that sees the share also
	 * sees them. */
	A_STORE(&g->prio_w, w);
	A_STORE(&g->prio_n, prio != NULL ? &slot->prio_n : NULL);
	if (A_XCHG(&g->prio_pct, prio) == NULL) {
		if (prio != NULL)
			__atomic_add_fetch(&gate_g.prio_bound, 1, __ATOMIC_SEQ_CST);
	} else if (prio == NULL) {
		__atomic_sub_fetch(&gate_g.prio_bound, 1, __ATOMIC_SEQ_CST);
	}
}

void gate_prio_interactive(int on)
{
	if (A_XCHG(&gate_g.prio_self, on != 0) != (on != 0))
		log_debug("this program's submissions %s",
			  on ? "hold batch programs' new work back while they "
			       "run (interactive class)" :
			       "are batch work");
}

/* The share in force on g (0: none, or unbound). */
uint32_t gate_prio_pct(struct gate_gpu *g)
{
	/* Acquire: pairs with the bind's store, after the client mapped the
	 * page. */
	const uint32_t *p = __atomic_load_n(&g->prio_pct, __ATOMIC_ACQUIRE);
	uint32_t v;

	if (p == NULL)
		return 0;
	v = __atomic_load_n(p, __ATOMIC_RELAXED);
	return v > 100 ? 100 : v;
}

/* ---- the batch side ---- */

/* A deadline that says interactive work is in flight at `now`. */
static int busy_at(uint64_t busy, uint64_t now)
{
	return busy > now && busy - now <= PRIO_HOLD_NS;
}

/* The bucket as of now: pct % of the time since the last look, at most
 * pct % of PRIO_WINDOW_NS saved. Called with g->prio_mu held. */
static uint64_t bucket_fill(struct gate_gpu *g, uint32_t pct, uint64_t now)
{
	uint64_t cap = PRIO_WINDOW_NS / 100u * pct;

	if (g->prio_last != 0 && now > g->prio_last)
		g->prio_tokens += (now - g->prio_last) / 100u * pct;
	if (g->prio_last == 0 || g->prio_tokens > cap)
		g->prio_tokens = cap;
	g->prio_last = now;
	return g->prio_tokens;
}

/* The held time of this gate's threads, counted once however many of
 * them wait at the same time. */
static uint64_t hold_begin(struct gate_gpu *g, uint32_t pct, uint64_t now)
{
	uint64_t left;

	pthread_mutex_lock(&g->prio_mu);
	left = bucket_fill(g, pct, now);
	if (left > 0 && g->prio_holding++ == 0)
		g->prio_since = now;
	if (left > 0)
		g->prio_holds++;
	pthread_mutex_unlock(&g->prio_mu);
	return left;
}

static void hold_end(struct gate_gpu *g, uint64_t now)
{
	pthread_mutex_lock(&g->prio_mu);
	if (--g->prio_holding == 0) {
		uint64_t used = now > g->prio_since ? now - g->prio_since : 0;

		g->prio_tokens = used < g->prio_tokens ? g->prio_tokens - used : 0;
		g->prio_held_ns += used;
		g->prio_last = now > g->prio_last ? now : g->prio_last;
	}
	pthread_mutex_unlock(&g->prio_mu);
}

void gate_prio_hold(struct gate_gpu *g, int dev, int sh)
{
	struct vs_lock_word *w = A_LOAD(&g->prio_w);
	uint32_t pct = gate_prio_pct(g), seq;
	uint64_t now, busy, left, start, since;
	int old;

	if (w == NULL || pct == 0 || A_LOAD_RLX(&gate_g.prio_self))
		return;
	busy = A_LOAD(&w->busy);
	if (busy == 0)
		return;
	now = prio_now();
	if (!busy_at(busy, now))
		return;
	__atomic_store_n(&g->prio_seen_ns, now, __ATOMIC_RELAXED);
	left = hold_begin(g, pct, now);
	if (left == 0) {
		log_once(LOG_LVL_DEBUG, "GPU %d: interactive work took its share "
			 "(%u%%) of this program's time: it runs beside it for "
			 "now", dev, pct);
		return;
	}
	start = now;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	since = gate_work_wait_begin(&g->shard[sh]);
	for (;;) {
		uint64_t nap;

		seq = A_LOAD(&w->seq);
		busy = A_LOAD(&w->busy);
		if (!busy_at(busy, now) || now - start >= left ||
		    A_LOAD_RLX(&gate_g.shutting) || A_LOAD_RLX(&gate_g.captures))
			break;
		nap = busy - now;
		if (nap > left - (now - start))
			nap = left - (now - start);
		if (nap > PRIO_NAP_NS)
			nap = PRIO_NAP_NS;
		if (now - start < PRIO_HOLD_SPIN_NS && prio_spins() &&
		    gate_prio_test == NULL) {
			sched_yield();
			now = prio_now();
			continue;
		}
		__atomic_add_fetch(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		/* Looked at again after the count: a clear that bumped seq
		 * before it saw this sleeper is not slept through. */
		if (A_LOAD(&w->seq) == seq && A_LOAD(&w->busy) != 0)
			futex_wait(&w->seq, seq, nap);
		__atomic_sub_fetch(&w->sleepers, 1, __ATOMIC_SEQ_CST);
		now = prio_now();
	}
	gate_work_wait_end(&g->shard[sh], since);
	pthread_setcancelstate(old, NULL);
	hold_end(g, now);
}

/* More than one interactive program in force on g (the slot's count):
 * the word's `next` is only the last writer's prediction. */
static int prio_many(struct gate_gpu *g)
{
	const uint32_t *n = A_LOAD(&g->prio_n);

	return n != NULL && A_LOAD_RLX(n) > 1;
}

uint64_t gate_prio_pace_ns(struct gate_gpu *g)
{
	struct vs_lock_word *w = A_LOAD(&g->prio_w);
	uint64_t tight = gate_g.conf.prio_pace_ns, far = gate_g.conf.pace_ns;
	uint64_t next, now;

	if (w == NULL || far <= tight || prio_many(g))
		return tight;
	next = A_LOAD_RLX(&w->next);
	if (next == 0)
		return tight;
	now = prio_now();
	/* Within a request (its work seen moments ago), or near the next:
	 * the short bound. */
	if (now - A_LOAD_RLX(&g->prio_seen_ns) < PRIO_REQ_GAP_NS)
		return tight;
	if (next > now + far + PRIO_FAR_MARGIN_NS && next - now <= PRIO_REQ_MAX_NS)
		return far;
	return tight;
}

int gate_prio_active(struct gate_gpu *g)
{
	uint64_t seen = A_LOAD_RLX(&g->prio_seen_ns);

	if (seen == 0 || gate_prio_pct(g) == 0 || A_LOAD_RLX(&gate_g.prio_self))
		return 0;
	return prio_now() - seen < PRIO_ACTIVE_NS;
}

uint64_t gate_prio_held_ns(int dev)
{
	struct gate_gpu *g;
	uint64_t v;

	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return 0;
	g = &gate_g.gpu[dev];
	pthread_mutex_lock(&g->prio_mu);
	v = g->prio_held_ns;
	pthread_mutex_unlock(&g->prio_mu);
	return v;
}

/* ---- the interactive side ---- */

static void *watch_main(void *arg);

static void watch_start(void)
{
	sigset_t all, old;
	pthread_t t;

	if (gate_prio_test != NULL || A_XCHG(&pw.started, 1))
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, watch_main, NULL) != 0) {
		A_STORE(&pw.started, 0);
		log_once(LOG_LVL_WARN, "cannot start the thread that ends "
			 "this program's priority over batch work: batch "
			 "programs wait for its deadlines instead");
	} else {
		pthread_detach(t);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A request of the interactive program begins at t: the interval
 * since the last one's start teaches its rhythm, and the word says when
 * the next is due, or 0 while there is no rhythm. */
static void request_begins(struct gate_gpu *g, struct vs_lock_word *w,
			   uint64_t t)
{
	uint64_t iv, next = 0;
	int64_t e;

	pthread_mutex_lock(&g->prio_mu);
	if (g->prio_req_at != 0 && t > g->prio_req_at) {
		iv = t - g->prio_req_at;
		if (iv > PRIO_REQ_MAX_NS) {
			g->prio_req_n = 0;
		} else if (g->prio_req_n == 0) {
			g->prio_req_iv = iv;
			g->prio_req_dev = iv / 8;
			g->prio_req_n = 1;
		} else {
			/* Both under PRIO_REQ_MAX_NS: no overflow. The mean
			 * moves by an eighth of the error, the deviation by a
			 * quarter of its own. */
			e = (int64_t)iv - (int64_t)g->prio_req_iv;
			g->prio_req_iv = (uint64_t)((int64_t)g->prio_req_iv + e / 8);
			e = (e < 0 ? -e : e) - (int64_t)g->prio_req_dev;
			g->prio_req_dev = (uint64_t)((int64_t)g->prio_req_dev + e / 4);
			if (g->prio_req_n < PRIO_REQ_SEEN)
				g->prio_req_n++;
		}
	}
	g->prio_req_at = t;
	if (g->prio_req_n >= PRIO_REQ_SEEN &&
	    g->prio_req_dev * 8 <= g->prio_req_iv)
		next = t + g->prio_req_iv - 4 * g->prio_req_dev;
	pthread_mutex_unlock(&g->prio_mu);
	if (A_LOAD_RLX(&w->next) != next)
		A_STORE(&w->next, next);
}

/* Before an interactive submission to g: batch gates hold their new
 * work back from now on. */
void gate_prio_before(struct gate_gpu *g, void *stream)
{
	struct vs_lock_word *w = A_LOAD(&g->prio_w);
	uint64_t d, now, after;

	prio_stream = stream;
	prio_counted = 0;
	if (w == NULL)
		return;
	__atomic_add_fetch(&g->prio_subm, 1, __ATOMIC_SEQ_CST);
	prio_counted = 1;
	now = prio_now();
	d = now + PRIO_HOLD_NS;
	A_STORE(&g->prio_mine, d);
	A_STORE(&w->busy, d);
	after = A_LOAD_RLX(&g->prio_after_ns);
	if (after == 0 || (now > after && now - after >= PRIO_REQ_GAP_NS))
		request_begins(g, w, now);
	if (!A_LOAD_RLX(&g->prio_watched)) {
		pthread_mutex_lock(&pw.mu);
		if (!g->prio_watched) {
			A_STORE(&g->prio_watched, 1);
			pw.active++;
			pthread_cond_signal(&pw.cv);
		}
		pthread_mutex_unlock(&pw.mu);
		watch_start();
	}
}

/* The mark entry of (ctx, stream) in g: a free one, else the least
 * recently used. Called with g->prio_mu held. */
static struct gate_prio_mark *mark_for(struct gate_gpu *g, void *ctx,
				       void *stream)
{
	struct gate_prio_mark *e, *old = &g->prio_marks[0];

	for (int i = 0; i < GATE_PRIO_MARKS; i++) {
		e = &g->prio_marks[i];
		if (e->mark != NULL && e->ctx == ctx && e->stream == stream)
			return e;
		if (e->rec < old->rec || (old->mark != NULL && e->mark == NULL))
			old = e;
	}
	/* A mark is an event of one context: another context's stream
	 * needs one of its own. */
	if (old->mark != NULL && old->ctx != ctx) {
		gate_g.ops->mark_free(old->mark);
		old->mark = NULL;
	}
	if (old->mark == NULL)
		old->mark = gate_g.ops->mark_new();
	old->ctx = ctx;
	old->pending = 0;
	old->stream = stream;
	return old;
}

/* After the interactive submission: a mark behind it on its stream. */
void gate_prio_after(struct gate_gpu *g)
{
	const struct gate_cuda_ops *ops = gate_g.ops;
	void *ctx;
	struct gate_prio_mark *e;

	if (!prio_counted)
		return;
	prio_counted = 0;
	if (A_LOAD(&g->prio_w) != NULL && !A_LOAD_RLX(&gate_g.captures) &&
	    ops->mark_new != NULL) {
		ctx = ops->current_context != NULL ? ops->current_context() : NULL;
		pthread_mutex_lock(&g->prio_mu);
		e = mark_for(g, ctx, prio_stream);
		if (e->mark != NULL && ops->mark_record(e->mark, prio_stream) == 0) {
			e->rec = ++g->prio_recs;
			e->pending = 1;
		}
		pthread_mutex_unlock(&g->prio_mu);
	}
	__atomic_store_n(&g->prio_after_ns, prio_now(), __ATOMIC_RELAXED);
	__atomic_sub_fetch(&g->prio_subm, 1, __ATOMIC_SEQ_CST);
}

/* One look at g's marks: 1 while work is still in flight there. */
static int watch_gpu(struct gate_gpu *g, uint64_t now)
{
	const struct gate_cuda_ops *ops = gate_g.ops;
	struct vs_lock_word *w = A_LOAD(&g->prio_w);
	uint64_t rec[GATE_PRIO_MARKS], mine;
	int left = 0, st;

	pthread_mutex_lock(&g->prio_mu);
	for (int i = 0; i < GATE_PRIO_MARKS; i++)
		rec[i] = g->prio_marks[i].pending ? g->prio_marks[i].rec : 0;
	pthread_mutex_unlock(&g->prio_mu);
	for (int i = 0; i < GATE_PRIO_MARKS; i++) {
		if (rec[i] == 0)
			continue;
		/* A capture began meanwhile: a query could invalidate it;
		 * its work is in flight as far as this look can tell. */
		st = A_LOAD_RLX(&gate_g.captures) ? 0 :
		     ops->mark_state(g->prio_marks[i].mark);
		pthread_mutex_lock(&g->prio_mu);
		if (st != 0 && g->prio_marks[i].rec == rec[i])
			g->prio_marks[i].pending = 0;
		left |= g->prio_marks[i].pending;
		pthread_mutex_unlock(&g->prio_mu);
	}
	mine = A_LOAD(&g->prio_mine);
	if (left || A_LOAD(&g->prio_subm) > 0) {
		uint64_t d = now + PRIO_HOLD_NS, cur;

		/* Renewed as a maximum: a later deadline of another
		 * interactive program stays. */
		if (w != NULL && mine < now + PRIO_HOLD_NS / 2) {
			cur = A_LOAD(&w->busy);
			while (cur < d &&
			       !__atomic_compare_exchange_n(&w->busy, &cur, d, 0,
							    __ATOMIC_SEQ_CST,
							    __ATOMIC_SEQ_CST))
				;
			A_STORE(&g->prio_mine, d);
		}
		return 1;
	}
	if (w != NULL) {
		/* Only our own deadline: another interactive program's
		 * stays until it clears it. */
		__atomic_compare_exchange_n(&w->busy, &mine, 0, 0,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&w->seq, 1, __ATOMIC_SEQ_CST);
		if (A_LOAD(&w->sleepers) != 0)
			futex_wake(&w->seq);
	}
	return 0;
}

int gate_prio_poll(void)
{
	uint64_t now = prio_now();
	int busy = 0;

	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		struct gate_gpu *g = &gate_g.gpu[i];

		if (!A_LOAD(&g->prio_watched))
			continue;
		if (watch_gpu(g, now)) {
			busy = 1;
			continue;
		}
		pthread_mutex_lock(&pw.mu);
		/* A submission that began after the look keeps it watched. */
		if (A_LOAD(&g->prio_subm) == 0) {
			A_STORE(&g->prio_watched, 0);
			pw.active--;
		} else {
			busy = 1;
		}
		pthread_mutex_unlock(&pw.mu);
	}
	return busy;
}

static void *watch_main(void *arg)
{
	struct timespec ts = { 0, (long)PRIO_POLL_NS };
	uint64_t since = 0;
	int looks = 0;

	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1000ul, 0, 0, 0);
	for (;;) {
		pthread_mutex_lock(&pw.mu);
		while (pw.active == 0 && !A_LOAD_RLX(&gate_g.shutting))
			pthread_cond_wait(&pw.cv, &pw.mu);
		pthread_mutex_unlock(&pw.mu);
		if (A_LOAD_RLX(&gate_g.shutting))
			break;
		if (!gate_prio_poll()) {
			since = 0;
			looks = 0;
			continue;
		}
		if (since == 0)
			since = gate_now_ns();
		if (prio_spins() ? gate_now_ns() - since < PRIO_SPIN_NS :
				   looks++ < PRIO_SPINS)
			sched_yield();
		else
			nanosleep(&ts, NULL);
	}
	return NULL;
}

void gate_prio_atfork_child(void)
{
	/* The watcher is the parent's, and so are the marks (events of
	 * the parent's contexts): the child starts from nothing, unbound
	 * until its own connection maps its own pages. */
	pthread_mutex_init(&pw.mu, NULL);
	pthread_cond_init(&pw.cv, NULL);
	A_STORE(&pw.started, 0);
	pw.active = 0;
	A_STORE(&gate_g.prio_bound, 0);
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		struct gate_gpu *g = &gate_g.gpu[i];

		A_STORE(&g->prio_pct, NULL);
		A_STORE(&g->prio_n, NULL);
		A_STORE(&g->prio_w, NULL);
		pthread_mutex_init(&g->prio_mu, NULL);
		memset(g->prio_marks, 0, sizeof(g->prio_marks));
		g->prio_holding = 0;
		g->prio_holds = 0;
		g->prio_held_ns = 0;
		g->prio_after_ns = g->prio_req_at = 0;
		g->prio_req_iv = g->prio_req_dev = 0;
		g->prio_req_n = 0;
		A_STORE(&g->prio_watched, 0);
		A_STORE(&g->prio_subm, 0);
	}
}

void gate_prio_shutdown(void)
{
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		struct gate_gpu *g = &gate_g.gpu[i];
		uint64_t n, ns;

		pthread_mutex_lock(&g->prio_mu);
		n = g->prio_holds;
		ns = g->prio_held_ns;
		pthread_mutex_unlock(&g->prio_mu);
		if (n != 0)
			log_debug("GPU %d: interactive work held this program's "
				  "submissions back %llu times, %.1f ms in all",
				  i, (unsigned long long)n, (double)ns / 1e6);
	}
	pthread_mutex_lock(&pw.mu);
	pthread_cond_broadcast(&pw.cv);
	pthread_mutex_unlock(&pw.mu);
}
