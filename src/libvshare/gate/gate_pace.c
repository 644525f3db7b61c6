/*
 * Pacing (gate_ctl.h, gate_pace): while the scheduler says that an
 * interactive program shares a GPU, this process, a batch holder, keeps
 * the work it has queued there short, so that the interactive program,
 * which is granted once that work has drained, waits milliseconds, not
 * as long as a training loop runs ahead of its GPU.
 *
 * Each thread places marks (events, through the gate's CUDA operations)
 * on the streams it submits to, each behind a group of its submissions,
 * and before a submission it waits while PACE_DEPTH marks are pending on
 * that stream: the queue then holds at most PACE_DEPTH groups. A group
 * is sized from the GPU's own pace: when the thread, waiting, sees two
 * marks passed one after the other, the time between the two is the GPU
 * time of the second one's group, and the next groups take as many
 * submissions as fill pace/PACE_DEPTH of GPU time. A mark also goes
 * behind whatever was submitted in pace/PACE_DEPTH of the thread's own
 * time, so that a slow submitter places few. A program that submits no
 * faster than its GPU works never waits; one that runs ahead is held to
 * about `pace` of queued work, and the GPU does not run dry, since the
 * thread goes on as soon as a mark is passed, with a group still queued
 * behind it. A single kernel longer than that is not cut: the bound is on
 * the queue, not on kernels.
 *
 * The state is the calling thread's (a few streams, a ring of marks
 * each): no lock, no shared cache line. The marks are the thread's own
 * and are freed when the thread ends (or its stream's slot is reused).
 * Nothing here runs while a stream capture is active anywhere in the
 * process: an event query beside a global capture would invalidate it.
 * A wait gives up after PACE_WAIT_MAX_NS (the queued work may itself
 * wait for something this thread has yet to do, a host function or a
 * stream memory operation) and the stream then goes unpaced for a while.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "atomics.h"
#include "gate_int.h"
#include "log.h"

#define PACE_SLOTS 4                      /* streams a thread paces */
#define PACE_MARKS 4                      /* marks per stream (ring) */
#define PACE_DEPTH 2                      /* marks pending before a wait */
#define PACE_GROUP0 16u                   /* submissions per mark at first */
#define PACE_GROUP_MAX 4096u
#define PACE_SPINS 64                     /* looks with a yield between */
#define PACE_SPIN_NS 2000ull              /* what a unit test counts for one */
#define PACE_POLL_NS 100000ull            /* then a sleep between looks */
#define PACE_WAIT_MAX_NS 50000000ull      /* a wait gives up */
#define PACE_OFF_NS 1000000000ull         /* then the stream goes unpaced */

struct pace_slot {
	void    *ctx, *stream;
	int      used;
	int      broken;            /* no mark could be had: never paced */
	uint64_t off_until;         /* unpaced until then (a wait gave up) */
	uint64_t last_use;          /* for reuse of the least recent */
	unsigned hits;              /* the thread's recent calls to it */
	uint64_t subs;              /* submissions paced on this stream */
	uint32_t group;             /* submissions per mark */
	uint64_t per_ns;            /* GPU time per submission, averaged
				     * over groups (0: not learned yet) */
	uint64_t mark_at, mark_seq; /* the last mark placed (0: none) */
	uint64_t pass_at;           /* when the last mark waited for was
				     * seen passing (0: not seen exactly) */
	uint64_t pass_seq;          /* and its submission count */
	uint64_t target_ns;         /* the queued work it is held to */
	unsigned head, n;           /* the ring: oldest at head */
	void    *mark[PACE_MARKS];  /* created once, placed again and again */
	uint64_t seq[PACE_MARKS];   /* `subs` when each was placed */
};

struct pace_thread {
	struct pace_slot slot[PACE_SLOTS];
	struct pace_slot *armed;    /* gate_pace_before's slot, for _after */
	int      keyed;             /* the thread-exit destructor is set */
	unsigned calls;             /* paced calls, for the decay of `hits` */
};

const struct gate_pace_test *gate_pace_test;

static __thread struct pace_thread pt
	__attribute__((tls_model("initial-exec")));
static pthread_key_t pace_key;
static pthread_once_t pace_once = PTHREAD_ONCE_INIT;

/* A stream capture is active in the process (gate_capturing's load). */
static int capturing(void)
{
	return __atomic_load_n(&gate_g.captures, __ATOMIC_SEQ_CST) > 0;
}

/* The clock and the pause of a wait, or what a unit test put there. */
static uint64_t pace_now(void)
{
	const struct gate_pace_test *t = gate_pace_test;

	return t != NULL ? t->now_ns() : gate_now_ns();
}

/* The pause before the next look at a mark: a yield for the first
 * PACE_SPINS looks, since a group is short and a sleep's wake-up costs
 * more than 50 us, the GPU running dry meanwhile; then a sleep. */
