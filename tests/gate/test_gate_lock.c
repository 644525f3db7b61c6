/* The lock pages (client_lock.c), against the fake scheduler's: a
 * waiting thread takes an open GPU with no REQUEST, says TOOK, and gives
 * it back on a drop; a closed GPU, a word another client took, a client
 * told not to use the pages and a scheduler that dies while the GPU is
 * open each fall back to the REQUEST. test_gate_take.c has the rules of
 * the take (protocol version 5). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "client_int.h"
#include "helpers.h"

/* The process holds GPU 0 through a grant, then gives it back: its
 * client thread has the pages, the GPU is attached and confirmed. */
void page_start(void)
{
	fs_lock_page();
	granted_start(0);
	released_armed(0);
	assert_non_null(LD(&client_c.lock));
}

/* A number for each opening, never used twice. */
uint64_t next_opening(void)
{
	static uint64_t n;

	return VS_LOCK_OPEN_BIT | __atomic_add_fetch(&n, 1, __ATOMIC_SEQ_CST);
}

/* The scheduler opens GPU 0 in its pages: from now on the client may run
 * there (what a grant means to the fake's checks). The opening's number. */
static uint64_t free_word(void)
{
	uint64_t n = next_opening();

	fs_lock_open(0, n);
	return n;
}

/* Many threads start to wait at a free GPU: one takes it for all of
 * them, with no REQUEST; the scheduler hears TOOK; a drop releases it;
 * round after round. */
void lock_take_from_waiter(void **state)
{
	enum { ROUNDS = 10, THREADS = 4 };
	struct entrant e[THREADS];
	int req, took0;

	(void)state;
	page_start();
	req = fs_count(VS_MSG_REQUEST);
	took0 = LD(&client_g.fast_took);
	for (int r = 0; r < ROUNDS; r++) {
		free_word();
		for (int i = 0; i < THREADS; i++)
			entrant_start(&e[i], 0, NULL, 0);
		for (int i = 0; i < THREADS; i++) {
			assert_int_equal(entrant_wait(&e[i], 2000), 0);
			entrant_join(&e[i]);
		}
		assert_true(LD(fs_lock_word(0)) == fs_mark(0));
		assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 2000), 0);
		/* The scheduler closes the GPU and adopts the take. */
		assert_true(fs_lock_close(0) == fs_mark(0));
		released_armed(0);
	}
	assert_int_equal(fs_count(VS_MSG_REQUEST), req);
	assert_int_equal(LD(&client_g.fast_took) - took0, ROUNDS);
	assert_int_equal(LD(&fk.bad_order), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* The wait for the MODE (client_mode_wait_test_ms), 0 for the client's
 * own. A test sets it, so that its outcome does not depend on whether a
 * loaded machine delivers the MODE within the usual 50 ms. */
static unsigned mode_wait_ms;   /* atomic */

unsigned client_mode_wait_test_ms(void)
{
	return __atomic_load_n(&mode_wait_ms, __ATOMIC_SEQ_CST);
}

/* The first submission of a process, before the client has even
 * connected: the client thread takes the free GPU for the waiting thread
 * once it may, with no REQUEST. The MODE wait is a minute here: the take
 * must wait for the MODE however late it comes, not fall back to a
 * REQUEST because the machine is slow. */
void lock_take_for_early_waiter(void **state)
{
	struct entrant e;

	(void)state;
	__atomic_store_n(&mode_wait_ms, 60000u, __ATOMIC_SEQ_CST);
	fs_lock_page();
	free_word();
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
	assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 2000), 0);
	assert_int_equal(fs_count(VS_MSG_REQUEST), 0);
	assert_true(LD(fs_lock_word(0)) == fs_mark(0));
	assert_int_equal(LD(&fk.bad_order), 0);
	fake_shutdown();
	fs_stop();
	__atomic_store_n(&mode_wait_ms, 0u, __ATOMIC_SEQ_CST);
}

/* A hold the client thread took itself, for a waiter that came before
 * the MODE: nothing wakes the thread while the gate is open, yet it looks
 * at its use and tells it every VS_USAGE_REPORT_MS. */
void lock_take_reports_usage(void **state)
{
	struct entrant e;
	struct fs_msg m;

	(void)state;
	__atomic_store_n(&mode_wait_ms, 60000u, __ATOMIC_SEQ_CST);
	fs_lock_page();
	free_word();
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 200);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
	assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_USAGE, &m, VS_USAGE_REPORT_MS + 3000), 0);
	assert_true(m.u.usage.busy_ms >= 200);
	assert_true(m.u.usage.busy_ms + m.u.usage.idle_ms >=
		    VS_USAGE_REPORT_MS - 100);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	assert_int_equal(LD(&fk.bad_order), 0);
	fake_shutdown();
	fs_stop();
	__atomic_store_n(&mode_wait_ms, 0u, __ATOMIC_SEQ_CST);
}

/* An open GPU whose word another client took already: the waiter
 * asks. */
void lock_closed_asks(void **state)
{
	struct entrant e;

	(void)state;
	page_start();
	free_word();
	__atomic_store_n(fs_lock_word(0), VS_LOCK_TOKEN_BIT | 99u,
			 __ATOMIC_SEQ_CST);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&e.done), 0);
	assert_true(LD(fs_lock_word(0)) == (VS_LOCK_TOKEN_BIT | 99u));
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_count(VS_MSG_TOOK), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* VSHARE_LOCK_PAGE=0: an open GPU is left alone, the REQUEST goes out. */
void lock_page_off(void **state)
{
	struct entrant e;
	uint64_t n;

	(void)state;
	setenv("VSHARE_LOCK_PAGE", "0", 1);
	page_start();
	n = free_word();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_true(LD(fs_lock_word(0)) == n);
	assert_int_equal(fs_count(VS_MSG_TOOK), 0);
	fake_shutdown();
	fs_stop();
}

/* The scheduler dies while the GPU is free in the page it shared: the
 * client drops the page with the connection, runs unshared meanwhile,
 * and never writes the old page again; a new scheduler's page is taken
 * through once the GPU is free there. */
void lock_scheduler_dies(void **state)
{
	struct entrant e;
	uint64_t t0, n;
	int tok;

	(void)state;
	page_start();
	fs_stop();
	t0 = now_ms();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_true(now_ms() - t0 < 1000);
	n = next_opening();
	__atomic_store_n(fs_lock_word(0), n, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_state(0), n, __ATOMIC_SEQ_CST);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	sleep_ms(50);
	assert_null(LD(&client_c.lock));
	assert_true(LD(fs_lock_word(0)) == n);
	fs_start();
	/* Back from unshared: the GPU is asked for again. */
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 4000), 0);
	fs_grant(0, 0);
	sleep_ms(50);
	released_armed(0);
	assert_non_null(LD(&client_c.lock));
	free_word();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 2000), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}
