/*
 * A scheduler whose listen queue is full: the client's connect gets
 * EAGAIN, which means a busy scheduler (a burst of programs starting, a
 * flood of connections), not an absent one. GPU work waits as it would
 * for a grant, and the client registers as soon as the scheduler accepts
 * again; only a queue that stays full for CLIENT_BUSY_FOR_MS counts as
 * no scheduler.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "client_int.h"
#include "gate_ctl.h"
#include "helpers.h"

/* Busy for a second: the gate stays closed and nothing connects; once
 * the scheduler accepts again the client, whose tries wait in the listen
 * queue (CLIENT_BUSY_WAIT_MS each), registers at once and waits for its
 * grant. */
void connect_busy_waits(void **state)
{
	struct entrant e;
	uint64_t t0;

	(void)state;
	fs_queue_full();
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(1000);
	assert_int_equal(LD(&e.done), 0);     /* not running unshared */
	assert_int_equal(fs_connections(), 0);
	t0 = now_ms();
	fs_accept_again();
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 2000), 0);
	/* The fillers are accepted at once, and the client right after
	 * them (the usual backoff would be up to 2 s by now). */
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* A queue that stays full: after CLIENT_BUSY_FOR_MS the program runs
 * unshared (the shim never blocks it for ever); once the scheduler
 * accepts again, the client registers and the gate waits for a grant
 * again. */
void connect_busy_gives_up(void **state)
{
	struct entrant e;
	uint64_t t0 = now_ms();

	(void)state;
	fs_queue_full();
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(CLIENT_BUSY_FOR_MS / 2);
	assert_int_equal(LD(&e.done), 0);
	assert_int_equal(entrant_wait(&e, CLIENT_BUSY_FOR_MS + 2000), 0);
	/* The client counts on the coarse clock, whose readings lag by up
	 * to a step each: its 3 s can end that much early on this one. */
	assert_true(now_ms() - t0 + gate_clock_step_ms() >= CLIENT_BUSY_FOR_MS);
	entrant_join(&e);
	assert_int_equal(fs_connections(), 0);
	fs_accept_again();
	/* The usual backoff now: 2 s at most between tries. */
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 4000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(100);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
}