static void pace_pause(int looks)
{
	const struct gate_pace_test *t = gate_pace_test;
	struct timespec ts = { 0, (long)PACE_POLL_NS };

	if (t != NULL)
		t->pause_ns(looks < PACE_SPINS ? PACE_SPIN_NS : PACE_POLL_NS);
	else if (looks < PACE_SPINS)
		sched_yield();
	else
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
}

static void slot_clear(struct pace_slot *s)
{
	const struct gate_cuda_ops *ops = gate_g.ops;

	for (int i = 0; i < PACE_MARKS; i++)
		if (s->mark[i] != NULL && !A_LOAD_RLX(&gate_g.shutting))
			ops->mark_free(s->mark[i]);
	memset(s, 0, sizeof(*s));
}

/* The thread ends: its marks go back to the driver. */
static void pace_thread_end(void *arg)
{
	(void)arg;
	for (int i = 0; i < PACE_SLOTS; i++)
		if (pt.slot[i].used)
			slot_clear(&pt.slot[i]);
}

static void pace_key_init(void)
{
	if (pthread_key_create(&pace_key, pace_thread_end) != 0)
		pace_key = (pthread_key_t)-1;
}

/* The slot of (the current context, stream), taking the least recently
 * used one when the thread paces more streams than it has slots. */
static struct pace_slot *slot_for(void *stream, uint64_t now)
{
	void *ctx = gate_g.ops->current_context != NULL ?
		    gate_g.ops->current_context() : NULL;
	struct pace_slot *s, *old = &pt.slot[0];

	for (int i = 0; i < PACE_SLOTS; i++) {
		s = &pt.slot[i];
		if (s->used && s->stream == stream && s->ctx == ctx) {
			s->last_use = now;
			return s;
		}
		if (!s->used || (old->used && s->last_use < old->last_use))
			old = s;
	}
	if (!pt.keyed) {
		pthread_once(&pace_once, pace_key_init);
		if (pace_key != (pthread_key_t)-1)
			pthread_setspecific(pace_key, &pt);
		pt.keyed = 1;
	}
	if (old->used)
		slot_clear(old);
	old->used = 1;
	old->ctx = ctx;
	old->stream = stream;
	old->last_use = now;
	old->group = PACE_GROUP0;
	return old;
}

/* The GPU time of the group behind the head mark, seen passing at t
 * right after the mark before it: the next groups are sized from it. */
static void learn_group(struct pace_slot *s, uint64_t t)
{
	uint64_t subs = s->seq[s->head] - s->pass_seq, target, per;

	if (s->pass_at == 0 || subs == 0 || t <= s->pass_at)
		return;
	target = s->target_ns / PACE_DEPTH;
	per = (t - s->pass_at) / subs;
	/* Averaged, down fast and up slowly: a group sized too small lets
	 * the GPU run dry while the thread wakes up, where one too large
	 * only queues a little more, and a pass can come late for reasons
	 * of its own (a wait for another stream, another rank), never
	 * early; a group of one short kernel still does not size the next
	 * for many long ones. */
	if (s->per_ns != 0)
		per = per < s->per_ns ? (s->per_ns + per) / 2 :
		      (7 * s->per_ns + per) / 8;
	s->per_ns = per > 0 ? per : 1;
	per = s->per_ns;
	s->group = target / per < 1 ? 1 :
		   target / per > PACE_GROUP_MAX ? PACE_GROUP_MAX :
		   (uint32_t)(target / per);
}

/* Wait until the GPU has passed the head mark (polling: a blocking wait
 * on an event has no time limit), and take it off the ring. 0 when it
 * has passed, -1 when the wait gave up. Cancellation is off meanwhile:
 * the program called a function that is no cancellation point. */
static int wait_head(struct pace_slot *s, int dev, int sh)
{
	const struct gate_cuda_ops *ops = gate_g.ops;
	struct gate_shard *sd = &gate_g.gpu[dev].shard[sh];
	uint64_t t0 = pace_now(), t = t0, since = 0;
	int st, old, looks = 0, rc = 0, counted = 0;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	while ((st = ops->mark_state(s->mark[s->head])) == 0) {
		if (!counted) {
			since = gate_work_wait_begin(sd);
			counted = 1;
		}
		t = pace_now();
		if (t - t0 >= PACE_WAIT_MAX_NS || A_LOAD_RLX(&gate_g.shutting)) {
			rc = -1;
			break;
		}
		pace_pause(looks++);
	}
	if (counted)
		gate_work_wait_end(sd, since);
	pthread_setcancelstate(old, NULL);
	if (rc != 0) {
		log_debug("GPU %d: pacing gave up after %.0f ms on a stream "
			  "whose queued work does not drain; it goes unpaced "
			  "for %.0f s", dev, PACE_WAIT_MAX_NS / 1e6,
			  PACE_OFF_NS / 1e9);
		return -1;
	}
	/* Only a pass seen happening has a time to learn from. */
	t = pace_now();
	if (looks > 0)
		learn_group(s, t);
	s->pass_at = looks > 0 ? t : 0;
	s->pass_seq = s->seq[s->head];
	s->head = (s->head + 1) % PACE_MARKS;
	s->n--;
	return 0;
}

