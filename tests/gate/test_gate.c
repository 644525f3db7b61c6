/*
 * Unit tests of the gate and the scheduler client, driven with fake CUDA
 * operations and a fake scheduler. Each test runs in its own process:
 * `test_gate NAME`.
 */
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

void env_init(void)
{
	fs_path();
	setenv("VSHARE_LABEL", "gate-test", 1);
	fake_init();
}

int bracket_enter(int dev, void *stream)
{
	int tok;

	fake_dev = dev;
	tok = gate_enter(stream);
	if (tok >= 0) {
		INC(&fk.in_bracket[dev]);
		if (LD(&fk.released[dev]))
			INC(&fk.violations);
	}
	return tok;
}

void bracket_exit(int dev, int tok)
{
	if (tok >= 0)
		DEC(&fk.in_bracket[dev]);
	gate_exit(tok);
}

static void *entrant_main(void *arg)
{
	struct entrant *e = arg;

	e->tok = bracket_enter(e->dev, e->stream);
	INC(&fk.entries_done);
	__atomic_store_n(&e->done, 1, __ATOMIC_SEQ_CST);
	if (e->hold_ms)
		sleep_ms(e->hold_ms);
	bracket_exit(e->dev, e->tok);
	__atomic_store_n(&e->left, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

void entrant_start(struct entrant *e, int dev, void *stream, int hold_ms)
{
	memset(e, 0, sizeof(*e));
	e->dev = dev;
	e->stream = stream;
	e->hold_ms = hold_ms;
	assert_int_equal(pthread_create(&e->thr, NULL, entrant_main, e), 0);
}

int wait_at_least(int *p, int want, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	while (LD(p) < want) {
		if (now_ms() >= end)
			return -1;
		sleep_ms(2);
	}
	return 0;
}

int entrant_wait(struct entrant *e, int timeout_ms)
{
	return wait_at_least(&e->done, 1, timeout_ms);
}

void entrant_join(struct entrant *e)
{
	pthread_join(e->thr, NULL);
}

void granted_start(int dev)
{
	struct entrant e;

	fs_start();
	env_init();
	entrant_start(&e, dev, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	fs_grant(dev, 0);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
}

void released_armed(int dev)
{
	fs_drop(dev, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	sleep_ms(20);
}

/* The first entry attaches the GPU, reports its footprint and requests the
 * lock, in that order, and blocks until the grant; later entries take the
 * fast path and ask the driver for the device only once per thread. */
void grant_opens_gate(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint8_t u[VS_UUID_LEN];
	int before, tok;

	(void)state;
	fk.managed[0] = 5u << 20;
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_HELLO, &m, 3000), 0);
	assert_int_equal(m.u.hello.proto_version, VS_PROTO_VERSION);
	assert_string_equal(m.u.hello.label, "gate-test");
	assert_int_equal(fs_wait(VS_MSG_ATTACH, &m, 3000), 0);
	fake_uuid(0, u);
	assert_memory_equal(m.u.attach.uuid, u, VS_UUID_LEN);
	assert_int_equal(m.u.attach.total_mem, 1ull << 30);
	assert_int_equal(fs_wait(VS_MSG_FOOTPRINT, &m, 3000), 0);
	assert_int_equal(m.u.fp.managed, 5u << 20);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &m, 3000), 0);
	sleep_ms(100);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);

	fake_dev = 0;
	before = LD(&fk.current_device_calls);
	for (int i = 0; i < 1000; i++) {
		tok = gate_enter(NULL);
		assert_true(tok >= 0);
		gate_exit(tok);
	}
	assert_true(LD(&fk.current_device_calls) - before <= 1);
	assert_int_equal(fs_count(VS_MSG_REQUEST), 1);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* A drop at quantum end closes the gate at once, waits for the call in
 * flight, synchronizes, then reports the release; the entrant that came
 * meanwhile waits and the lock is requested again for it. */
