/*
 * The GPU lock gate: every submission of GPU work passes gate_enter and
 * gate_exit. While this process holds a GPU's lock the gate is open and a
 * submission costs two atomic operations on the gate's in-flight count
 * and, now and then, a store of a coarse timestamp: no mutex and no system
 * call. Otherwise the caller takes the slow path and blocks until the
 * gate's controller (the scheduler client) opens it. The gate keeps the
 * lock state only; it tells the controller that a thread waits through
 * the events table given to gate_init (gate_ctl.h), and is opened and
 * taken back through gate_grant and gate_take (gate_ctl.c).
 */
#include <string.h>
#include <time.h>

#include "atomics.h"
#include "gate_int.h"
#include "log.h"

/* The device of the calling thread's current context, cached per thread
 * and keyed by the context, so a submission asks the driver at most for
 * its (cheap) current context. */
struct dev_cache {
	void *ctx;
	int   dev;
	int   valid;
	int   shard;    /* this thread's in-flight shard, + 1 (0: none yet) */
	int   cancel_old; /* cancel state to restore at a slow entry's exit */
	int   sync_tok; /* the token of its wait in progress, + 1 (0: none) */
	int   sync_keyed; /* sync_key set for this thread */
};

/* A token from the slow path: gate_exit restores the cancel state. */
#define GATE_TOKEN_SLOW (1 << 20)
/* A token of a paced submission: gate_exit places a mark (gate_pace.c). */
#define GATE_TOKEN_PACE (1 << 21)
/* A token of an interactive submission under priority: gate_exit marks
 * its stream for the watcher (gate_prio.c). */
#define GATE_TOKEN_PRIO (1 << 22)
#define GATE_TOKEN_FLAGS (GATE_TOKEN_SLOW | GATE_TOKEN_PACE | GATE_TOKEN_PRIO)
static int next_shard;
static __thread struct dev_cache tcache
	__attribute__((tls_model("initial-exec")));

__attribute__((noinline))
static int new_shard(void)
{
	tcache.shard = 1 + (int)(__atomic_fetch_add(&next_shard, 1,
				 __ATOMIC_RELAXED) % GATE_SHARDS);
	return tcache.shard - 1;
}

static inline int my_shard(void)
{
	if (__builtin_expect(tcache.shard == 0, 0))
		return new_shard();
	return tcache.shard - 1;
}

void gate_init(const struct gate_cuda_ops *ops, const struct gate_events *ev)
{
	gate_g.ops = ops;
	gate_g.ev = ev;
	gate_conf_read(&gate_g.conf);
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		gate_gpu_init(&gate_g.gpu[i]);
	A_STORE(&gate_g.captures, 0);
	A_STORE(&gate_g.failopen, 0);
	A_STORE(&gate_g.shutting, 0);
	A_STORE(&gate_g.enabled, !gate_g.conf.disabled);
	if (gate_g.conf.disabled)
		log_info("VSHARE_DISABLE is set: GPU work is not gated");
}

static int current_dev(void)
{
	const struct gate_cuda_ops *ops = gate_g.ops;
	void *ctx;

	if (ops->current_context == NULL)
		return ops->current_device();
	ctx = ops->current_context();
	if (ctx == NULL)
		return -1;
	if (!tcache.valid || tcache.ctx != ctx) {
		tcache.dev = ops->current_device();
		tcache.ctx = ctx;
		tcache.valid = 1;
	}
	return tcache.dev;
}

/* The first entrant of a GPU learns its UUID and memory, for the
 * controller (the client's ATTACH, gate_gpu_info). Called with g->mu
 * held. */
static int gpu_learn(struct gate_gpu *g, int dev)
{
	if (g->known)
		return 0;
	if (gate_g.ops->device_info(dev, g->uuid, &g->total_mem) != 0) {
		log_once(LOG_LVL_WARN, "cannot read UUID of GPU %d: its work is "
			 "not gated", dev);
		return -1;
	}
	g->known = 1;
	return 0;
}

