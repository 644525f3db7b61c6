/*
 * Pacing (gate_pace.c): a paced holder keeps its queued work near
 * VSHARE_PACE_US. The GPU is the fake one of fake_ops.c: each stream runs
 * the work a test submits to it in order, on a fake clock that moves only
 * when the test says (the host's time between submissions) or the gate
 * pauses in a wait, so every bound below is exact, not timed.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "gate_ctl.h"
#include "gate_int.h"
#include "helpers.h"

#define US 1000ull
#define MS 1000000ull
/* The default VSHARE_PACE_US. */
#define PACE (5 * MS)

/* The work queued on the stream of the last submission when it was
 * made (after any pacing wait): 0 when the GPU had run dry there. */
static uint64_t queued_before;

/* One submission of `work` to fake stream i, then `host` of the host's
 * own time before the next. The work still queued right after it. */
static uint64_t submit(int i, uint64_t work, uint64_t host)
{
	int tok = bracket_enter(0, FAKE_STREAM(i));
	uint64_t q;

	assert_true(tok >= 0);
	queued_before = fake_queued(i);
	fake_work(i, work);
	bracket_exit(0, tok);
	q = fake_queued(i);
	__atomic_add_fetch(&fk.pace_now, host, __ATOMIC_SEQ_CST);
	return q;
}

static void paced_start(void)
{
	granted_start(0);
	fake_pace_on();
	gate_pace(0, 1);
	assert_true(gate_pacing(0));
}

static void paced_stop(void)
{
	fake_shutdown();
	fs_stop();
}

/* A host far ahead of its GPU (20 us a submission, 1 ms of work each):
 * once the group size is learned, the queue stays within the bound plus
 * one submission and never runs dry; unpaced, it grows with every call. */
void pace_bounds_queue(void **state)
{
	uint64_t q, most = 0, least = UINT64_MAX;

	(void)state;
	paced_start();
	for (int i = 0; i < 400; i++) {
		q = submit(0, 1 * MS, 20 * US);
		if (i >= 100) {
			most = q > most ? q : most;
			least = q < least ? q : least;
		}
	}
	assert_true(most <= PACE + 1 * MS);
	assert_true(least >= 1 * MS);
	assert_true(LD(&fk.pauses) > 0);

	gate_pace(0, 0);
	assert_false(gate_pacing(0));
	for (int i = 0; i < 400; i++)
		q = submit(0, 1 * MS, 20 * US);
	assert_true(q >= 300 * MS);
	paced_stop();
}

/* Work of uneven length (0.1 to 1.5 ms a submission) stays bounded too:
 * the groups follow the GPU's time, averaged, not a count. */
void pace_uneven_work(void **state)
{
	uint64_t q, most = 0;

	(void)state;
	paced_start();
	srand(7);
	for (int i = 0; i < 2000; i++) {
		q = submit(0, (uint64_t)(100 + rand() % 1400) * US, 10 * US);
		if (i >= 200)
			most = q > most ? q : most;
	}
	/* Within a few times the bound (the groups follow the average,
	 * which a run of short kernels lowers fast), where unpaced the
	 * queue would hold about 1.5 s. */
	assert_true(most <= 4 * PACE);
	paced_stop();
}

/* A thread's second stream, whose work takes long (a communication
 * library's, waiting for another rank), is not paced: only the stream the
 * thread submits to most is. The main stream's queue stays bounded and
 * never runs dry, which waiting for the slow stream's marks would make
 * it do. */
void pace_busiest_stream_only(void **state)
{
	uint64_t q, most = 0, least = UINT64_MAX;

	(void)state;
	paced_start();
	for (int i = 0; i < 2000; i++) {
		q = submit(0, 200 * US, 10 * US);
		if (i >= 200) {
			most = q > most ? q : most;
			least = queued_before < least ? queued_before : least;
		}
		if (i % 10 == 9)
			submit(1, 5 * MS, 10 * US);
	}
	assert_true(most <= PACE + 1 * MS);
	assert_true(least > 0);
	paced_stop();
}

/* A host slower than its GPU never waits, and places about one mark per
 * PACE/2 of its time. */
void pace_slow_host_never_waits(void **state)
{
	(void)state;
	paced_start();
	for (int i = 0; i < 200; i++)
		assert_true(submit(0, 1 * MS, 3 * MS) <= 1 * MS);
	assert_int_equal(LD(&fk.pauses), 0);
	assert_true(LD(&fk.marks_placed) <= 200);
	assert_true(LD(&fk.marks_made) <= 4);
	paced_stop();
}

