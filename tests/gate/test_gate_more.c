/* More gate tests: connection loss, protocol mismatch, swapping,
 * footprints, several GPUs, shutdown, fork, and the stress test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "client_int.h"
#include "client_int.h"
#include "gate_int.h"
#include "helpers.h"

/* The scheduler goes away and comes back: the client keeps the program
 * running unshared, reconnects, registers again and requests the GPU it
 * used, with the gate closed until the new grant. */
void reconnect_after_scheduler_restart(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint64_t t0;
	int tok;

	(void)state;
	granted_start(0);
	fs_kick();
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 3000), 0);
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_FOOTPRINT, NULL, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	assert_int_equal(fs_connections(), 2);
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(100);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);

	/* Now a real restart: the socket disappears for a while. */
	fs_stop();
	t0 = now_ms();
	sleep_ms(100);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	assert_true(now_ms() - t0 < 1000);
	sleep_ms(300);
	fs_start();
	assert_int_equal(fs_wait(VS_MSG_HELLO, &m, 4000), 0);
	assert_string_equal(m.u.hello.label, "gate-test");
	/* It ran unshared from the loss to this WELCOME, and says so. */
	assert_int_equal(fs_wait(VS_MSG_UNSHARED, &m, 2000), 0);
	assert_int_equal(m.u.unshared.reason, VS_UNSHARED_LOST);
	assert_true(m.u.unshared.ms >= 300 &&
		    m.u.unshared.ms <= now_ms() - t0 + 10);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	fs_grant(0, 0);
	sleep_ms(50);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* An idle GPU's REQUEST goes out from the thread that starts to wait
 * (the fast REQUEST, client_work.c): exactly one per wait however many
 * threads wait, never from a holder, and the grant opens the gate for
 * all of them. */