void drop_quantum_drains_and_releases(void **state)
{
	struct entrant late;
	int tok;

	(void)state;
	granted_start(0);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	fs_drop(0, VS_DROP_QUANTUM);
	sleep_ms(100);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	assert_int_equal(LD(&fk.syncs[0]), 0);
	entrant_start(&late, 0, NULL, 0);
	sleep_ms(100);
	assert_int_equal(LD(&late.done), 0);
	bracket_exit(0, tok);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	assert_int_equal(LD(&fk.prefetch_out[0]), 0);
	assert_int_equal(LD(&late.done), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&late.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&late, 2000), 0);
	entrant_join(&late);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* Someone waits: the holder keeps the GPU while it keeps submitting and
 * hands it over idle_ms after its last submission (the fixed idle time:
 * drop_idle_short_rhythm checks the learned one). */
void drop_idle_waits_for_idle(void **state)
{
	uint64_t last, rel;
	int tok;

	(void)state;
	setenv("VSHARE_IDLE_MS", "200", 1);
	setenv("VSHARE_IDLE_LEARN", "0", 1);
	granted_start(0);
	fs_drop(0, VS_DROP_IDLE);
	for (int i = 0; i < 10; i++) {
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
		sleep_ms(50);
	}
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	tok = bracket_enter(0, NULL);
	bracket_exit(0, tok);
	last = now_ms();
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	rel = now_ms() - last;
	/* The activity clock is coarse (a few ms). */
	assert_true(rel >= 180);
	assert_true(rel < 200 + 300);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	unsetenv("VSHARE_IDLE_LEARN");
	fake_shutdown();
	fs_stop();
}

/* A holder whose pauses are short (a notebook cell's launches) hands
 * the GPU over a few ms after its last submission, not idle_ms after. */
void drop_idle_short_rhythm(void **state)
{
	uint64_t last, rel;
	int tok;

	(void)state;
	setenv("VSHARE_IDLE_MS", "2000", 1);
	granted_start(0);
	for (int i = 0; i < 12; i++) {
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
		sleep_ms(5);
	}
	fs_drop(0, VS_DROP_IDLE);
	last = now_ms();
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 4000), 0);
	rel = now_ms() - last;
	/* About 2 x 5 ms and a step of the coarse clock; far below the
	 * 2 s of idle_ms whatever the load. */
	assert_true(rel < 1000);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	fake_shutdown();
	fs_stop();
}

static void send_policy(uint64_t limit, uint32_t flags);

/* A holder that answers a request every 150 ms, asked to release when
 * idle, after its last request; the ms from that request to the
 * RELEASED. */
static uint64_t rhythm_release_ms(void)
{
	uint64_t last;
	int tok;

	setenv("VSHARE_IDLE_MS", "2000", 1);
	granted_start(0);
	send_policy(0, VS_POLICYF_INTERACTIVE);
	assert_int_equal(wait_at_least(&fk.policies, 1, 2000), 0);
	/* One call a request: every pause learned is one of 150 ms or more
	 * (a load only stretches them), none a tick within a request. */
	for (int i = 0; i < 8; i++) {
		if (i)
			sleep_ms(150);
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
	}
	last = now_ms();
	fs_drop(0, VS_DROP_IDLE);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 4000), 0);
	fake_shutdown();
	fs_stop();
	unsetenv("VSHARE_CLASS");
	return now_ms() - last;
}

/* An interactive program whose requests come 150 ms apart learns those
 * pauses as its rhythm, but gives the GPU back a few ms after a request
 * (its class takes it back at the next one). */
void drop_idle_interactive(void **state)
{
	(void)state;
	setenv("VSHARE_CLASS", "interactive", 1);
	/* 5 ms and the client thread's wake-ups, whatever the load. */
	assert_true(rhythm_release_ms() < 250);
}

/* The same program as batch keeps the GPU through its rhythm's pauses:
 * twice 150 ms (more if the machine stretches the sleeps), less the
 * coarse clock's step of the last call's stamp. */
void drop_idle_batch_rhythm(void **state)
{
	(void)state;
	assert_true(rhythm_release_ms() >= 250);
}

/* A call still in flight (a long synchronous copy) counts as busy. */
void drop_idle_busy_holder(void **state)
{
	uint64_t t0;
	int tok;

	(void)state;
	setenv("VSHARE_IDLE_MS", "50", 1);
	granted_start(0);
	sleep_ms(100);
	tok = bracket_enter(0, NULL);
	t0 = now_ms();
	fs_drop(0, VS_DROP_IDLE);
	sleep_ms(300);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	bracket_exit(0, tok);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_true(now_ms() - t0 >= 300 + 40);
	fake_shutdown();
	fs_stop();
}

