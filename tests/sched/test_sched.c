/*
 * Policy transitions, driven by a fake clock: every rule of the FCFS
 * quantum queue, the three modes, drops, grace and the admin setters.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"

static struct sched *mk(uint32_t mode)
{
	struct sched_cfg cfg = fixture_cfg(mode);

	return fixture_new(&cfg, 0);
}

/* A client attached to GPU A (10 GiB) with a footprint in GiB. */
static struct sched_client *client(struct sched *s, uint64_t fp_gib)
{
	struct sched_cred cred = { 100, 1000, 1000 };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	assert_int_equal(sched_attach(s, c, GPU_A, 10 * GiB), 0);
	if (fp_gib)
		assert_int_equal(sched_footprint(s, c, GPU_A, fp_gib * GiB, 0), 0);
	return c;
}

/* Count outbox entries of a type for a client (drop: with that reason). */
static int count(struct sched *s, uint16_t type, const struct sched_client *c,
		 uint32_t reason)
{
	int n = 0;

	for (size_t i = 0; i < sched_out_count(s); i++) {
		const struct sched_out *o = sched_out_at(s, i);

		if (o->kind != SCHED_OUT_MSG || o->type != type)
			continue;
		if (c != NULL && o->client_id != sched_client_id(c))
			continue;
		if (type == VS_MSG_DROP && reason && o->u.drop.reason != reason)
			continue;
		n++;
	}
	return n;
}

static enum sched_state st(const struct sched_client *c)
{
	return sched_state_of(c, GPU_A);
}

static void test_off_grants_everyone(void **state)
{
	struct sched *s = mk(VS_MODE_OFF);
	struct sched_client *a = client(s, 8), *b = client(s, 8);
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 2);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, b)->u.grant.kind, VS_GRANT_SHARED);
	/* 16 GiB of footprints on a 10 GiB GPU: the grant says so. */
	assert_int_equal(out_msg(s, VS_MSG_GRANT, b)->u.grant.flags, VS_GRANTF_OVERSUB);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	fake_now = 1000000;
	sched_tick(s);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);
	sched_free(s);
}

static void test_on_one_holder_fcfs(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0), *c = client(s, 0);
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.kind, VS_GRANT_EXCLUSIVE);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.tq_ms, 1000);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.flags, 0);
	sched_out_clear(s);
	/* Nobody waits: no drop, no deadline. */
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);

	fake_now = 10;
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(st(b), SCHED_ST_WAITING);
	/* The holder learns at once that someone waits. */
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	sched_out_clear(s);
	fake_now = 20;
	assert_int_equal(sched_request(s, c, GPU_A), 0);
	assert_int_equal(sched_out_count(s), 0); /* told once per grant */

	fake_now = 30;
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(count(s, VS_MSG_GRANT, b, 0), 1);
	assert_int_equal(count(s, VS_MSG_GRANT, c, 0), 0);
	/* c still waits behind b, so b is told right away too. */
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_IDLE), 1);
	assert_int_equal(st(a), SCHED_ST_IDLE);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	assert_int_equal(st(c), SCHED_ST_WAITING);
	sched_free(s);
}

static void test_quantum_drop(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(sched_next_deadline(s), 1000);
	sched_out_clear(s);
	fake_now = 999;
	sched_tick(s);
	assert_int_equal(sched_out_count(s), 0);
	fake_now = 1000;
	sched_tick(s);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 1);
	/* Now the grace period runs. */
	assert_int_equal(sched_next_deadline(s), 1500);
	sched_out_clear(s);
	fake_now = 1100;
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(count(s, VS_MSG_GRANT, b, 0), 1);
	/* b's quantum starts at its grant. */
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_next_deadline(s), 2100);
	sched_free(s);
}

