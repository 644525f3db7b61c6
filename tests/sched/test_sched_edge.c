/*
 * Policy edge cases, driven by a fake clock: totals that differ between
 * clients, a client larger than the capacity, FCFS under a stream of
 * small late-comers, footprints that change while waiting, a revoked
 * holder that comes back, a client holding two GPUs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"

static struct sched *mk(uint32_t mode, uint64_t cap)
{
	struct sched_cfg cfg = fixture_cfg(mode);

	cfg.capacity = cap;
	return fixture_new(&cfg, 0);
}

/* A client on GPU A that reports `total` bytes and a footprint in GiB. */
static struct sched_client *cl(struct sched *s, uint64_t total, uint64_t fp)
{
	struct sched_cred cred = { 100, 1000, 1000 };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	assert_int_equal(sched_attach(s, c, GPU_A, total), 0);
	assert_int_equal(sched_footprint(s, c, GPU_A, fp * GiB, 0), 0);
	return c;
}

static enum sched_state st(const struct sched_client *c)
{
	return sched_state_of(c, GPU_A);
}

static uint64_t capacity(struct sched *s)
{
	struct sched_gpu_info gi;

	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	return gi.capacity;
}

/* The first client could not read the total (0): a later one that can
 * gives the GPU its capacity, and co-running starts. */
static void test_total_learned_later(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *a = cl(s, 0, 4), *b;
	(void)state;

	sched_request(s, a, GPU_A);
	b = cl(s, 10 * GiB, 4);
	assert_int_equal(capacity(s), 10 * GiB);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	assert_null(out_msg(s, VS_MSG_DROP, a));
	sched_free(s);
}

/* A report of the GPU's memory binds only the client that made it: a
 * smaller one drops nobody and only keeps its sender from joining a
 * group that does not fit its view; a larger one lets nobody else
 * co-run beyond their own view. */
static void test_total_claim_binds_its_sender(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *a = cl(s, 10 * GiB, 4), *b = cl(s, 10 * GiB, 4);
	struct sched_client *big, *small;
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_out_clear(s);
	big = cl(s, 64 * GiB, 4);
	assert_int_equal(capacity(s), 10 * GiB);
	small = cl(s, 1, 0);
	assert_int_equal(capacity(s), 10 * GiB);
	assert_null(out_msg(s, VS_MSG_DROP, a));
	assert_null(out_msg(s, VS_MSG_DROP, b));
	/* a and b hold 8 GiB of their 10 GiB view: 4 more do not fit,
	 * whatever big says; small does not fit its own 1-byte view. */
	sched_request(s, big, GPU_A);
	sched_request(s, small, GPU_A);
	assert_int_equal(st(big), SCHED_ST_WAITING);
	assert_int_equal(st(small), SCHED_ST_WAITING);
	sched_released(s, a, GPU_A);
	sched_released(s, b, GPU_A);
	assert_int_equal(st(big), SCHED_ST_HOLDING);
	assert_int_equal(st(small), SCHED_ST_WAITING);
	/* The liar's view leaves with it: a and b run side by side again. */
	sched_client_del(s, small);
	sched_client_del(s, big);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_free(s);
}

static uint64_t driver_total(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	(void)arg;
	return memcmp(uuid, GPU_A, VS_UUID_LEN) == 0 ? 10 * GiB : 0;
}

/* The driver's report of the GPU's memory replaces every claim, capped by
 * the default capacity; a GPU the driver does not know falls back to the
 * claims. */
static void test_driver_total_trusted(void **state)
{
	struct sched_cfg cfg;
	struct sched_gpu_info gi;
	struct sched *s;
	struct sched_client *a, *b, *c;
	(void)state;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_AUTO;
	cfg.total_fn = driver_total;
	fake_now = 0;
	s = sched_new(&cfg, fake_clock, NULL);
	a = cl(s, 1, 4);          /* lies low */
	b = cl(s, 1ull << 50, 4); /* lies high */
	c = cl(s, 64 * GiB, 4);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	sched_request(s, c, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	assert_int_equal(st(c), SCHED_ST_WAITING); /* 12 GiB > 10 GiB */
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_true(gi.capacity == 10 * GiB && gi.trusted);
	assert_true(gi.driver_total == 10 * GiB);
	assert_int_equal(sched_attach(s, a, GPU_B, 3 * GiB), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_B), &gi);
	assert_true(gi.capacity == 3 * GiB && !gi.trusted);
	sched_free(s);
}