void fast_request_from_waiter(void **state)
{
	enum { ROUNDS = 20, THREADS = 6 };
	struct entrant e[THREADS];
	int req, fast0;

	(void)state;
	granted_start(0);
	fast0 = LD(&client_g.fast_sent);
	for (int r = 0; r < ROUNDS; r++) {
		released_armed(0);
		req = fs_count(VS_MSG_REQUEST);
		for (int i = 0; i < THREADS; i++)
			entrant_start(&e[i], 0, NULL, 0);
		assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
		sleep_ms(30);
		assert_int_equal(fs_count(VS_MSG_REQUEST), req + 1);
		for (int i = 0; i < THREADS; i++)
			assert_int_equal(LD(&e[i].done), 0);
		fs_grant(0, 0);
		for (int i = 0; i < THREADS; i++) {
			assert_int_equal(entrant_wait(&e[i], 2000), 0);
			entrant_join(&e[i]);
		}
	}
	/* Most rounds' REQUEST came from a waiter, not the client thread. */
	assert_true(LD(&client_g.fast_sent) - fast0 >= ROUNDS / 2);
	assert_int_equal(LD(&fk.bad_order), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* The scheduler goes away while the GPU is armed for a fast REQUEST: a
 * waiter's send fails (or the client thread sees the end first) and the
 * program goes on unshared at once, without SIGPIPE. */
void fast_request_scheduler_gone(void **state)
{
	struct entrant e;
	uint64_t t0;

	(void)state;
	granted_start(0);
	released_armed(0);
	fs_stop();
	t0 = now_ms();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
}

/* A footprint that changed since it was sent reaches the scheduler
 * before the REQUEST that follows, fast REQUEST or not: in mode auto the
 * grant depends on it. */
void fast_request_footprint_first(void **state)
{
	struct entrant e;
	struct fs_msg m;

	(void)state;
	fk.managed[0] = 0;
	granted_start(0);
	for (int r = 0; r < 20; r++) {
		released_armed(0);
		fk.managed[0] = (r % 2 ? 0u : 7u) << 20;
		client_footprint_changed(0);
		entrant_start(&e, 0, NULL, 0);
		/* fs_wait skips other frames: a REQUEST before the FOOTPRINT
		 * would be skipped here and the second wait would fail. */
		assert_int_equal(fs_wait(VS_MSG_FOOTPRINT, &m, 2000), 0);
		assert_int_equal(m.u.fp.managed, fk.managed[0]);
		assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
		fs_grant(0, 0);
		assert_int_equal(entrant_wait(&e, 2000), 0);
		entrant_join(&e);
	}
	assert_int_equal(LD(&fk.bad_order), 0);
	fake_shutdown();
	fs_stop();
}

static int file_count(const char *path, const char *needle)
{
	char buf[8192];
	FILE *f = fopen(path, "r");
	size_t n;
	int count = 0;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (char *p = buf; (p = strstr(p, needle)) != NULL; p++)
		count++;
	return count;
}

/* A scheduler of another protocol version answers with an error: one
 * clear line with both versions, then the program runs unshared and does
 * not keep knocking. */
void version_mismatch(void **state)
{
	char logpath[] = "/tmp/vsgate-log.XXXXXX", theirs[32], ours[32];
	struct vs_error err;
	struct vs_hdr h;
	struct entrant e;
	int fd = mkstemp(logpath), saved = dup(2);

	(void)state;
	assert_true(fd >= 0);
	dup2(fd, 2);
	fs_no_welcome(1);
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 3000), 0);
	memset(&err, 0, sizeof(err));
	err.code = VS_E_VERSION;
	err.detail = VS_PROTO_VERSION + 1;
	snprintf(err.msg, sizeof(err.msg), "protocol version %u required",
		 VS_PROTO_VERSION + 1);
	vs_hdr_init(&h, VS_MSG_ERROR, sizeof(err));
	h.version = VS_PROTO_VERSION + 1;
	fs_send_raw(&h, &err);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
	sleep_ms(500);
	dup2(saved, 2);
	assert_int_equal(fs_connections(), 1);
	snprintf(theirs, sizeof(theirs), "protocol version %u",
		 VS_PROTO_VERSION + 1);
	snprintf(ours, sizeof(ours), "speaks version %u", VS_PROTO_VERSION);
	assert_int_equal(file_count(logpath, theirs), 1);
	assert_int_equal(file_count(logpath, ours), 1);
	assert_int_equal(file_count(logpath, "lost the scheduler"), 0);
	unlink(logpath);
	fake_shutdown();
	fs_stop();
}

/* A malformed frame from the scheduler ends that connection; the client
 * connects again and registers anew. */
void malformed_frame_reconnects(void **state)
{
	struct vs_drop bad;
	struct vs_hdr h;

	(void)state;
	granted_start(0);
	memset(&bad, 0, sizeof(bad));
	fake_uuid(0, bad.uuid);
	bad.reason = 99; /* no such reason */
	vs_hdr_init(&h, VS_MSG_DROP, sizeof(bad));
	fs_send_raw(&h, &bad);
	assert_int_equal(fs_wait(VS_MSG_HELLO, NULL, 3000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	assert_int_equal(fs_connections(), 2);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	fake_shutdown();
	fs_stop();
}

/* A grant under oversubscription swaps this process's memory in before
 * any work of it runs. */
void oversub_grant_prefetches(void **state)
{
	struct entrant e;

	(void)state;
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	fs_grant(0, VS_GRANTF_OVERSUB);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	/* Through the client's granted callback, before the gate opened. */
	assert_int_equal(LD(&fk.grants[0]), 1);
	assert_int_equal(LD(&fk.prefetch_in[0]), 1);
	assert_int_equal(LD(&fk.entered_before_prefetch_in), 0);
	fake_shutdown();
	fs_stop();
}

/* VSHARE_SWAP_OUT=eager: after the synchronize, before the release. */
void eager_swap_out(void **state)
{
	(void)state;
	setenv("VSHARE_SWAP_OUT", "eager", 1);
	granted_start(0);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	/* Through the client's released callback, after the synchronize
	 * and before RELEASED went out. */
	assert_int_equal(LD(&fk.prefetch_out[0]), 1);
	assert_int_equal(LD(&fk.sync_before_prefetch_out), 1);
	fake_shutdown();
	fs_stop();
}

/* A release tells the hold's use first: USAGE, with the time held busy
 * (a call in flight for 300 ms) and idle (nothing submitted for 500 ms,
 * past the idle gap), and the eager swap-out's bytes, then RELEASED. */
void release_reports_usage(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint8_t u[VS_UUID_LEN];

	(void)state;
	setenv("VSHARE_SWAP_OUT", "eager", 1);
	granted_start(0);
	entrant_start(&e, 0, NULL, 300);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	sleep_ms(500);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_USAGE, &m, 2000), 0);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(m.len, sizeof(struct vs_usage));
	fake_uuid(0, u);
	assert_memory_equal(m.u.usage.uuid, u, VS_UUID_LEN);
	/* Lower bounds only: the times slept, less the idle gap and a look. */
	assert_true(m.u.usage.busy_ms >= 300);
	assert_true(m.u.usage.idle_ms >= 250);
	/* The fake's released callback moved 1 MiB in 10 us. */
	assert_int_equal(m.u.usage.swapout_bytes, 1u << 20);
	assert_int_equal(m.u.usage.swapout_us, 10);
	assert_int_equal(m.u.usage.flags, 0);
	assert_int_equal(fs_count(VS_MSG_USAGE), 1);
	fake_shutdown();
	fs_stop();
}