/* Idle for longer than idle_ms already: the drop is honoured at once. */
void drop_idle_already_idle(void **state)
{
	uint64_t t0;

	(void)state;
	setenv("VSHARE_IDLE_MS", "400", 1);
	granted_start(0);
	sleep_ms(600);
	t0 = now_ms();
	fs_drop(0, VS_DROP_IDLE);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_true(now_ms() - t0 < 250);
	fake_shutdown();
	fs_stop();
}

/* Launches on a stream under capture are not submissions; a release waits
 * for the capture to end, with the gate open, instead of synchronizing. */
void capture_passes_and_defers_release(void **state)
{
	int tok;

	(void)state;
	granted_start(0);
	gate_capture_delta(1);
	assert_int_equal(bracket_enter(0, FAKE_CAPTURE_STREAM), GATE_TOKEN_NONE);
	gate_exit(GATE_TOKEN_NONE);
	fs_drop(0, VS_DROP_QUANTUM);
	sleep_ms(150);
	assert_int_equal(LD(&fk.syncs[0]), 0);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	/* Still open for the capturing program's other work. */
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	gate_capture_delta(-1);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	/* Closed now: a capture still passes, real work would wait. */
	gate_capture_delta(1);
	assert_int_equal(bracket_enter(0, FAKE_CAPTURE_STREAM), GATE_TOKEN_NONE);
	gate_capture_delta(-1);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* No scheduler: the program runs at once, unshared. When a scheduler
 * appears later the process joins it: it drains, attaches and requests. */
void fail_open_without_scheduler(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint64_t t0 = now_ms();
	int tok;

	(void)state;
	env_init();
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	assert_true(now_ms() - t0 < 1000);
	bracket_exit(0, tok);
	for (int i = 0; i < 100; i++) {
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
	}
	fs_start();
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 5000), 0);
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 2000), 0);
	/* Welcomed, it says it ran unshared, and why, before it asks. */
	assert_int_equal(fs_wait(VS_MSG_UNSHARED, &m, 2000), 0);
	assert_int_equal(m.u.unshared.reason, VS_UNSHARED_ABSENT);
	/* Within the test's time (the shim's clock is the coarse one, a
	 * few ms a step). */
	assert_true(m.u.unshared.ms <= now_ms() - t0 + 10);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	assert_int_equal(fs_count(VS_MSG_UNSHARED), 1);
	assert_int_equal(LD(&fk.syncs[0]), 1);
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(100);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
}

/* VSHARE_REQUIRE_SCHEDULER=1: GPU work waits until the scheduler grants. */
void require_scheduler_blocks(void **state)
{
	struct entrant e;

	(void)state;
	setenv("VSHARE_REQUIRE_SCHEDULER", "1", 1);
	env_init();
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(300);
	assert_int_equal(LD(&e.done), 0);
	fs_start();
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 5000), 0);
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
}

/* With VSHARE_REQUIRE_SCHEDULER=1 a lost scheduler does not mean running
 * unshared: the holder releases (drains and synchronizes) and GPU work
 * waits until the scheduler is back and grants again. */
void require_scheduler_lost_waits(void **state)
{
	struct entrant e;

	(void)state;
	setenv("VSHARE_REQUIRE_SCHEDULER", "1", 1);
	granted_start(0);
	fs_stop();
	assert_int_equal(wait_at_least(&fk.syncs[0], 1, 2000), 0);
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(300);
	assert_int_equal(LD(&e.done), 0);
	fs_start();
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 4000), 0);
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

static void send_policy(uint64_t limit, uint32_t flags)
{
	struct vs_policy p;
	struct vs_hdr h;

	memset(&p, 0, sizeof(p));
	p.mem_limit = limit;
	p.flags = flags;
	p.weight = 2;
	vs_hdr_init(&h, VS_MSG_POLICY, sizeof(p));
	fs_send_raw(&h, &p);
}

/* The scheduler's policy: its limit goes to the memory layer (the
 * callback), again at each new one; its require keeps GPU work waiting
 * through an outage although the environment does not require it. */