/* With exactly one device every submission goes to device 0 and the fast
 * path need not ask for the thread's context (gate.h, device_count). */
static void learn_count(void)
{
	const struct gate_cuda_ops *ops = gate_g.ops;
	int n;

	if (ops->device_count == NULL || A_LOAD_RLX(&gate_g.count_known))
		return;
	n = ops->device_count();
	if (n <= 0)
		return;
	A_STORE(&gate_g.one_dev, n == 1);
	A_STORE(&gate_g.count_known, 1);
	log_debug("this process sees %d CUDA device%s", n,
		  n == 1 ? ": submissions go to its gate without a context "
			   "lookup" : "s");
}

int gate_prepare(int dev)
{
	struct gate_gpu *g;
	int rc;

	if (!A_LOAD_RLX(&gate_g.enabled) || dev < 0 || dev >= GATE_MAX_GPUS)
		return -1;
	g = &gate_g.gpu[dev];
	pthread_mutex_lock(&g->mu);
	rc = gpu_learn(g, dev);
	pthread_mutex_unlock(&g->mu);
	return rc;
}

__attribute__((noinline, cold))
static int enter_slow_wait(struct gate_gpu *g, int dev, int sh)
{
	pthread_mutex_lock(&g->mu);
	if (gpu_learn(g, dev) != 0) {
		pthread_mutex_unlock(&g->mu);
		return GATE_TOKEN_NONE;
	}
	learn_count();
	/* The fast path of a one-device process no longer asks for the
	 * context, so the context that this thread submits from is noted
	 * here: a release must synchronize it (gate.h, track_context). */
	if (A_LOAD_RLX(&gate_g.one_dev) && gate_g.ops->track_context != NULL)
		gate_g.ops->track_context();
	gate_wait_open(g, dev);
	/* The state only changes under mu, so this entry is safe from a
	 * releaser: it cannot close the gate before it sees this count. */
	__atomic_fetch_add(&g->shard[sh].inflight, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&g->mu);
	return dev * GATE_SHARDS + sh;
}

/*
 * The slow path runs with cancellation disabled: its condition wait (and
 * the wake-up the controller's `wanted` sends) is a cancellation point, and a thread
 * cancelled there would leave the gate's mutex locked and its waiter count
 * up, stopping every other thread and the client thread for good. It stays
 * disabled through the real call, until gate_exit (the token says so): a
 * cancel that came during the wait would otherwise act inside the driver
 * call, and the call's in-flight count would never come down, so no
 * release could finish.
 */
__attribute__((noinline, cold))
static int enter_slow(struct gate_gpu *g, int dev, int sh)
{
	int old, tok;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	tok = enter_slow_wait(g, dev, sh);
	if (tok < 0) {
		pthread_setcancelstate(old, NULL);
		return tok;
	}
	tcache.cancel_old = old;
	return tok | GATE_TOKEN_SLOW;
}

__attribute__((noinline, cold))
static void exit_slow(void)
{
	pthread_setcancelstate(tcache.cancel_old, NULL);
}

/* The releaser waits on cv_drain for in-flight 0; an exit from a gate that
 * is not open wakes it. Taking mu orders the broadcast after the
 * releaser's check, so the wake-up cannot be lost. */
static void leave(struct gate_gpu *g, int sh)
{
	__atomic_sub_fetch(&g->shard[sh].inflight, 1, __ATOMIC_SEQ_CST);
	if (__builtin_expect(A_LOAD(&g->state) != GATE_OPEN, 0)) {
		pthread_mutex_lock(&g->mu);
		pthread_cond_broadcast(&g->cv_drain);
		pthread_mutex_unlock(&g->mu);
	}
}

/* A gate that was not open: back out of the count, wait in the slow path. */
__attribute__((noinline))
static int enter_closed(struct gate_gpu *g, int dev, int sh)
{
	leave(g, sh);
	return enter_slow(g, dev, sh);
}