/* A process that ends holding its GPU tells what the hold did since
 * its last report before its connection closes (which releases it). */
void exit_reports_usage(void **state)
{
	struct entrant e;
	struct fs_msg m;

	(void)state;
	granted_start(0);
	entrant_start(&e, 0, NULL, 200);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_count(VS_MSG_USAGE), 0);
	fake_shutdown();
	assert_int_equal(fs_wait(VS_MSG_USAGE, &m, 2000), 0);
	assert_true(m.u.usage.busy_ms >= 200);
	assert_int_equal(fs_count(VS_MSG_RELEASED), 0);
	fs_stop();
}

/* Footprints go out when they move by a step, not on every change. */
void footprint_reports(void **state)
{
	struct fs_msg m;

	(void)state;
	setenv("VSHARE_FOOTPRINT_STEP", "1M", 1);
	fk.managed[0] = 10u << 20;
	granted_start(0);
	assert_int_equal(fs_count(VS_MSG_FOOTPRINT), 1);
	__atomic_store_n(&fk.managed[0], (10u << 20) + (512u << 10), __ATOMIC_SEQ_CST);
	client_footprint_changed(0);
	client_footprint_changed(1); /* a GPU never used: nothing to report */
	sleep_ms(200);
	assert_int_equal(fs_count(VS_MSG_FOOTPRINT), 1);
	__atomic_store_n(&fk.managed[0], 12u << 20, __ATOMIC_SEQ_CST);
	client_footprint_changed(0);
	assert_int_equal(fs_wait(VS_MSG_FOOTPRINT, &m, 2000), 0);
	assert_int_equal(m.u.fp.managed, 12u << 20);
	assert_int_equal(m.u.fp.pinned, 0);
	__atomic_store_n(&fk.pinned[0], 3u << 20, __ATOMIC_SEQ_CST);
	client_footprint_changed(0);
	assert_int_equal(fs_wait(VS_MSG_FOOTPRINT, &m, 2000), 0);
	assert_int_equal(m.u.fp.pinned, 3u << 20);
	assert_int_equal(fs_count(VS_MSG_FOOTPRINT), 3);
	fake_shutdown();
	fs_stop();
}

