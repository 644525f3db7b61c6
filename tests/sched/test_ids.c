/* Client ids (src/scheduler/policy/sched_id.c): in order from 1, and
 * after the 32-bit count wraps, never one a live client holds. The count is moved
 * near the wrap by setting the policy's next_id (sched_int.h), which
 * only a test does: 2^32 registrations take hours. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched_int.h"

static uint64_t no_clock(void *arg)
{
	(void)arg;
	return 0;
}

static struct sched *mk(void)
{
	struct sched_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	return sched_new(&cfg, no_clock, NULL);
}

static uint32_t new_id(struct sched *s, struct sched_client **out)
{
	struct sched_cred cred = { 1, 1000, 1000 };
	struct sched_client *c = sched_client_new(s, &cred, "x", NULL);

	assert_non_null(c);
	if (out != NULL)
		*out = c;
	return sched_client_id(c);
}

/* Fresh: 1, 2, 3... and across the wrap 0 is skipped. */
static void test_in_order(void **state)
{
	struct sched *s = mk();
	(void)state;

	assert_int_equal(new_id(s, NULL), 1);
	assert_int_equal(new_id(s, NULL), 2);
	s->next_id = UINT32_MAX - 1;
	assert_int_equal(new_id(s, NULL), UINT32_MAX - 1);
	assert_int_equal(new_id(s, NULL), UINT32_MAX);
	/* 1 and 2 are live: the count goes on past them. */
	assert_int_equal(new_id(s, NULL), 3);
	assert_int_equal(new_id(s, NULL), 4);
	sched_free(s);
}

/* After the wrap, ids of live clients are skipped, freed ones reused,
 * and a run of live ids that crosses 0 is skipped whole. */
static void test_live_skipped(void **state)
{
	struct sched_client *c[8];
	struct sched *s = mk();
	(void)state;

	for (int i = 0; i < 5; i++)
		assert_int_equal(new_id(s, &c[i]), (uint32_t)i + 1);
	s->next_id = UINT32_MAX - 1;
	assert_int_equal(new_id(s, &c[5]), UINT32_MAX - 1);
	assert_int_equal(new_id(s, &c[6]), UINT32_MAX);
	assert_int_equal(new_id(s, NULL), 6);
	sched_client_del(s, c[2]);             /* 3 is free again */
	s->next_id = 2;
	assert_int_equal(new_id(s, NULL), 3);
	s->next_id = UINT32_MAX - 1;           /* live: UINT32_MAX - 1 .. 6 */
	assert_int_equal(new_id(s, &c[7]), 7);
	sched_free(s);
}

/* Many clients live across the wrap: every id distinct. */
static void test_distinct(void **state)
{
	enum { N = 3000 };
	static uint32_t ids[N];
	struct sched *s = mk();
	(void)state;

	for (int i = 0; i < N / 2; i++)
		ids[i] = new_id(s, NULL);
	s->next_id = UINT32_MAX - 100;
	for (int i = N / 2; i < N; i++)
		ids[i] = new_id(s, NULL);
	for (int i = 0; i < N; i++) {
		assert_int_not_equal(ids[i], 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(ids[i], ids[j]);
	}
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order),
		cmocka_unit_test(test_live_skipped),
		cmocka_unit_test(test_distinct),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