/* Increment, then check: with the releaser's store-then-check (both
 * sequentially consistent) one of the two always sees the other, so no
 * entry slips past a gate that is closing. Nonzero when the gate was
 * open; otherwise the caller still counts in flight. */
static inline int enter_open(struct gate_gpu *g, int sh)
{
	__atomic_fetch_add(&g->shard[sh].inflight, 1, __ATOMIC_SEQ_CST);
	return A_LOAD(&g->state) == GATE_OPEN;
}

static inline int enter_dev(int dev)
{
	struct gate_gpu *g = &gate_g.gpu[dev];
	int sh = my_shard();

	if (__builtin_expect(enter_open(g, sh), 1))
		return dev * GATE_SHARDS + sh;
	return enter_closed(g, dev, sh);
}

/* A submission to a paced gate: the thread waits first, outside the
 * bracket, while it runs too far ahead of the GPU (gate_pace.c). */
__attribute__((noinline))
static int enter_paced(int dev, void *stream, uint64_t pace_ns)
{
	int paced = gate_pace_before(dev, stream, pace_ns, my_shard());
	int tok = enter_dev(dev);

	return tok >= 0 && paced ? tok | GATE_TOKEN_PACE : tok;
}

/* A submission to a GPU where priority is in force (gate_prio.c): an
 * interactive program's says so before it goes in; a batch program's
 * waits, outside the bracket, while interactive work is in flight, and
 * keeps its queue short while such work comes and goes. */
__attribute__((noinline))
static int enter_prio(struct gate_gpu *g, int dev, void *stream)
{
	int tok;

	if (A_LOAD_RLX(&gate_g.prio_self)) {
		gate_prio_before(g, stream);
		tok = enter_dev(dev);
		if (tok < 0) {
			gate_prio_after(g);
			return tok;
		}
		return tok | GATE_TOKEN_PRIO;
	}
	gate_prio_hold(g, dev, my_shard());
	if (gate_g.conf.prio_pace_ns != 0 && gate_prio_active(g))
		return enter_paced(dev, stream, gate_prio_pace_ns(g));
	if (A_LOAD_RLX(&g->pace))
		return enter_paced(dev, stream, gate_g.conf.pace_ns);
	return enter_dev(dev);
}

/* Anything but a one-device process with no capture in progress and no
 * gate paced. */
__attribute__((noinline))
static int enter_general(void *stream)
{
	int dev;

	/* Work recorded into a graph is not submitted: it passes ungated. */
	if (A_LOAD_RLX(&gate_g.captures) > 0 &&
	    gate_g.ops->stream_capturing(stream))
		return GATE_TOKEN_NONE;
	if (A_LOAD_RLX(&gate_g.one_dev))
		dev = 0;
	else
		dev = current_dev();
	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return GATE_TOKEN_NONE;
	if (A_LOAD_RLX(&gate_g.prio_bound) > 0 &&
	    gate_prio_pct(&gate_g.gpu[dev]) != 0)
		return enter_prio(&gate_g.gpu[dev], dev, stream);
	if (A_LOAD_RLX(&gate_g.gpu[dev].pace))
		return enter_paced(dev, stream, gate_g.conf.pace_ns);
	return enter_dev(dev);
}

/* The fast path is kept small: a one-device process with no capture in
 * progress, no gate paced and no priority in force on its GPU asks
 * nothing of the driver and touches one cache line of its shard and the
 * gate's state, and one (read-mostly) of the scheduler's state page. */
int gate_enter(void *stream)
{
	if (!A_LOAD_RLX(&gate_g.enabled))
		return GATE_TOKEN_NONE;
	if (__builtin_expect(A_LOAD_RLX(&gate_g.captures) > 0 ||
			     !A_LOAD_RLX(&gate_g.one_dev) ||
			     A_LOAD_RLX(&gate_g.pacing) > 0, 0))
		return enter_general(stream);
	if (__builtin_expect(A_LOAD_RLX(&gate_g.prio_bound) > 0 &&
			     gate_prio_pct(&gate_g.gpu[0]) != 0, 0))
		return enter_prio(&gate_g.gpu[0], 0, stream);
	return enter_dev(0);
}