/* Two GPUs, two independent locks. */
void two_gpus_independent(void **state)
{
	struct entrant e1;
	struct fs_msg m;
	uint8_t u0[VS_UUID_LEN], u1[VS_UUID_LEN];
	int tok;

	(void)state;
	fake_uuid(0, u0);
	fake_uuid(1, u1);
	granted_start(0);
	entrant_start(&e1, 1, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &m, 2000), 0);
	assert_memory_equal(m.u.ref.uuid, u1, VS_UUID_LEN);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, &m, 2000), 0);
	assert_memory_equal(m.u.ref.uuid, u0, VS_UUID_LEN);
	assert_int_equal(LD(&fk.syncs[1]), 0);
	assert_int_equal(LD(&e1.done), 0);
	fs_grant(1, 0);
	assert_int_equal(entrant_wait(&e1, 2000), 0);
	entrant_join(&e1);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* A thread at a closed gate wakes the client thread through the gate's
 * `wanted` event: the callback runs without the gate's mutex (it takes it
 * here, through gate_waiting) and returns at once although the client
 * thread is busy elsewhere (a release of GPU 1 stuck in its synchronize):
 * it takes no lock of the client's. The REQUEST goes out once the client
 * thread is free, and only the client thread opens the gate. */
void waiter_wakes_client(void **state)
{
	struct entrant e0, e1;
	struct fs_msg m;
	uint8_t u0[VS_UUID_LEN];
	int calls;

	(void)state;
	setenv("VSHARE_SPIN_US", "50", 1);
	fake_uuid(0, u0);
	granted_start(0);
	__atomic_store_n(&fk.wanted_probe, 1, __ATOMIC_SEQ_CST);
	entrant_start(&e1, 1, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 2000), 0);
	fs_grant(1, 0);
	assert_int_equal(entrant_wait(&e1, 2000), 0);
	entrant_join(&e1);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, &m, 2000), 0);
	assert_memory_equal(m.u.ref.uuid, u0, VS_UUID_LEN);
	__atomic_store_n(&fk.block_sync[1], 1, __ATOMIC_SEQ_CST);
	fs_drop(1, VS_DROP_QUANTUM);
	/* The client thread is now stuck in sync_dev(1). */
	assert_int_equal(wait_at_least(&fk.sync_entered[1], 1, 2000), 0);
	calls = LD(&fk.wanted_calls);
	entrant_start(&e0, 0, NULL, 0);
	assert_int_equal(wait_at_least(&fk.wanted_returns, calls + 1, 2000), 0);
	assert_int_equal(LD(&fk.syncs[1]), 0);   /* still stuck */
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 100), -1);
	__atomic_store_n(&fk.block_sync[1], 0, __ATOMIC_SEQ_CST);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &m, 2000), 0);
	assert_memory_equal(m.u.ref.uuid, u0, VS_UUID_LEN);
	sleep_ms(50);
	assert_int_equal(LD(&e0.done), 0);      /* only the grant opens */
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e0, 2000), 0);
	entrant_join(&e0);
	assert_int_equal(LD(&fk.violations), 0);
	assert_int_equal(LD(&fk.bad_order), 0);
	fake_shutdown();
	fs_stop();
}

/* VSHARE_DISABLE=1: nothing is gated and nothing connects. */
void disabled_passes(void **state)
{
	(void)state;
	setenv("VSHARE_DISABLE", "1", 1);
	fs_start();
	env_init();
	fake_dev = 0;
	assert_int_equal(gate_enter(NULL), GATE_TOKEN_NONE);
	gate_exit(GATE_TOKEN_NONE);
	client_footprint_changed(0);
	sleep_ms(100);
	assert_int_equal(fs_connections(), 0);
	fake_shutdown();
	fs_stop();
}

/* Exit never deadlocks: a thread blocked at a gate is let through and the
 * client thread stops. */
void shutdown_unblocks(void **state)
{
	struct entrant e;
	uint64_t t0;

	(void)state;
	setenv("VSHARE_REQUIRE_SCHEDULER", "1", 1);
	env_init();
	entrant_start(&e, 0, NULL, 0);
	sleep_ms(100);
	assert_int_equal(LD(&e.done), 0);
	t0 = now_ms();
	fake_shutdown();
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(entrant_wait(&e, 1000), 0);
	entrant_join(&e);
	assert_int_equal(client_started(), 0);
}