/* No marks to be had: the stream is not paced, and mark_new is not asked
 * again at every call. */
void pace_marks_fail(void **state)
{
	(void)state;
	paced_start();
	fk.marks_fail = 1;
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	assert_int_equal(LD(&fk.pauses), 0);
	assert_int_equal(LD(&fk.mark_looks), 0);
	assert_int_equal(LD(&fk.mark_asks), 1);
	paced_stop();
}

/* Queued work that never drains (it waits for something the thread has
 * yet to do): the wait gives up after 50 ms, the stream goes unpaced for
 * a second, then is paced again. */
void pace_wait_gives_up(void **state)
{
	uint64_t t0;
	int pauses;

	(void)state;
	paced_start();
	fk.marks_stuck = 1;
	t0 = fk.pace_now;
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	pauses = LD(&fk.pauses);
	assert_true(pauses > 0);
	assert_true(fk.pace_now - t0 < 100 * MS);
	/* Unpaced meanwhile. */
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	assert_int_equal(LD(&fk.pauses), pauses);
	/* A second later it is paced again. */
	__atomic_add_fetch(&fk.pace_now, 1000 * MS, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	assert_true(LD(&fk.pauses) > pauses);
	paced_stop();
}

/* While a stream capture is active anywhere in the process, pacing asks
 * nothing of the driver (an event query beside a global capture would
 * invalidate it). */
void pace_skips_captures(void **state)
{
	(void)state;
	paced_start();
	gate_capture_delta(1);
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	assert_int_equal(LD(&fk.marks_placed), 0);
	assert_int_equal(LD(&fk.mark_looks), 0);
	gate_capture_delta(-1);
	for (int i = 0; i < 100; i++)
		submit(0, 1 * MS, 10 * US);
	assert_true(LD(&fk.marks_placed) > 0);
	paced_stop();
}

static void *pace_thread(void *arg)
{
	int base = *(int *)arg;

	for (int i = 0; i < 60; i++)
		submit(base + i % 6, 100 * US, 10 * US);
	return NULL;
}

/* A thread pacing more streams than it has slots reuses them, and every
 * mark it made is freed once the thread ends. */
void pace_thread_marks_freed(void **state)
{
	pthread_t t;
	int base = 0;

	(void)state;
	paced_start();
	assert_int_equal(pthread_create(&t, NULL, pace_thread, &base), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_true(LD(&fk.marks_made) > 0);
	assert_int_equal(LD(&fk.marks_freed), LD(&fk.marks_made));
	paced_stop();
}

/* A grant of GPU 0 that waits for the REQUEST of a new entrant. */
static void grant_with(uint32_t flags)
{
	struct entrant e;

	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	fs_grant(0, flags);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
}

/* The scheduler's flag turns pacing on for its grant; a grant without it
 * and every release turn it off. */
void pace_follows_grant_flag(void **state)
{
	(void)state;
	granted_start(0);
	assert_false(gate_pacing(0));
	released_armed(0);
	grant_with(VS_GRANTF_PACE);
	assert_true(gate_pacing(0));
	released_armed(0);
	assert_false(gate_pacing(0));
	grant_with(VS_GRANTF_PACE | VS_GRANTF_OVERSUB);
	assert_true(gate_pacing(0));
	released_armed(0);
	grant_with(0);
	assert_false(gate_pacing(0));
	assert_int_equal(LD(&fk.violations), 0);
	paced_stop();
}

/* VSHARE_PACE_US=0: the flag is heard, nothing is paced. */
void pace_off_by_setting(void **state)
{
	(void)state;
	setenv("VSHARE_PACE_US", "0", 1);
	granted_start(0);
	released_armed(0);
	grant_with(VS_GRANTF_PACE);
	assert_false(gate_pacing(0));
	gate_pace(0, 1);
	assert_false(gate_pacing(0));
	paced_stop();
}

/* A thread waiting in pacing for its queued work is waiting for its
 * work, as in a synchronize: the use report counts it busy while it
 * waits (a long wait beside another program's time slices would
 * otherwise count idle), and not once the wait is over. */
void pace_wait_counts_busy(void **state)
{
	uint64_t unf;
	long syncs;

	(void)state;
	paced_start();
	for (int i = 0; i < 50; i++)
		submit(0, 1 * MS, 20 * US);
	assert_true(LD(&fk.pauses) > 0);
	assert_int_equal(fk.pause_syncs, 1);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	paced_stop();
}