/* A capacity configured for the GPU itself is trusted: every client is
 * scheduled against it, whatever it reports. */
static void test_configured_capacity_trusted(void **state)
{
	struct sched_gpu_cfg gc;
	struct sched_cfg cfg;
	struct sched *s;
	struct sched_client *a, *b;
	(void)state;

	memset(&gc, 0, sizeof(gc));
	memcpy(gc.uuid, GPU_A, VS_UUID_LEN);
	gc.set = SCHED_GCFG_CAP;
	gc.capacity = 10 * GiB;
	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_AUTO;
	cfg.gpus = &gc;
	cfg.n_gpus = 1;
	fake_now = 0;
	s = sched_new(&cfg, fake_clock, NULL);
	a = cl(s, 1, 4);
	b = cl(s, 1, 4);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	assert_int_equal(capacity(s), 10 * GiB);
	sched_free(s);
}

/* Capacity configured below one client's footprint: that client is still
 * granted, alone and told so; even a client of no footprint waits. */
static void test_larger_than_capacity_exclusive(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 2 * GiB);
	struct sched_client *a = cl(s, 10 * GiB, 5), *z = cl(s, 10 * GiB, 0);
	struct sched_client *b = cl(s, 10 * GiB, 1);
	(void)state;

	sched_request(s, b, GPU_A);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, b)->u.grant.kind,
			 VS_GRANT_SHARED);
	sched_request(s, a, GPU_A);
	assert_int_equal(st(a), SCHED_ST_WAITING);
	sched_released(s, b, GPU_A);
	assert_int_equal(st(a), SCHED_ST_HOLDING);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.kind,
			 VS_GRANT_EXCLUSIVE);
	sched_request(s, z, GPU_A);
	assert_int_equal(st(z), SCHED_ST_WAITING);
	sched_free(s);
}

/* FCFS: a big waiter is not passed by a stream of small late-comers that
 * would fit, and it runs once the holder's quantum is over. */
static void test_no_starvation_by_small(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *h = cl(s, 10 * GiB, 5), *w = cl(s, 10 * GiB, 8);
	struct sched_client *small[20];
	(void)state;

	sched_request(s, h, GPU_A);
	sched_request(s, w, GPU_A);
	for (int i = 0; i < 20; i++) {
		fake_now += 40;
		small[i] = cl(s, 10 * GiB, 1);
		sched_request(s, small[i], GPU_A);
		assert_int_equal(st(small[i]), SCHED_ST_WAITING);
		sched_tick(s);
	}
	sched_out_clear(s);
	fake_now = 1000;
	sched_tick(s);
	assert_int_equal(out_msg(s, VS_MSG_DROP, h)->u.drop.reason,
			 VS_DROP_QUANTUM);
	sched_out_clear(s);
	sched_released(s, h, GPU_A);
	assert_int_equal(st(w), SCHED_ST_HOLDING);
	/* 8 + 1 + 1 fit in 10: the next two in line, no more. */
	assert_int_equal(st(small[0]), SCHED_ST_HOLDING);
	assert_int_equal(st(small[1]), SCHED_ST_HOLDING);
	assert_int_equal(st(small[2]), SCHED_ST_WAITING);
	sched_free(s);
}