/* A pause since the shard's previous exit, shorter than a burst's end:
 * the shard keeps the largest recent one, decaying by an eighth at each
 * shorter one, so that it follows the program's current rhythm. Only on
 * a tick of the coarse clock: a burst's back-to-back calls cost nothing
 * more. */
static void learn_gap(struct gate_shard *s, uint64_t prev, uint64_t now)
{
	uint64_t gap = now - prev;
	uint32_t g;

	if (prev == 0 || now < prev || gap >= GATE_GAP_LEARN_MS)
		return;
	g = A_LOAD_RLX(&s->gap_ms);
	g = gap >= g ? (uint32_t)gap : g - (g + 7) / 8;
	__atomic_store_n(&s->gap_ms, g, __ATOMIC_RELAXED);
	if (A_LOAD_RLX(&s->gap_n) < GATE_GAP_SAMPLES)
		__atomic_store_n(&s->gap_n, A_LOAD_RLX(&s->gap_n) + 1,
				 __ATOMIC_RELAXED);
}

void gate_exit(int token)
{
	struct gate_shard *s;
	uint64_t now, prev;
	int slow = token >= 0 && (token & GATE_TOKEN_SLOW);
	int paced = token >= 0 && (token & GATE_TOKEN_PACE);
	int prio = token >= 0 && (token & GATE_TOKEN_PRIO);

	token &= ~GATE_TOKEN_FLAGS;
	if (token < 0 || token >= GATE_MAX_GPUS * GATE_SHARDS)
		return;
	s = &gate_g.gpu[token / GATE_SHARDS].shard[token % GATE_SHARDS];
	/* Store the stamp only when the coarse clock moved. */
	now = gate_clock_ms();
	prev = A_LOAD_RLX(&s->last_ms);
	if (prev != now) {
		__atomic_store_n(&s->last_ms, now, __ATOMIC_RELAXED);
		learn_gap(s, prev, now);
	}
	/* The mark goes behind this call's work, while the lock is held. */
	if (__builtin_expect(paced, 0))
		gate_pace_after();
	if (__builtin_expect(prio, 0))
		gate_prio_after(&gate_g.gpu[token / GATE_SHARDS]);
	leave(&gate_g.gpu[token / GATE_SHARDS], token % GATE_SHARDS);
	if (__builtin_expect(slow, 0))
		exit_slow();
}

int gate_try_enter(int dev)
{
	struct gate_gpu *g;
	int sh;

	if (!A_LOAD_RLX(&gate_g.enabled))
		return GATE_TOKEN_NONE;
	if (dev < 0 || dev >= GATE_MAX_GPUS)
		return GATE_TRY_CLOSED;
	g = &gate_g.gpu[dev];
	sh = my_shard();
	if (enter_open(g, sh))
		return dev * GATE_SHARDS + sh;
	leave(g, sh);
	return GATE_TRY_CLOSED;
}

/* A thread that ends inside a wait (cancelled in the driver's call: a
 * driver's wait may be a cancellation point) is counted out by its
 * key's destructor, as gate_pace.c gives a thread's marks back. */
static pthread_once_t sync_once = PTHREAD_ONCE_INIT;
static pthread_key_t sync_key;

static void sync_thread_end(void *arg)
{
	struct gate_sync w = { tcache.sync_tok - 1, 0 };

	(void)arg;
	if (tcache.sync_tok == 0)
		return;
	w.since = gate_clock_ms();
	gate_sync_end(&w);
}

static void sync_key_init(void)
{
	if (pthread_key_create(&sync_key, sync_thread_end) != 0)
		sync_key = (pthread_key_t)-1;
}

/* The device a wait of the calling thread is for: its current
 * context's, found as a submission finds it; -1 for none. */