static void test_quantum_renews_while_alone(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	(void)state;

	sched_request(s, a, GPU_A);
	fake_now = 2500; /* alone for two and a half quanta */
	sched_tick(s);
	sched_request(s, b, GPU_A);
	/* The window that contains the arrival ends at 3000. */
	assert_int_equal(sched_next_deadline(s), 3000);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 0);
	fake_now = 3000;
	sched_tick(s);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 1);
	sched_free(s);
}

static void test_auto_fcfs_prefix(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO);
	struct sched_client *a = client(s, 4), *b = client(s, 4);
	struct sched_client *c = client(s, 4), *d = client(s, 1);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	/* 8 of 10 GiB: both run, nobody waits, nobody is told to drop. */
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 2);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.kind, VS_GRANT_SHARED);
	sched_out_clear(s);
	sched_request(s, c, GPU_A);
	/* d would fit, but FCFS: it may not pass c. */
	sched_request(s, d, GPU_A);
	assert_int_equal(st(c), SCHED_ST_WAITING);
	assert_int_equal(st(d), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_IDLE), 1);
	sched_out_clear(s);
	sched_released(s, a, GPU_A);
	/* b (4) + c (4) + d (1) = 9 fit. */
	assert_int_equal(st(c), SCHED_ST_HOLDING);
	assert_int_equal(st(d), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	sched_free(s);
}

static void test_auto_all_fit_no_deadline(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO);
	struct sched_client *cl[5];
	(void)state;

	for (int i = 0; i < 5; i++) {
		cl[i] = client(s, 2);
		sched_request(s, cl[i], GPU_A);
	}
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 5);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	fake_now = 100000;
	sched_tick(s);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 0);
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);
	sched_free(s);
}

static void test_auto_big_client_runs_alone(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO);
	struct sched_client *a = client(s, 30), *b = client(s, 1);
	(void)state;

	/* Larger than the GPU: still granted when alone, with prefetch. */
	sched_request(s, a, GPU_A);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, a)->u.grant.flags, VS_GRANTF_OVERSUB);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_WAITING);
	sched_free(s);
}

static void test_footprint_growth_drops_last(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO);
	struct sched_client *a = client(s, 3), *b = client(s, 3), *c = client(s, 3);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	sched_request(s, c, GPU_A);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 3);
	sched_out_clear(s);
	fake_now = 50;
	/* a grows to 6: 6 + 3 fit, the third member does not. */
	assert_int_equal(sched_footprint(s, a, GPU_A, 5 * GiB, 1 * GiB), 0);
	assert_int_equal(count(s, VS_MSG_DROP, c, VS_DROP_CAPACITY), 1);
	assert_int_equal(count(s, VS_MSG_DROP, NULL, 0), 1);
	assert_int_equal(sched_next_deadline(s), 550);
	sched_out_clear(s);
	sched_released(s, c, GPU_A);
	assert_int_equal(sched_out_count(s), 0);
	/* c asks again and waits: a and b are told. */
	sched_request(s, c, GPU_A);
	assert_int_equal(st(c), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_IDLE), 1);
	sched_out_clear(s);
	/* A shrinking footprint lets the waiter in. */
	sched_footprint(s, a, GPU_A, 1 * GiB, 0);
	assert_int_equal(count(s, VS_MSG_GRANT, c, 0), 1);
	sched_free(s);
}

static void test_disconnect_hands_on(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0), *c = client(s, 0);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	sched_request(s, c, GPU_A);
	sched_out_clear(s);
	sched_client_del(s, b); /* a waiter leaves: c moves up */
	assert_int_equal(sched_out_count(s), 0);
	sched_client_del(s, a); /* the holder dies: c at once */
	assert_int_equal(count(s, VS_MSG_GRANT, c, 0), 1);
	assert_int_equal(sched_client_count(s), 1);
	sched_out_clear(s);
	/* The contention is over: no quantum deadline for c. */
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);
	sched_free(s);
}

