/* The client's resynchronisation with a scheduler whose state differs
 * from its own (client_msg.c: on_state, drop_not_held; docs/gate.md):
 * a refused TOOK gives the GPU back without RELEASED and asks again, a
 * refused REQUEST is cleared with RELEASED and asked again, at most once
 * per CLIENT_RESYNC_MS, and a DROP for a GPU not held is answered with
 * RELEASED unless a REQUEST is out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "client_int.h"
#include "gate_int.h"
#include "helpers.h"

#define OTHER_TOKEN (VS_LOCK_TOKEN_BIT | 0x0dd5u)

static void finish(void)
{
	assert_int_equal(LD(&fk.bad_order), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* Poll GPU 0's gate until it is in state st; 0 if it got there. */
static int gate_state_is(int st, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (LD(&gate_g.gpu[0].state) != st) {
		if (now_ms() >= end)
			return -1;
		sleep_ms(2);
	}
	return 0;
}

/* Poll the count of frames of a type until it reaches n; 0 if it did. */
static int count_reaches(uint16_t type, int n, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (fs_count(type) < n) {
		if (now_ms() >= end)
			return -1;
		sleep_ms(2);
	}
	return 0;
}

/* This thread takes GPU 0 through the pages and is inside a call when
 * the scheduler refuses its TOOK (another client's token was in the word
 * when it closed the GPU): the gate closes once the call is out, the
 * device is synchronized, no RELEASED goes out, and the next waiter asks
 * with a REQUEST, though the GPU is open in the pages again. */
void resync_took_refused(void **state)
{
	struct entrant e;
	uint64_t n = next_opening();
	int rel, syncs, tok;

	(void)state;
	page_start();
	rel = fs_count(VS_MSG_RELEASED);
	syncs = LD(&fk.syncs[0]);
	fs_lock_open(0, next_opening());
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	assert_true(LD(fs_lock_word(0)) == fs_mark(0));
	assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 3000), 0);
	__atomic_store_n(fs_lock_word(0), OTHER_TOKEN, __ATOMIC_SEQ_CST);
	assert_true(fs_lock_close(0) == OTHER_TOKEN);
	fs_refuse(0, "took");
	/* The release waits for this thread's call. */
	assert_int_equal(gate_state_is(GATE_DRAINING, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&fk.syncs[0]), syncs);
	bracket_exit(0, tok);
	assert_int_equal(gate_state_is(GATE_CLOSED, 2000), 0);
	assert_int_equal(LD(&fk.syncs[0]), syncs + 1);
	/* Nothing of this process may run until the next grant. */
	__atomic_store_n(&fk.released[0], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_word(0), n, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_state(0), n, __ATOMIC_SEQ_CST);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&e.done), 0);
	assert_true(LD(fs_lock_word(0)) == n);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_count(VS_MSG_RELEASED), rel);
	finish();
}

/* The scheduler refuses a REQUEST (it counts this process as holding
 * the GPU, say through a token another client copied into the words):
 * RELEASED clears that, then the REQUEST goes out again and its grant
 * serves the waiter. */
void resync_request_refused(void **state)
{
	struct entrant e;

	(void)state;
	granted_start(0);
	released_armed(0);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	fs_refuse(0, "request");
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	finish();
}

/* A scheduler that refuses REQUEST after REQUEST cannot make the client
 * loop: from the first resynchronisation on, the next comes no sooner
 * than CLIENT_RESYNC_MS after it (the fake stamps each frame as it
 * reads it, before it refuses it, so the bound holds however late
 * anything runs). The waiter is served by the first REQUEST granted. */
void resync_request_bounded(void **state)
{
	enum { REFUSED = 5 };
	struct entrant e;
	struct fs_msg first, last;
	int req, rel;

	(void)state;
	granted_start(0);
	released_armed(0);
	req = fs_count(VS_MSG_REQUEST);
	rel = fs_count(VS_MSG_RELEASED);
	fs_refuse_requests(REFUSED);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &first, 2000), 0);
	assert_int_equal(count_reaches(VS_MSG_REQUEST, req + REFUSED + 1,
				       5000), 0);
	for (int i = 0; i < REFUSED; i++)
		assert_int_equal(fs_wait(VS_MSG_REQUEST, &last, 100), 0);
	assert_true(last.at_ms - first.at_ms >=
		    (REFUSED - 1) * CLIENT_RESYNC_MS - 20);
	assert_int_equal(fs_count(VS_MSG_RELEASED) - rel, REFUSED);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	sleep_ms(2 * CLIENT_RESYNC_MS);
	assert_int_equal(fs_count(VS_MSG_REQUEST), req + REFUSED + 1);
	finish();
}

/* A DROP for a GPU this process does not hold: the scheduler counts it
 * as a holder, and RELEASED clears that (nobody waits here, so no
 * REQUEST follows). While a REQUEST is out, the DROP is left to the
 * REQUEST's answer: a RELEASED then could release the grant that
 * crosses it. */
void resync_drop_not_held(void **state)
{
	struct entrant e;
	int rel, req;

	(void)state;
	granted_start(0);
	released_armed(0);
	rel = fs_count(VS_MSG_RELEASED);
	req = fs_count(VS_MSG_REQUEST);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	sleep_ms(2 * CLIENT_RESYNC_MS);
	assert_int_equal(fs_count(VS_MSG_RELEASED), rel + 1);
	assert_int_equal(fs_count(VS_MSG_REQUEST), req);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	fs_drop(0, VS_DROP_QUANTUM);
	sleep_ms(2 * CLIENT_RESYNC_MS);
	assert_int_equal(fs_count(VS_MSG_RELEASED), rel + 1);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	finish();
}