static int sync_dev(void)
{
	int dev;

	if (!A_LOAD_RLX(&gate_g.enabled))
		return -1;
	dev = A_LOAD_RLX(&gate_g.one_dev) ? 0 : current_dev();
	return dev >= 0 && dev < GATE_MAX_GPUS ? dev : -1;
}

void gate_sync_begin(struct gate_sync *w)
{
	int dev = sync_dev(), sh;

	w->token = GATE_TOKEN_NONE;
	if (dev < 0)
		return;
	if (__builtin_expect(!tcache.sync_keyed, 0)) {
		pthread_once(&sync_once, sync_key_init);
		if (sync_key != (pthread_key_t)-1)
			pthread_setspecific(sync_key, &tcache);
		tcache.sync_keyed = 1;
	}
	sh = my_shard();
	w->token = dev * GATE_SHARDS + sh;
	w->since = gate_clock_ms();
	tcache.sync_tok = w->token + 1;
	__atomic_fetch_add(&gate_g.gpu[dev].shard[sh].syncs, 1,
			   __ATOMIC_RELAXED);
}

/* A wait that ended within the tick it began in says nothing: its work
 * was done, or nearly; one that lasted had work running up to now. The
 * stamp goes before the count comes down (gate_syncs reads them in the
 * other order). */
void gate_sync_end(const struct gate_sync *w)
{
	struct gate_shard *s;
	uint64_t now;

	if (w->token < 0 || w->token >= GATE_MAX_GPUS * GATE_SHARDS)
		return;
	tcache.sync_tok = 0;
	s = &gate_g.gpu[w->token / GATE_SHARDS].shard[w->token % GATE_SHARDS];
	now = gate_clock_ms();
	if (now != w->since)
		gate_stamp_unfinished(s, now);
	__atomic_fetch_sub(&s->syncs, 1, __ATOMIC_RELEASE);
}

void gate_sync_unfinished(void)
{
	int dev = sync_dev();

	if (dev >= 0)
		gate_stamp_unfinished(&gate_g.gpu[dev].shard[my_shard()],
				 gate_clock_ms());
}

void gate_capture_delta(int delta)
{
	if (__atomic_add_fetch(&gate_g.captures, delta, __ATOMIC_SEQ_CST) <= 0) {
		pthread_mutex_lock(&gate_g.cap_mu);
		pthread_cond_broadcast(&gate_g.cap_cv);
		pthread_mutex_unlock(&gate_g.cap_mu);
	}
}

int gate_capturing(void)
{
	/* Sequentially consistent: the memory layer's frees pair it with
	 * their own count (cu_query.h, cuq_frees_enter). */
	return __atomic_load_n(&gate_g.captures, __ATOMIC_SEQ_CST) > 0;
}

void gate_atfork_child(void)
{
	/* Another thread may have held any of these mutexes at the fork:
	 * re-create them rather than unlock what this thread never locked. */
	for (int i = 0; i < GATE_MAX_GPUS; i++)
		gate_gpu_init(&gate_g.gpu[i]);
	pthread_mutex_init(&gate_g.cap_mu, NULL);
	pthread_cond_init(&gate_g.cap_cv, NULL);
	A_STORE(&gate_g.captures, 0);
	A_STORE(&gate_g.failopen, 0);
	tcache.valid = 0;
	gate_pace_atfork_child();
	gate_prio_atfork_child();
}

void gate_shutdown(void)
{
	if (__atomic_exchange_n(&gate_g.shutting, 1, __ATOMIC_SEQ_CST))
		return;
	/* Whatever still runs during exit runs unshared; nobody stays
	 * blocked on a gate that no controller will open, and a gate_take
	 * waiting for captures or calls in flight gives up. */
	gate_open_all();
	gate_prio_shutdown();
	pthread_mutex_lock(&gate_g.cap_mu);
	pthread_cond_broadcast(&gate_g.cap_cv);
	pthread_mutex_unlock(&gate_g.cap_mu);
}