static void test_grace_revokes(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	const struct sched_out *o;
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	fake_now = 1000;
	sched_tick(s);
	sched_out_clear(s);
	fake_now = 1499;
	sched_tick(s);
	assert_int_equal(sched_out_count(s), 0);
	fake_now = 1500;
	sched_tick(s);
	o = sched_out_at(s, 0);
	assert_non_null(o);
	assert_int_equal(o->kind, SCHED_OUT_UNRESPONSIVE);
	assert_int_equal(o->client_id, sched_client_id(a));
	assert_int_equal(o->revoked, 1);
	assert_int_equal(count(s, VS_MSG_GRANT, b, 0), 1);
	assert_int_equal(st(a), SCHED_ST_IDLE);
	/* a's late release is accepted once, harmlessly. */
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(st(b), SCHED_ST_HOLDING);
	assert_int_equal(sched_released(s, a, GPU_A), VS_E_STATE);
	sched_free(s);
}

static void test_grace_without_skip(void **state)
{
	struct sched_cfg cfg = fixture_cfg(VS_MODE_ON);
	struct sched *s;
	struct sched_client *a, *b;
	(void)state;

	cfg.skip_unresponsive = 0;
	fake_now = 0;
	s = sched_new(&cfg, fake_clock, NULL);
	a = client(s, 0);
	b = client(s, 0);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	fake_now = 1000;
	sched_tick(s);
	sched_out_clear(s);
	fake_now = 1500;
	sched_tick(s);
	assert_int_equal(sched_out_count(s), 1);
	assert_int_equal(sched_out_at(s, 0)->kind, SCHED_OUT_UNRESPONSIVE);
	assert_int_equal(sched_out_at(s, 0)->revoked, 0);
	assert_int_equal(st(a), SCHED_ST_HOLDING);
	assert_int_equal(st(b), SCHED_ST_WAITING);
	/* Reported once, then no more deadlines. */
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);
	sched_free(s);
}

static void test_mode_changes(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0), *c = client(s, 0);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	sched_out_clear(s);
	/* off: everyone runs at once, every attached client hears of it. */
	assert_int_equal(sched_set_mode(s, VS_TARGET_INDEX, 0, NULL, VS_MODE_OFF), 1);
	assert_int_equal(count(s, VS_MSG_MODE, NULL, 0), 3);
	assert_int_equal(out_msg(s, VS_MSG_MODE, c)->u.mode.mode, VS_MODE_OFF);
	assert_int_equal(count(s, VS_MSG_GRANT, b, 0), 1);
	sched_request(s, c, GPU_A);
	assert_int_equal(st(c), SCHED_ST_HOLDING);
	sched_out_clear(s);
	/* Same mode again: nothing happens. */
	assert_int_equal(sched_set_mode(s, 0, 0, GPU_A, VS_MODE_OFF), 1);
	assert_int_equal(sched_out_count(s), 0);
	/* on: the first holder keeps the GPU, the others are dropped. */
	fake_now = 10;
	sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_ON);
	assert_int_equal(count(s, VS_MSG_MODE, NULL, 0), 3);
	assert_int_equal(count(s, VS_MSG_DROP, a, 0), 0);
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_MODE), 1);
	assert_int_equal(count(s, VS_MSG_DROP, c, VS_DROP_MODE), 1);
	assert_int_equal(sched_next_deadline(s), 510);
	sched_out_clear(s);
	sched_released(s, b, GPU_A);
	sched_released(s, c, GPU_A);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	sched_request(s, b, GPU_A);
	assert_int_equal(st(b), SCHED_ST_WAITING);
	/* off again: pending drops are forgotten, the waiter runs. */
	sched_out_clear(s);
	sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_OFF);
	assert_int_equal(count(s, VS_MSG_GRANT, b, 0), 1);
	assert_true(sched_next_deadline(s) == SCHED_NO_DEADLINE);
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, NULL, 7), VS_E_INVAL);
	sched_free(s);
}

