/*
 * What a holder reports of its use (client_use.c): busy while the
 * program waits for its own work in a synchronize, or its queries find
 * that work unfinished, as while it submits; idle after. The waits are
 * the gate's (gate_sync_begin, gate_sync_unfinished), as the hooks of
 * the synchronizes and queries call them; the idle drop does not wait
 * for them, and a thread cancelled inside one is counted out.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "client_int.h"
#include "gate_int.h"
#include "helpers.h"

/* A thread in a synchronize of GPU dev for ms (its work runs that long). */
struct syncer {
	pthread_t thr;
	int dev, ms;
	int inside;     /* atomic: between gate_sync_begin and _end */
	int token;
};

static void *syncer_main(void *arg)
{
	struct syncer *t = arg;
	struct gate_sync w;

	fake_dev = t->dev;
	gate_sync_begin(&w);
	t->token = w.token;
	INC(&t->inside);
	sleep_ms(t->ms);
	DEC(&t->inside);
	gate_sync_end(&w);
	return NULL;
}

static void syncer_start(struct syncer *t, int dev, int ms)
{
	memset(t, 0, sizeof(*t));
	t->dev = dev;
	t->ms = ms;
	assert_int_equal(pthread_create(&t->thr, NULL, syncer_main, t), 0);
	while (LD(&t->inside) == 0)
		sleep_ms(1);
}

/* A wait of 600 ms, then 600 ms of queries that find the work unfinished
 * every 20 ms, then 600 ms of nothing: the first 1200 ms are busy, the
 * rest idle after the gap (100 ms). Without the waits the whole hold but
 * the gap after the grant would be idle. */
void use_counts_waits(void **state)
{
	struct syncer t;
	struct gate_sync w;
	struct fs_msg m;
	uint64_t unf, t0;
	long syncs;

	(void)state;
	setenv("VSHARE_IDLE_MS", "100", 1);
	setenv("VSHARE_IDLE_LEARN", "0", 1);
	granted_start(0);
	/* A thread without a context waits for nothing of a GPU's. */
	fake_dev = -1;
	gate_sync_begin(&w);
	assert_int_equal(w.token, GATE_TOKEN_NONE);
	gate_sync_unfinished();
	gate_sync_end(&w);
	t0 = gate_now_ms();
	syncer_start(&t, 0, 600);
	assert_true(t.token >= 0);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 1);
	assert_int_equal(unf, 0);
	gate_use_activity(1, &syncs, &unf);
	assert_int_equal(syncs, 0);
	pthread_join(t.thr, NULL);
	/* The wait lasted: its end is a time the work was unfinished. */
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	assert_true(unf >= t0 + 600 - gate_clock_step_ms());
	fake_dev = 0;
	for (int i = 0; i < 30; i++) {
		gate_sync_unfinished();
		sleep_ms(20);
	}
	/* The last query came 20 ms before the loop's end. */
	gate_use_activity(0, &syncs, &unf);
	assert_true(unf >= t0 + 1180 - gate_clock_step_ms());
	/* Nothing unfinished on the other GPU. */
	gate_use_activity(1, &syncs, &unf);
	assert_int_equal(unf, 0);
	sleep_ms(600);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_USAGE, &m, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	/* Lower bounds only: the times slept, less the coarse clock's steps
	 * and the idle gap. */
	assert_true(m.u.usage.busy_ms >= 1150);
	assert_true(m.u.usage.idle_ms >= 400);
	unsetenv("VSHARE_IDLE_LEARN");
	fake_shutdown();
	fs_stop();
}

/* The idle drop waits for submissions only, as before: a thread in a
 * synchronize does not hold the GPU back from a waiter (the release's
 * own synchronize waits for the work). A wait that ends within the tick
 * it began in stamps nothing. */
void use_wait_not_idle_drop(void **state)
{
	struct syncer t;
	struct gate_sync w;
	uint64_t unf;
	long syncs;

	(void)state;
	setenv("VSHARE_IDLE_MS", "100", 1);
	setenv("VSHARE_IDLE_LEARN", "0", 1);
	granted_start(0);
	fake_dev = 0;
	gate_sync_begin(&w);
	gate_sync_end(&w);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	/* (Both within one tick unless the clock stepped in between.) */
	if (w.since == gate_clock_ms())
		assert_int_equal(unf, 0);
	syncer_start(&t, 0, 1500);
	fs_drop(0, VS_DROP_IDLE);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 1000), 0);
	assert_int_equal(LD(&t.inside), 1);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	pthread_join(t.thr, NULL);
	unsetenv("VSHARE_IDLE_LEARN");
	fake_shutdown();
	fs_stop();
}

/* A thread cancelled inside a wait (the driver's wait may be a
 * cancellation point; here a sleep) is counted out at its end. */
static void *cancelled_main(void *arg)
{
	struct gate_sync w;

	fake_dev = 0;
	gate_sync_begin(&w);
	INC((int *)arg);
	sleep_ms(60000);
	gate_sync_end(&w);
	return NULL;
}

void use_wait_cancelled(void **state)
{
	pthread_t t;
	void *ret;
	uint64_t unf;
	long syncs;
	int in = 0;

	(void)state;
	granted_start(0);
	assert_int_equal(pthread_create(&t, NULL, cancelled_main, &in), 0);
	while (LD(&in) == 0)
		sleep_ms(1);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 1);
	assert_int_equal(pthread_cancel(t), 0);
	assert_int_equal(pthread_join(t, &ret), 0);
	assert_ptr_equal(ret, PTHREAD_CANCELED);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	fake_shutdown();
	fs_stop();
}

/* With the gate disabled a wait counts nothing. */
void use_wait_disabled(void **state)
{
	struct gate_sync w;
	uint64_t unf;
	long syncs;

	(void)state;
	setenv("VSHARE_DISABLE", "1", 1);
	env_init();
	fake_dev = 0;
	gate_sync_begin(&w);
	assert_int_equal(w.token, GATE_TOKEN_NONE);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	gate_sync_end(&w);
	gate_sync_unfinished();
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(unf, 0);
	fake_shutdown();
}