/* A forked child starts clean and leaves the parent's connection alone. */
void fork_child_resets(void **state)
{
	int status, tok;
	pid_t pid;

	(void)state;
	granted_start(0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fake_atfork_child();
		_exit(gate_g.gpu[0].state == GATE_CLOSED &&
		      gate_inflight(&gate_g.gpu[0]) == 0 &&
		      !client_g.gpu[0].held && !client_started() &&
		      !gate_g.failopen ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	tok = bracket_enter(0, NULL);
	assert_true(tok >= 0);
	bracket_exit(0, tok);
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	assert_int_equal(fs_connections(), 1);
	fake_shutdown();
	fs_stop();
}

struct hammer {
	pthread_t thr;
	int stop;      /* atomic */
	long entries;
	long ungated;
};

static void *hammer_main(void *arg)
{
	struct hammer *h = arg;
	volatile int spin;

	while (!LD(&h->stop)) {
		int tok = bracket_enter(0, NULL);

		if (tok < 0)
			h->ungated++;
		for (spin = 0; spin < 50; spin++)
			;
		bracket_exit(0, tok);
		__atomic_add_fetch(&h->entries, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

#define STRESS_RELEASES 20
#define STRESS_ENTRIES  1000
#define STRESS_MAX_MS   40000

static long hammer_entries(struct hammer *h, int threads)
{
	long n = 0;

	for (int i = 0; i < threads; i++)
		n += __atomic_load_n(&h[i].entries, __ATOMIC_RELAXED);
	return n;
}

/* Threads hammer the gate while drops and grants arrive: no call is ever
 * inside the bracket while the gate is closed (checked at each synchronize
 * and from each release until the next grant). */
static void stress(int one_dev, int threads)
{
	struct hammer h[64];
	uint64_t start, end;
	long entries = 0;

	setenv("VSHARE_IDLE_MS", "1", 1);
	/* Waiters spin (and the client thread polls) in one of the two. */
	setenv("VSHARE_SPIN_US", one_dev ? "50" : "0", 1);
	if (one_dev)
		__atomic_store_n(&fk.device_count, 1, __ATOMIC_SEQ_CST);
	granted_start(0);
	fs_auto_grant(1);
	memset(h, 0, sizeof(h));
	for (int i = 0; i < threads; i++)
		assert_int_equal(pthread_create(&h[i].thr, NULL, hammer_main, &h[i]), 0);
	/* Run for at least 1.5 s and until the work the checks below need has
	 * happened: on a loaded machine (a sanitizer build beside other jobs
	 * on two CPUs) 1.5 s may hold only a few releases. The cap only ends
	 * a run that makes no progress at all. */
	start = now_ms();
	end = start + STRESS_MAX_MS;
	for (int i = 0; now_ms() < end; i++) {
		if (now_ms() >= start + 1500 &&
		    fs_count(VS_MSG_RELEASED) >= STRESS_RELEASES &&
		    hammer_entries(h, threads) >= STRESS_ENTRIES)
			break;
		fs_drop(0, i % 4 == 3 ? VS_DROP_IDLE : VS_DROP_QUANTUM);
		sleep_ms(2);
	}
	for (int i = 0; i < threads; i++)
		__atomic_store_n(&h[i].stop, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < threads; i++) {
		pthread_join(h[i].thr, NULL);
		entries += h[i].entries;
		assert_int_equal(h[i].ungated, 0);
	}
	print_message("%ld entries, %d releases, %d syncs, %d requests\n", entries,
		      fs_count(VS_MSG_RELEASED), LD(&fk.syncs[0]),
		      fs_count(VS_MSG_REQUEST));
	assert_int_equal(LD(&fk.violations), 0);
	/* Requests come in protocol order: never from the holder, never
	 * twice. */
	assert_int_equal(LD(&fk.bad_order), 0);
	assert_true(fs_count(VS_MSG_RELEASED) >= STRESS_RELEASES);
	assert_true(entries >= STRESS_ENTRIES);
	if (one_dev)
		/* The fast path never asked for a context: only the slow
		 * path (once per acquisition at most) did. */
		assert_true(LD(&fk.current_context_calls) <=
			    fs_count(VS_MSG_REQUEST) + threads + 2);
	fake_shutdown();
	fs_stop();
}

/* Many more threads than CPUs, as a data loader or a thread pool has. */
void stress_64_threads(void **state)
{
	(void)state;
	stress(1, 64);
}

/* Threads hammer the gate while drops and grants arrive: no call is ever
 * inside the bracket while the gate is closed (checked at each synchronize
 * and from each release until the next grant). */
void stress_no_slip(void **state)
{
	(void)state;
	stress(0, 6);
}

/* The same with the one-device fast path (no context lookup). */
void stress_no_slip_one_dev(void **state)
{
	(void)state;
	stress(1, 6);
}

/* With one device the fast path asks the driver nothing, and a thread
 * with no context of its own goes through device 0's gate. */
void one_device_fast_path(void **state)
{
	int before, tok;

	(void)state;
	__atomic_store_n(&fk.device_count, 1, __ATOMIC_SEQ_CST);
	granted_start(0);
	before = LD(&fk.current_context_calls);
	for (int i = 0; i < 1000; i++) {
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
	}
	assert_int_equal(LD(&fk.current_context_calls), before);
	/* Device 1 does not exist for this process: its "context" maps to
	 * device 0, whose gate is open. */
	tok = bracket_enter(1, NULL);
	assert_true(tok >= 0);
	bracket_exit(1, tok);
	assert_int_equal(LD(&fk.current_context_calls), before);
	fake_shutdown();
	fs_stop();
}

/* What the scheduler sends when a per-user limit or its GPU table refuses
 * an ATTACH or a REQUEST (src/scheduler/daemon/srv.c: refuse): the GPU first. */
static void send_refusal(int dev, int32_t code)
{
	struct vs_error m;
	struct vs_hdr h;
	uint8_t u[VS_UUID_LEN];
	char s[VS_UUID_STR_LEN];

	memset(&m, 0, sizeof(m));
	fake_uuid(dev, u);
	vs_uuid_format(u, s);
	m.code = code;
	m.detail = 64;
	snprintf(m.msg, sizeof(m.msg), "%s: attach refused: uid_gpus (64)", s);
	vs_hdr_init(&h, VS_MSG_ERROR, sizeof(m));
	fs_send_raw(&h, &m);
}

/* A refused GPU runs unshared at once, with no GRANT and no further
 * REQUEST on this connection: waiting for a grant that never comes would
 * hang the program without a word. */
void refused_gpu_runs_unshared(void **state)
{
	struct entrant e;
	int requests, tok;

	(void)state;
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 3000), 0);
	send_refusal(0, VS_E_LIMIT);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
	assert_int_equal(fs_count(VS_MSG_GRANT), 0);
	requests = fs_count(VS_MSG_REQUEST);
	for (int i = 0; i < 100; i++) {
		tok = bracket_enter(0, NULL);
		assert_true(tok >= 0);
		bracket_exit(0, tok);
	}
	sleep_ms(300);
	assert_int_equal(fs_count(VS_MSG_REQUEST), requests);
	assert_int_equal(fs_count(VS_MSG_ATTACH), 1);
	fake_shutdown();
	fs_stop();
}

/* With VSHARE_REQUIRE_SCHEDULER a refused GPU keeps its work waiting and
 * is asked for again after a pause; a later GRANT lets the work run. */
void refused_gpu_require_retries(void **state)
{
	struct entrant e;

	(void)state;
	setenv("VSHARE_REQUIRE_SCHEDULER", "1", 1);
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 3000), 0);
	send_refusal(0, VS_E_FULL);
	sleep_ms(400);
	assert_int_equal(LD(&e.done), 0);
	assert_int_equal(fs_count(VS_MSG_ATTACH), 1);
	/* The first retry comes after CLIENT_REFUSED_RETRY_MIN_MS. */
	assert_int_equal(fs_wait(VS_MSG_ATTACH, NULL, 4000), 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 3000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
}