static void test_auto_from_off_drops_what_does_not_fit(void **state)
{
	struct sched *s = mk(VS_MODE_OFF);
	struct sched_client *a = client(s, 6), *b = client(s, 6);
	(void)state;

	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	sched_out_clear(s);
	sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_AUTO);
	assert_int_equal(count(s, VS_MSG_DROP, a, 0), 0);
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_MODE), 1);
	sched_free(s);
}

static void test_set_tq(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	struct sched_gpu_info gi;
	(void)state;

	assert_int_equal(sched_set_tq(s, VS_TARGET_ALL, 0, NULL, 0), VS_E_INVAL);
	assert_int_equal(sched_set_tq(s, VS_TARGET_ALL, 0, NULL, 86401), VS_E_INVAL);
	assert_int_equal(sched_set_tq(s, VS_TARGET_INDEX, 1, NULL, 5), VS_E_NOGPU);
	assert_int_equal(sched_set_tq(s, 0, 0, GPU_B, 5), VS_E_NOGPU);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_A);
	assert_int_equal(sched_next_deadline(s), 1000);
	/* Applies at once to the running quantum. */
	assert_int_equal(sched_set_tq(s, 0, 0, GPU_A, 3), 1);
	assert_int_equal(sched_next_deadline(s), 3000);
	/* A change to all GPUs is the default for new ones too. */
	assert_int_equal(sched_set_tq(s, VS_TARGET_ALL, 0, NULL, 7), 1);
	assert_int_equal(sched_attach(s, a, GPU_B, GiB), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_B), &gi);
	assert_int_equal(gi.tq_ms, 7000);
	assert_int_equal(gi.index, 1);
	sched_free(s);
}

static void test_config_overrides(void **state)
{
	struct sched_cfg cfg = fixture_cfg(VS_MODE_AUTO);
	struct sched_gpu_cfg gc[1];
	struct sched_gpu_info gi;
	struct sched *s;
	struct sched_client *c;
	struct sched_cred cred = { 1, 0, 0 };
	(void)state;

	memset(gc, 0, sizeof(gc));
	memcpy(gc[0].uuid, GPU_B, VS_UUID_LEN);
	gc[0].set = SCHED_GCFG_MODE | SCHED_GCFG_CAP | SCHED_GCFG_TQ;
	gc[0].mode = VS_MODE_ON;
	gc[0].capacity = 2 * GiB;
	gc[0].tq_ms = 4000;
	cfg.capacity = 20 * GiB;
	cfg.gpus = gc;
	cfg.n_gpus = 1;
	s = sched_new(&cfg, fake_clock, NULL);
	c = sched_client_new(s, &cred, NULL, NULL);
	sched_attach(s, c, GPU_A, 10 * GiB);
	sched_attach(s, c, GPU_B, 10 * GiB);
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_true(gi.capacity == 10 * GiB); /* a cap above the memory */
	assert_int_equal(gi.mode, VS_MODE_AUTO);
	sched_gpu_info(sched_gpu_find(s, GPU_B), &gi);
	assert_true(gi.capacity == 2 * GiB);
	assert_int_equal(gi.mode, VS_MODE_ON);
	assert_int_equal(gi.tq_ms, 4000);
	sched_free(s);
}

static void test_bad_requests(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_B), VS_E_NOGPU);
	assert_int_equal(sched_released(s, a, GPU_B), VS_E_NOGPU);
	assert_int_equal(sched_footprint(s, a, GPU_B, 1, 1), VS_E_NOGPU);
	assert_int_equal(sched_released(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), VS_E_STATE);
	/* Attaching twice is harmless. */
	assert_int_equal(sched_attach(s, a, GPU_A, GiB), 0);
	assert_int_equal(sched_gpu_count(s), 1);
	/* Made-up GPUs cannot grow the tables without bound. */
	for (int i = 1; i < SCHED_MAX_CLIENT_GPUS; i++) {
		uint8_t u[VS_UUID_LEN] = { 0x55, (uint8_t)i };

		assert_int_equal(sched_attach(s, a, u, GiB), 0);
	}
	{
		uint8_t u[VS_UUID_LEN] = { 0x66 };

		assert_int_equal(sched_attach(s, a, u, GiB), VS_E_LIMIT);
		assert_int_equal(sched_gpu_count(s), SCHED_MAX_CLIENT_GPUS);
	}
	/* A waiter may give up. */
	sched_out_clear(s);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_int_equal(st(b), SCHED_ST_IDLE);
	assert_int_equal(sched_out_count(s), 0);
	sched_free(s);
}