void policy_limit_and_require(void **state)
{
	struct entrant e;

	(void)state;
	setenv("VSHARE_REQUIRE_SCHEDULER", "0", 1);
	granted_start(0);
	send_policy(8u << 20, VS_POLICYF_REQUIRE);
	assert_int_equal(wait_at_least(&fk.policies, 1, 2000), 0);
	assert_int_equal(LD(&fk.policy_limit), 8u << 20);
	send_policy(4u << 20, VS_POLICYF_REQUIRE);
	assert_int_equal(wait_at_least(&fk.policies, 2, 2000), 0);
	assert_int_equal(LD(&fk.policy_limit), 4u << 20);
	fs_stop();
	assert_int_equal(wait_at_least(&fk.syncs[0], 1, 2000), 0);
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(300);
	assert_int_equal(LD(&e.done), 0);
	/* The limit outlives the outage: no callback lifts it. */
	assert_int_equal(LD(&fk.policy_limit), 4u << 20);
	fs_start();
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 4000), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* client_policy_wait: returns once the policy is heard, and at once
 * without a scheduler (no waiting for one that is not there). */
void policy_wait_settles(void **state)
{
	uint64_t t0;

	(void)state;
	env_init();
	t0 = now_ms();
	client_policy_wait();
	assert_true(now_ms() - t0 < 1000);
	assert_true(client_settled());
	fake_shutdown();
}

/* An oversubscribed grant swaps in; the client reports what it cost
 * (VS_MSG_SWAPPED) once, for that GPU, before its release. A plain grant
 * swaps nothing and reports nothing. */
void oversub_grant_reports_swap(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint8_t u[VS_UUID_LEN];

	(void)state;
	fk.managed[0] = 8u << 20;
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	fs_grant(0, VS_GRANTF_OVERSUB);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_wait(VS_MSG_SWAPPED, &m, 2000), 0);
	assert_int_equal(m.version, VS_PROTO_VERSION);
	assert_int_equal(m.len, sizeof(struct vs_swapped));
	fake_uuid(0, u);
	assert_memory_equal(m.u.swapped.uuid, u, VS_UUID_LEN);
	assert_int_equal(m.u.swapped.bytes, 8u << 20);
	assert_int_equal(m.u.swapped.us, FAKE_SWAP_US);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(fs_count(VS_MSG_SWAPPED), 1);

	/* Next grant, not oversubscribed: no swap-in, no report. */
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(fs_count(VS_MSG_SWAPPED), 1);
	assert_int_equal(LD(&fk.prefetch_in[0]), 1);
	assert_int_equal(LD(&fk.bad_order), 0);
	fake_shutdown();
	fs_stop();
}

/* A scheduler of protocol version 1 refuses our HELLO: the client
 * connects again at once in version 1, without running unshared in
 * between, and reports no swap-in (version 1 has no SWAPPED). */
void old_scheduler_version_1(void **state)
{
	struct entrant e;
	struct fs_msg m;

	(void)state;
	fk.managed[0] = 8u << 20;
	fs_speak(1);
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_HELLO, &m, 3000), 0);
	assert_int_equal(m.version, VS_PROTO_VERSION);
	assert_int_equal(fs_wait(VS_MSG_HELLO, &m, 3000), 0);
	assert_int_equal(m.version, 1);
	assert_int_equal(m.u.hello.proto_version, 1);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &m, 3000), 0);
	assert_int_equal(m.version, 1);
	assert_int_equal(fs_connections(), 2);
	/* Not through the gate: it waited for the grant all along. */
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, VS_GRANTF_OVERSUB);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(LD(&fk.prefetch_in[0]), 1);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, &m, 2000), 0);
	assert_int_equal(m.version, 1);
	assert_int_equal(fs_count(VS_MSG_SWAPPED), 0);
	/* Version 1 has no use reports either. */
	assert_int_equal(fs_count(VS_MSG_USAGE), 0);
	assert_int_equal(fs_connections(), 2);
	fake_shutdown();
	fs_stop();
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
#define GATE_TEST(name) cmocka_unit_test(name),
#include "gate_tests.def"
#undef GATE_TEST
	};
	const char *only = argc > 1 ? argv[1] : NULL;

	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (only && strcmp(only, tests[i].name) == 0)
			return _cmocka_run_group_tests(tests[i].name, &tests[i], 1,
						       NULL, NULL);
	fprintf(stderr, "usage: %s TEST (one test per process)\n", argv[0]);
	return 2;
}
