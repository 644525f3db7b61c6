/*
 * Per-uid limits of the policy: distinct GPUs attached and requests
 * waiting, refused with VS_E_LIMIT before anything changes (a refused
 * made-up GPU takes no record); uid 0 is exempt; a full GPU table says
 * VS_E_FULL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"


static struct sched *mk(uint32_t uid_gpus, uint32_t uid_requests)
{
	struct sched_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	cfg.grace_ms = 500;
	cfg.uid_gpus = uid_gpus;
	cfg.uid_requests = uid_requests;
	return sched_new(&cfg, fake_clock, NULL);
}

static struct sched_client *cl(struct sched *s, uint32_t uid)
{
	struct sched_cred cred = { 1, uid, uid };

	return sched_client_new(s, &cred, "t", NULL);
}

static void gpu(uint8_t u[VS_UUID_LEN], int i)
{
	memset(u, 0, VS_UUID_LEN);
	u[0] = (uint8_t)(i + 1);
}

static void test_uid_gpus(void **state)
{
	struct sched *s = mk(2, 0);
	struct sched_client *a = cl(s, 1000), *b = cl(s, 1000);
	struct sched_client *other = cl(s, 1001), *root = cl(s, 0);
	struct sched_uid_info ui;
	uint8_t u[VS_UUID_LEN];
	(void)state;

	gpu(u, 0);
	assert_int_equal(sched_attach(s, a, u, 1), 0);
	assert_int_equal(sched_attach(s, b, u, 1), 0); /* the same GPU */
	gpu(u, 1);
	assert_int_equal(sched_attach(s, b, u, 1), 0);
	gpu(u, 2);
	assert_int_equal(sched_attach(s, a, u, 1), VS_E_LIMIT);
	assert_null(sched_gpu_find(s, u));     /* no record for it */
	assert_int_equal(sched_attach(s, other, u, 1), 0);
	/* Now the GPU exists, but it is still a third one for uid 1000. */
	assert_int_equal(sched_attach(s, a, u, 1), VS_E_LIMIT);
	for (int i = 0; i < 10; i++) {
		gpu(u, 10 + i);
		assert_int_equal(sched_attach(s, root, u, 1), 0);
	}
	assert_int_equal(sched_uid_info(s, 1000, &ui), 0);
	assert_int_equal(ui.n_gpus, 2);
	assert_int_equal(ui.n_clients, 2);
	/* A uid's count falls when its last client of a GPU leaves. */
	sched_client_del(s, b);
	assert_int_equal(sched_uid_info(s, 1000, &ui), 0);
	assert_int_equal(ui.n_gpus, 1);
	gpu(u, 2);
	assert_int_equal(sched_attach(s, a, u, 1), 0);
	sched_client_del(s, a);
	assert_int_equal(sched_uid_info(s, 1000, &ui), -1);
	sched_free(s);
}

static void test_uid_requests(void **state)
{
	struct sched *s = mk(0, 2);
	struct sched_client *c[3], *root = cl(s, 0);
	struct sched_uid_info ui;
	uint8_t u[VS_UUID_LEN];
	(void)state;

	gpu(u, 0);
	assert_int_equal(sched_attach(s, root, u, 1), 0);
	assert_int_equal(sched_request(s, root, u), 0); /* holds */
	for (int i = 0; i < 3; i++) {
		c[i] = cl(s, 1000);
		assert_int_equal(sched_attach(s, c[i], u, 1), 0);
	}
	assert_int_equal(sched_request(s, c[0], u), 0);
	assert_int_equal(sched_request(s, c[1], u), 0);
	assert_int_equal(sched_request(s, c[2], u), VS_E_LIMIT);
	assert_int_equal(sched_state_of(c[2], u), SCHED_ST_IDLE);
	assert_int_equal(sched_uid_info(s, 1000, &ui), 0);
	assert_int_equal(ui.n_waiting, 2);
	/* A grant frees a place in the uid's queue. */
	assert_int_equal(sched_released(s, root, u), 0);
	assert_int_equal(sched_state_of(c[0], u), SCHED_ST_HOLDING);
	assert_int_equal(sched_request(s, c[2], u), 0);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uid_gpus),
		cmocka_unit_test(test_uid_requests),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