/*
 * Whether s is the stream the thread submits to most (recently). Only
 * that one is paced: work on the others (a communication library's
 * stream, a copy stream) mostly waits for it, so their marks pass as late
 * as its queue is long, and holding the thread back for them too would
 * bound the one queue twice and let the GPU run dry (DDP over NCCL lost
 * 15% so). Their work drains behind the busiest stream's anyway.
 */
static int busiest(struct pace_slot *s)
{
	unsigned most = 0;

	s->hits++;
	if (++pt.calls % 1024 == 0)
		for (int i = 0; i < PACE_SLOTS; i++)
			pt.slot[i].hits /= 2;
	for (int i = 0; i < PACE_SLOTS; i++)
		if (pt.slot[i].used && &pt.slot[i] != s && pt.slot[i].hits > most)
			most = pt.slot[i].hits;
	return s->hits >= most;
}

/* Marks pending before a wait: PACE_DEPTH, or one where a single
 * submission's GPU time fills half the bound (long kernels: a group of
 * one each), since two of them queued would be twice the bound. Only
 * under priority's short bound, where that is what an interactive
 * request waits for; the GPU then waits for the thread's wake-up
 * between two such kernels, a small part of each. */
static unsigned depth_of(const struct pace_slot *s)
{
	if (s->target_ns == gate_g.conf.prio_pace_ns &&
	    s->target_ns != gate_g.conf.pace_ns && s->per_ns != 0 &&
	    s->per_ns * PACE_DEPTH >= s->target_ns)
		return 1;
	return PACE_DEPTH;
}

int gate_pace_before(int dev, void *stream, uint64_t pace_ns, int sh)
{
	uint64_t now;
	struct pace_slot *s;

	pt.armed = NULL;
	if (pace_ns == 0 || gate_g.ops->mark_new == NULL || capturing())
		return 0;
	now = pace_now();
	s = slot_for(stream, now);
	/* A new bound (priority's shorter one comes and goes) sizes the
	 * groups again from what the stream's pace taught. */
	if (s->target_ns != pace_ns) {
		s->target_ns = pace_ns;
		if (s->per_ns != 0) {
			uint64_t gr = pace_ns / PACE_DEPTH / s->per_ns;

			s->group = gr < 1 ? 1 : gr > PACE_GROUP_MAX ?
				   PACE_GROUP_MAX : (uint32_t)gr;
		}
	}
	if (!busiest(s) || s->broken || now < s->off_until)
		return 0;
	while (s->n >= depth_of(s)) {
		if (wait_head(s, dev, sh) != 0) {
			s->off_until = pace_now() + PACE_OFF_NS;
			s->n = 0;
			s->pass_at = 0;
			return 0;
		}
	}
	pt.armed = s;
	return 1;
}

/* After a paced submission: a mark behind it once its group is full, or
 * once pace/PACE_DEPTH of the thread's time went by since the last. */
void gate_pace_after(void)
{
	struct pace_slot *s = pt.armed;
	const struct gate_cuda_ops *ops = gate_g.ops;
	uint64_t now;
	unsigned i;

	pt.armed = NULL;
	if (s == NULL || capturing())
		return;
	s->subs++;
	now = pace_now();
	if (s->n == PACE_MARKS ||
	    (s->mark_at != 0 && s->subs - s->mark_seq < s->group &&
	     now < s->mark_at + s->target_ns / PACE_DEPTH))
		return;
	i = (s->head + s->n) % PACE_MARKS;
	if (s->mark[i] == NULL)
		s->mark[i] = ops->mark_new();
	if (s->mark[i] == NULL || ops->mark_record(s->mark[i], s->stream) != 0) {
		/* A stream of another context, a driver without events:
		 * this stream is not paced. */
		s->broken = 1;
		return;
	}
	s->seq[i] = s->subs;
	s->mark_at = now != 0 ? now : 1;
	s->mark_seq = s->subs;
	s->n++;
}

void gate_pace(int dev, int on)
{
	struct gate_gpu *g;

	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return;
	g = &gate_g.gpu[dev];
	on = on && gate_g.conf.pace_ns != 0 && gate_g.ops != NULL &&
	     gate_g.ops->mark_new != NULL;
	if (A_XCHG(&g->pace, on) != on)
		__atomic_add_fetch(&gate_g.pacing, on ? 1 : -1, __ATOMIC_SEQ_CST);
}

int gate_pacing(int dev)
{
	return dev >= 0 && dev < GATE_MAX_GPUS && A_LOAD(&gate_g.gpu[dev].pace);
}

void gate_pace_atfork_child(void)
{
	/* The marks belong to the parent's contexts, which the child
	 * cannot use. */
	memset(&pt, 0, sizeof(pt));
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		A_STORE(&gate_g.gpu[i].pace, 0);
	A_STORE(&gate_g.pacing, 0);
}