static void test_two_gpus_independent(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 0), *b = client(s, 0);
	(void)state;

	sched_attach(s, a, GPU_B, GiB);
	sched_attach(s, b, GPU_B, GiB);
	sched_request(s, a, GPU_A);
	sched_request(s, b, GPU_B);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 2);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(b, GPU_B), SCHED_ST_HOLDING);
	sched_request(s, a, GPU_B);
	assert_int_equal(sched_state_of(a, GPU_B), SCHED_ST_WAITING);
	sched_client_del(s, b);
	assert_int_equal(sched_state_of(a, GPU_B), SCHED_ST_HOLDING);
	sched_free(s);
}

static void test_views(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *a = client(s, 2), *b = client(s, 3);
	struct sched_member_info mi;
	struct sched_gpu_info gi;
	struct sched_client_info ci;
	const struct sched_gpu *g;
	(void)state;

	fake_now = 100;
	sched_request(s, a, GPU_A);
	fake_now = 150;
	sched_request(s, b, GPU_A);
	fake_now = 400;
	g = sched_gpu_at(s, 0);
	sched_gpu_info(g, &gi);
	assert_true(gi.footprint == 5 * GiB);
	assert_true(gi.held == 2 * GiB);
	assert_int_equal(gi.n_holders, 1);
	assert_int_equal(gi.n_waiting, 1);
	assert_ptr_equal(sched_gpu_holder(g, 0), a);
	assert_null(sched_gpu_holder(g, 1));
	assert_ptr_equal(sched_gpu_waiter(g, 0), b);
	assert_ptr_equal(sched_client_first(s), a);
	assert_ptr_equal(sched_client_next(s, a), b);
	assert_null(sched_client_next(s, b));
	sched_client_info(b, &ci);
	assert_int_equal(ci.cred.pid, 100);
	assert_string_equal(ci.label, "job");
	assert_int_equal(sched_client_gpu(s, a, 0, &mi), 0);
	assert_int_equal(mi.held_ms, 300);
	assert_int_equal(mi.state, SCHED_ST_HOLDING);
	assert_int_equal(sched_client_gpu(s, b, 0, &mi), 0);
	assert_int_equal(mi.waited_ms, 250);
	assert_int_equal(sched_client_gpu(s, b, 1, &mi), -1);
	/* A huge report is clamped, not overflowed. */
	sched_footprint(s, b, GPU_A, UINT64_MAX, UINT64_MAX);
	sched_gpu_info(g, &gi);
	assert_true(gi.footprint == SCHED_FP_MAX + 2 * GiB);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_grants_everyone),
		cmocka_unit_test(test_on_one_holder_fcfs),
		cmocka_unit_test(test_quantum_drop),
		cmocka_unit_test(test_quantum_renews_while_alone),
		cmocka_unit_test(test_auto_fcfs_prefix),
		cmocka_unit_test(test_auto_all_fit_no_deadline),
		cmocka_unit_test(test_auto_big_client_runs_alone),
		cmocka_unit_test(test_footprint_growth_drops_last),
		cmocka_unit_test(test_disconnect_hands_on),
		cmocka_unit_test(test_grace_revokes),
		cmocka_unit_test(test_grace_without_skip),
		cmocka_unit_test(test_mode_changes),
		cmocka_unit_test(test_auto_from_off_drops_what_does_not_fit),
		cmocka_unit_test(test_set_tq),
		cmocka_unit_test(test_config_overrides),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_two_gpus_independent),
		cmocka_unit_test(test_views),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