/* A waiter that grows keeps its place; one that shrinks is admitted. */
static void test_waiter_footprint_changes(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *h = cl(s, 10 * GiB, 4), *w = cl(s, 10 * GiB, 4);
	struct sched_client *x = cl(s, 10 * GiB, 1);
	(void)state;

	sched_request(s, h, GPU_A);
	sched_footprint(s, w, GPU_A, 9 * GiB, 0);
	sched_request(s, w, GPU_A);
	sched_request(s, x, GPU_A);
	assert_int_equal(st(w), SCHED_ST_WAITING);
	assert_int_equal(st(x), SCHED_ST_WAITING);
	sched_footprint(s, w, GPU_A, 12 * GiB, 0);
	assert_int_equal(st(w), SCHED_ST_WAITING);
	sched_footprint(s, w, GPU_A, 5 * GiB, 0);
	assert_int_equal(st(w), SCHED_ST_HOLDING);
	assert_int_equal(st(x), SCHED_ST_HOLDING);
	sched_free(s);
}

/* A holder skipped as unresponsive comes back: its late RELEASED is
 * accepted once, and it queues again behind those who waited. */
static void test_revoked_comes_back(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = cl(s, 10 * GiB, 1), *b = cl(s, 10 * GiB, 1);
	struct sched_client *c = cl(s, 10 * GiB, 1);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	fake_now = 1000;
	sched_tick(s);
	fake_now = 1500;
	sched_tick(s);
	assert_int_equal(st(a), SCHED_ST_IDLE);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_request(s, c, GPU_A);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(sched_released(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	sched_released(s, b, GPU_A);
	assert_int_equal(st(c), SCHED_ST_HOLDING);
	assert_int_equal(st(a), SCHED_ST_WAITING);
	sched_free(s);
}

/* One client holds two GPUs; its disconnect hands both on. */
static void test_two_gpus_held_then_gone(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_cred cred = { 1, 0, 0 };
	struct sched_client *a = sched_client_new(s, &cred, "a", NULL);
	struct sched_client *b = sched_client_new(s, &cred, "b", NULL);
	(void)state;

	for (int i = 0; i < 2; i++) {
		const uint8_t *u = i ? GPU_B : GPU_A;

		sched_attach(s, a, u, 10 * GiB);
		sched_attach(s, b, u, 10 * GiB);
		sched_request(s, a, u);
		sched_request(s, b, u);
		assert_int_equal(sched_state_of(b, u), SCHED_ST_WAITING);
	}
	sched_client_del(s, a);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(b, GPU_B), SCHED_ST_HOLDING);
	sched_free(s);
}

/* Made-up UUIDs fill the GPU table; once their clients are gone, a real
 * GPU still gets a place (the slot of a GPU nobody uses). */
static void test_gpu_table_full(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_cred cred = { 1, 0, 0 };
	struct sched_client *fake[SCHED_MAX_GPUS / SCHED_MAX_CLIENT_GPUS];
	struct sched_client *real = sched_client_new(s, &cred, "real", NULL);
	size_t nf = sizeof(fake) / sizeof(fake[0]);
	(void)state;

	for (size_t i = 0; i < nf; i++) {
		fake[i] = sched_client_new(s, &cred, "fake", NULL);
		attach_made_up(s, fake[i], (unsigned)i, GiB);
	}
	assert_int_equal(sched_gpu_count(s), SCHED_MAX_GPUS);
	assert_int_equal(sched_attach(s, real, GPU_A, 10 * GiB), VS_E_FULL);
	sched_client_del(s, fake[3]);
	assert_int_equal(sched_attach(s, real, GPU_A, 10 * GiB), 0);
	assert_int_equal(sched_gpu_count(s), SCHED_MAX_GPUS);
	assert_non_null(sched_gpu_find(s, GPU_A));
	assert_int_equal(sched_request(s, real, GPU_A), 0);
	assert_int_equal(st(real), SCHED_ST_HOLDING);
	assert_int_equal(capacity(s), 10 * GiB);
	sched_free(s);
}

/* 16 uids attaching 64 made-up GPUs each fill the records made-up GPUs
 * share; a GPU the configuration names (B) or NVML knows (A) still
 * attaches, and another made-up one is refused. Once made-up GPUs lose
 * their clients, a new one takes one of their records, never a real
 * GPU's. */
static void test_gpu_table_vouched(void **state)
{
	struct sched_client *fake[SCHED_MAX_GPUS / SCHED_MAX_CLIENT_GPUS];
	struct sched_cred cred = { 1, 0, 0 }, rcred = { 2, 4242, 4242 };
	size_t nf = sizeof(fake) / sizeof(fake[0]);
	uint8_t u[VS_UUID_LEN];
	struct sched_client *real, *late;
	struct sched_gpu_cfg gc;
	struct sched_cfg cfg;
	struct sched *s;
	(void)state;

	memset(&gc, 0, sizeof(gc));
	memcpy(gc.uuid, GPU_B, VS_UUID_LEN);
	gc.set = SCHED_GCFG_MODE;
	gc.mode = VS_MODE_ON;
	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	cfg.uid_gpus = SCHED_MAX_CLIENT_GPUS;
	cfg.gpus = &gc;
	cfg.n_gpus = 1;
	cfg.total_fn = driver_total;
	s = sched_new(&cfg, fake_clock, NULL);
	for (size_t i = 0; i < nf; i++) {
		cred.uid = 1000 + (uint32_t)i;
		fake[i] = sched_client_new(s, &cred, "fake", NULL);
		attach_made_up(s, fake[i], (unsigned)i, GiB);
	}
	assert_int_equal(sched_gpu_count(s), SCHED_MAX_GPUS);
	real = sched_client_new(s, &rcred, "real", NULL);
	made_up_gpu(u, 0xfe, SCHED_MAX_CLIENT_GPUS - 1);
	assert_int_equal(sched_attach(s, real, u, GiB), VS_E_FULL);
	assert_int_equal(sched_attach(s, real, GPU_A, GiB), 0);
	assert_int_equal(sched_attach(s, real, GPU_B, GiB), 0);
	assert_int_equal(sched_gpu_count(s), SCHED_MAX_GPUS + 2);
	assert_int_equal(sched_request(s, real, GPU_B), 0);
	assert_int_equal(sched_state_of(real, GPU_B), SCHED_ST_HOLDING);
	sched_client_del(s, real);
	sched_client_del(s, fake[0]);
	late = sched_client_new(s, &rcred, "late", NULL);
	for (int j = 0; j < SCHED_MAX_CLIENT_GPUS; j++) {
		made_up_gpu(u, 0xfe, (unsigned)j);
		assert_int_equal(sched_attach(s, late, u, GiB), 0);
	}
	assert_int_equal(sched_gpu_count(s), SCHED_MAX_GPUS + 2);
	assert_non_null(sched_gpu_find(s, GPU_A));
	assert_non_null(sched_gpu_find(s, GPU_B));
	sched_free(s);
}

/* A reload that changes the capacity setting applies it to the GPUs
 * already known: what no longer fits drops, what fits again runs. */
static void test_reconfigure_capacity(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *a = cl(s, 10 * GiB, 4), *b = cl(s, 10 * GiB, 4);
	struct sched_cfg cfg, old;
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_out_clear(s);
	memset(&old, 0, sizeof(old));
	old.tq_ms = 1000;
	old.mode = VS_MODE_AUTO;
	cfg = old;
	cfg.capacity = 6 * GiB;
	assert_int_equal(sched_reconfigure(s, &old, &cfg), 0);
	assert_int_equal(capacity(s), 6 * GiB);
	assert_int_equal(out_msg(s, VS_MSG_DROP, b)->u.drop.reason,
			 VS_DROP_CAPACITY);
	assert_null(out_msg(s, VS_MSG_DROP, a));
	sched_released(s, b, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_WAITING);
	/* Unchanged setting: nothing happens. */
	sched_out_clear(s);
	assert_int_equal(sched_reconfigure(s, &cfg, &cfg), 0);
	assert_int_equal(sched_out_count(s), 0);
	old = cfg;
	cfg.capacity = 0;
	assert_int_equal(sched_reconfigure(s, &old, &cfg), 0);
	assert_int_equal(capacity(s), 10 * GiB);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_free(s);
}

/* A reload applies a quantum or mode whose value for a GPU changed in the
 * file (its own entry or the default), and keeps what an admin set for
 * settings the file left alone. */
static void test_reconfigure_settings(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 0);
	struct sched_client *a = cl(s, 10 * GiB, 4);
	struct sched_gpu_cfg gc;
	struct sched_gpu_info gi;
	struct sched_cfg cfg, old;
	(void)state;

	sched_request(s, a, GPU_A);
	memset(&old, 0, sizeof(old));
	old.tq_ms = 1000;
	old.mode = VS_MODE_AUTO;
	/* An admin sets the mode; the file changes only GPU A's quantum. */
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, GPU_A,
					VS_MODE_ON), 1);
	memset(&gc, 0, sizeof(gc));
	memcpy(gc.uuid, GPU_A, VS_UUID_LEN);
	gc.set = SCHED_GCFG_TQ;
	gc.tq_ms = 7000;
	cfg = old;
	cfg.gpus = &gc;
	cfg.n_gpus = 1;
	sched_out_clear(s);
	assert_int_equal(sched_reconfigure(s, &old, &cfg), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_int_equal(gi.tq_ms, 7000);
	assert_int_equal(gi.mode, VS_MODE_ON);
	/* Then the default mode changes in the file: every GPU gets it. */
	old = cfg;
	cfg.mode = VS_MODE_OFF;
	assert_int_equal(sched_reconfigure(s, &old, &cfg), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_int_equal(gi.mode, VS_MODE_OFF);
	assert_non_null(out_msg(s, VS_MSG_MODE, a));
	sched_free(s);
}

static int n_unresponsive(struct sched *s)
{
	int n = 0;

	for (size_t i = 0; i < sched_out_count(s); i++)
		n += sched_out_at(s, i)->kind == SCHED_OUT_UNRESPONSIVE;
	return n;
}

/* Messages that cross on the wire: a RELEASED that crosses a hard DROP
 * ends the grant (no hang is reported later); one that crosses a GRANT
 * (the waiter gave up) gives that grant back and the next runs. */
static void test_crossing_messages(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = cl(s, 10 * GiB, 1), *b = cl(s, 10 * GiB, 1);
	struct sched_client *c = cl(s, 10 * GiB, 1);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	fake_now = 1000;
	sched_tick(s);                 /* DROP QUANTUM to a ... */
	assert_int_equal(sched_released(s, a, GPU_A), 0); /* ... crossed */
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	sched_request(s, c, GPU_A);
	sched_out_clear(s);
	fake_now = 1600;               /* past a's grace */
	sched_tick(s);
	assert_int_equal(n_unresponsive(s), 0);
	/* b's quantum: c is granted when b releases; c gave up meanwhile. */
	fake_now = 2000;
	sched_tick(s);
	sched_released(s, b, GPU_A);
	assert_int_equal(st(c), SCHED_ST_HOLDING);
	sched_request(s, a, GPU_A);
	assert_int_equal(sched_released(s, c, GPU_A), 0);
	assert_int_equal(st(c), SCHED_ST_IDLE);
	assert_int_equal(st(a), SCHED_ST_HOLDING);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_total_learned_later),
		cmocka_unit_test(test_total_claim_binds_its_sender),
		cmocka_unit_test(test_configured_capacity_trusted),
		cmocka_unit_test(test_driver_total_trusted),
		cmocka_unit_test(test_larger_than_capacity_exclusive),
		cmocka_unit_test(test_no_starvation_by_small),
		cmocka_unit_test(test_waiter_footprint_changes),
		cmocka_unit_test(test_revoked_comes_back),
		cmocka_unit_test(test_two_gpus_held_then_gone),
		cmocka_unit_test(test_gpu_table_full),
		cmocka_unit_test(test_gpu_table_vouched),
		cmocka_unit_test(test_reconfigure_capacity),
		cmocka_unit_test(test_crossing_messages),
		cmocka_unit_test(test_reconfigure_settings),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
