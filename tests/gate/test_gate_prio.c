/*
 * Priority at kernel granularity (gate_prio.c), on the fake GPU and
 * clock of fake_ops.c: the gate bound to a slot's share and word that
 * the test owns (as the scheduler's pages would be), the futex wait
 * replaced by a sleep that moves the fake clock, so every bound below is
 * exact, not timed. The watcher thread does not run: the test looks at
 * the marks itself (gate_prio_poll).
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

#define MS 1000000ull

static struct vs_lock_slot slot;
static struct vs_lock_word word;
/* The interactive work "elsewhere" ends at this fake time: a sleep
 * that reaches it clears the word, as the interactive watcher would;
 * or, with renew, the work never ends and the deadline moves on. */
static uint64_t clear_at;
static int renew;
static uint64_t slept;
static long hold_syncs;    /* the most waits for work seen in a sleep */

static uint64_t now_ns(void)
{
	return __atomic_load_n(&fk.pace_now, __ATOMIC_SEQ_CST);
}

static void sleep_ns(uint32_t *seq, uint32_t val, uint64_t ns)
{
	uint64_t t = now_ns(), to = t + ns;

	(void)val;
	fake_note_syncs(&hold_syncs);
	if (!renew && clear_at != 0 && clear_at < to)
		to = clear_at;
	__atomic_store_n(&fk.pace_now, to, __ATOMIC_SEQ_CST);
	slept += to - t;
	if (renew) {
		__atomic_store_n(&word.busy, to + 10 * MS, __ATOMIC_SEQ_CST);
	} else if (clear_at != 0 && to >= clear_at) {
		__atomic_store_n(&word.busy, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(seq, 1, __ATOMIC_SEQ_CST);
	}
}

static const struct gate_prio_test fake_prio = { now_ns, sleep_ns };

static void prio_start(uint32_t pct)
{
	granted_start(0);
	fake_pace_on();
	gate_prio_test = &fake_prio;
	__atomic_store_n(&fk.pace_now, 1000 * MS, __ATOMIC_SEQ_CST);
	slot.prio = pct;
	gate_prio_bind(0, &slot, &word);
}

static void prio_stop(void)
{
	gate_prio_bind(0, NULL, NULL);
	fake_shutdown();
	fs_stop();
}

/* One batch submission of `work` to fake stream 0: the fake time it
 * went in at. */
static uint64_t submit(uint64_t work)
{
	int tok = bracket_enter(0, FAKE_STREAM(0));
	uint64_t at = now_ns();

	assert_true(tok >= 0);
	fake_work(0, work);
	bracket_exit(0, tok);
	return at;
}

/* While the word says interactive work is in flight, a batch
 * submission waits, and goes in the moment it is cleared. */
void prio_batch_holds_while_busy(void **state)
{
	uint64_t t0, unf;
	long syncs;

	(void)state;
	prio_start(20);
	t0 = now_ns();
	word.busy = t0 + 5 * MS;
	clear_at = t0 + 3 * MS;
	assert_int_equal(submit(100000), t0 + 3 * MS);
	assert_int_equal(word.busy, 0);
	/* Nothing in flight: straight in. */
	assert_int_equal(submit(100000), t0 + 3 * MS);
	assert_true(gate_prio_held_ns(0) == 3 * MS);
	/* Held, the thread counted as waiting for its work (the use
	 * report's busy), and no longer. */
	assert_int_equal(hold_syncs, 1);
	gate_use_activity(0, &syncs, &unf);
	assert_int_equal(syncs, 0);
	prio_stop();
}

/* A deadline in the past, or further ahead than a renewal could put it
 * (written by anyone), holds nothing; neither does a word while the
 * scheduler's share says no interactive program is attached. */
void prio_untrusted_word(void **state)
{
	uint64_t t0;

	(void)state;
	prio_start(20);
	t0 = now_ns();
	word.busy = t0 - 1;
	assert_int_equal(submit(1000), t0);
	word.busy = t0 + 1000 * MS;
	assert_int_equal(submit(1000), t0);
	word.busy = t0 + 5 * MS;
	slot.prio = 0;
	assert_int_equal(submit(1000), t0);
	assert_int_equal(slept, 0);
	prio_stop();
}

/* A word that never clears (a claimer computing non-stop, or a hostile
 * writer renewing it) takes at most the share of the batch program's
 * time: at most 20% of 10 s plus the 200 ms the bucket starts with;
 * at least most of that (pacing waits take some of the rest). */
void prio_share_bounds_hold(void **state)
{
	uint64_t t0, held;

	(void)state;
	prio_start(20);
	t0 = now_ns();
	renew = 1;
	word.busy = t0 + 10 * MS;
	while (now_ns() - t0 < 10000 * MS) {
		word.busy = now_ns() + 10 * MS;
		submit(100000);
		__atomic_add_fetch(&fk.pace_now, 1 * MS, __ATOMIC_SEQ_CST);
	}
	held = gate_prio_held_ns(0);
	print_message("held %llu ms of %llu\n", (unsigned long long)(held / MS),
		      (unsigned long long)((now_ns() - t0) / MS));
	assert_true(held >= 1500 * MS);
	assert_true(held <= 2200 * MS);
	prio_stop();
}

/* The interactive side: a submission sets the deadline before it goes
 * in, the marks keep it set (and renewed) while the fake GPU runs its
 * work, and the first look after that work has passed clears it and
 * bumps the futex. */
void prio_interactive_sets_and_clears(void **state)
{
	uint64_t t0, d0;
	uint32_t seq0;

	(void)state;
	prio_start(20);
	gate_prio_interactive(1);
	t0 = now_ns();
	seq0 = word.seq;
	submit(30 * MS);
	d0 = word.busy;
	assert_true(d0 > t0 && d0 <= t0 + 20 * MS);
	assert_int_equal(gate_prio_poll(), 1);
	/* 15 ms on: still running, the deadline moved on. */
	__atomic_add_fetch(&fk.pace_now, 15 * MS, __ATOMIC_SEQ_CST);
	assert_int_equal(gate_prio_poll(), 1);
	assert_true(word.busy > d0);
	/* Its own submissions never wait for its own flag. */
	assert_int_equal(submit(1 * MS), t0 + 15 * MS);
	__atomic_add_fetch(&fk.pace_now, 20 * MS, __ATOMIC_SEQ_CST);
	assert_int_equal(gate_prio_poll(), 0);
	assert_int_equal(word.busy, 0);
	assert_true(word.seq != seq0);
	gate_prio_interactive(0);
	prio_stop();
}

/* Another interactive program's later deadline is not cleared by ours. */
void prio_interactive_leaves_others(void **state)
{
	uint64_t t0;

	(void)state;
	prio_start(20);
	gate_prio_interactive(1);
	t0 = now_ns();
	submit(1 * MS);
	word.busy = t0 + 19 * MS; /* written by another program since */
	__atomic_add_fetch(&fk.pace_now, 2 * MS, __ATOMIC_SEQ_CST);
	assert_int_equal(gate_prio_poll(), 0);
	assert_int_equal(word.busy, t0 + 19 * MS);
	gate_prio_interactive(0);
	prio_stop();
}

/* While a capture is active in the process nothing waits (its work is
 * recorded, not submitted), and a fork child starts unbound. */
void prio_capture_and_fork(void **state)
{
	uint64_t t0;

	(void)state;
	prio_start(20);
	t0 = now_ns();
	word.busy = t0 + 5 * MS;
	gate_capture_delta(1);
	assert_int_equal(submit(1000), t0);
	gate_capture_delta(-1);
	gate_prio_atfork_child();
	assert_int_equal(submit(1000), t0);
	assert_int_equal(slept, 0);
	prio_stop();
}

/* The pages unbound between an interactive submission's entry and its
 * exit (the connection ended): the submission is still taken back, so
 * the watcher goes idle instead of looking for ever. */
void prio_unbound_mid_submission(void **state)
{
	int tok;

	(void)state;
	prio_start(20);
	gate_prio_interactive(1);
	tok = bracket_enter(0, FAKE_STREAM(0));
	assert_true(tok >= 0);
	assert_true(word.busy != 0);
	gate_prio_bind(0, NULL, NULL);
	bracket_exit(0, tok);
	assert_int_equal(gate_prio_poll(), 0);
	gate_prio_interactive(0);
	prio_stop();
}

/* One request of the interactive program at the fake time t: a
 * submission of 1 ms of work, then the watcher's look once it passed. */
static void request_at(uint64_t t)
{
	__atomic_store_n(&fk.pace_now, t, __ATOMIC_SEQ_CST);
	submit(1 * MS);
	__atomic_store_n(&fk.pace_now, t + 3 * MS / 2, __ATOMIC_SEQ_CST);
	assert_int_equal(gate_prio_poll(), 0);
}

/* Requests every 50 ms teach a rhythm: after four intervals the word
 * says when the next is due (early rather than late, never after it);
 * submissions within a request start none; requests at random
 * intervals take the prediction back. */
void prio_rhythm_published(void **state)
{
	uint64_t t0, t;

	(void)state;
	prio_start(20);
	gate_prio_interactive(1);
	t0 = now_ns();
	for (int i = 0; i < 4; i++) {
		request_at(t0 + (uint64_t)i * 50 * MS);
		assert_int_equal(word.next, 0);
	}
	t = t0 + 4 * 50 * MS;
	request_at(t);
	assert_true(word.next > t + 30 * MS && word.next <= t + 50 * MS);
	/* A submission less than 2 ms after the last belongs to the same
	 * request. */
	__atomic_store_n(&fk.pace_now, t + 9 * MS / 5, __ATOMIC_SEQ_CST);
	submit(100000);
	__atomic_store_n(&fk.pace_now, t + 2 * MS, __ATOMIC_SEQ_CST);
	assert_int_equal(gate_prio_poll(), 0);
	assert_true(word.next > t + 30 * MS && word.next <= t + 50 * MS);
	t += 50 * MS;
	request_at(t);
	assert_true(word.next > t + 30 * MS && word.next <= t + 50 * MS);
	/* Now 10 ms, then 90 ms apart: no rhythm. */
	t += 10 * MS;
	request_at(t);
	t += 90 * MS;
	request_at(t);
	assert_int_equal(word.next, 0);
	gate_prio_interactive(0);
	prio_stop();
}

/* The batch side: beside active interactive work its queue is held to
 * the short bound (VSHARE_PRIO_PACE_US), and to pacing's longer one
 * (VSHARE_PACE_US) only while the next request is further than that
 * bound's drain and a margin, no more than a second ahead, no
 * interactive work was seen in the last 2 ms, and no more than one
 * interactive program is attached. */
void prio_rhythm_paces_far(void **state)
{
	struct gate_gpu *g = &gate_g.gpu[0];
	uint64_t now, tight, far;

	(void)state;
	prio_start(20);
	tight = gate_g.conf.prio_pace_ns;
	far = gate_g.conf.pace_ns;
	assert_true(tight != 0 && far > tight);
	now = now_ns();
	g->prio_seen_ns = now - 10 * MS;
	word.next = 0;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	word.next = now + 40 * MS;
	assert_int_equal(gate_prio_pace_ns(g), far);
	word.next = now + far + 500000;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	word.next = now - 1 * MS;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	word.next = now + 2000 * MS;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	word.next = now + 40 * MS;
	g->prio_seen_ns = now - 1 * MS;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	/* Two interactive programs attached (the slot's count): the word
	 * is one's prediction, and the other's request may come at any
	 * time; one again, or a scheduler that leaves the count 0, as
	 * before. */
	g->prio_seen_ns = now - 10 * MS;
	slot.prio_n = 2;
	assert_int_equal(gate_prio_pace_ns(g), tight);
	slot.prio_n = 1;
	assert_int_equal(gate_prio_pace_ns(g), far);
	slot.prio_n = 0;
	assert_int_equal(gate_prio_pace_ns(g), far);
	word.next = 0;
	prio_stop();
}
