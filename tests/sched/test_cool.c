/*
 * The cool-down of uids whose connections are refused in bursts (cool.c):
 * a burst cools its own uid down for COOL_MS, and nobody else; refusals
 * spread out never do; a full table forgets, and never cools anyone by
 * forgetting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cool.h"

#define T0 100000u

/* n refusals of uid at `at`; how many of them started a cool-down. */
static int refuse(struct cool *c, uint32_t uid, unsigned n, uint64_t at)
{
	int started = 0;

	for (unsigned i = 0; i < n; i++)
		started += cool_refused(c, uid, at);
	return started;
}

static void test_burst_cools_its_uid_only(void **state)
{
	static struct cool c;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(refuse(&c, 1000, COOL_BURST - 1, T0), 0);
	assert_false(cool_active(&c, 1000, T0));
	assert_int_equal(refuse(&c, 1001, COOL_BURST - 1, T0), 0);
	assert_int_equal(refuse(&c, 1000, 1, T0 + COOL_WINDOW_MS - 1), 1);
	assert_true(cool_active(&c, 1000, T0 + COOL_WINDOW_MS));
	assert_true(cool_active(&c, 1000, T0 + COOL_WINDOW_MS - 1 + COOL_MS - 1));
	assert_false(cool_active(&c, 1000, T0 + COOL_WINDOW_MS - 1 + COOL_MS));
	/* The other uid, one short of its own burst, is not cooling. */
	assert_false(cool_active(&c, 1001, T0 + COOL_WINDOW_MS));
	assert_false(cool_active(&c, 0, T0 + COOL_WINDOW_MS));
	/* Refusals during the cool-down start no second one; after it, a
	 * whole new burst is needed. */
	assert_int_equal(refuse(&c, 1000, 1000, T0 + 2000), 0);
	assert_int_equal(refuse(&c, 1000, COOL_BURST - 1, T0 + 10000), 0);
	assert_false(cool_active(&c, 1000, T0 + 10000));
	assert_int_equal(refuse(&c, 1000, 1, T0 + 10000), 1);
}

static void test_spread_out_never_cools(void **state)
{
	static struct cool c;
	uint64_t t = T0;

	(void)state;
	memset(&c, 0, sizeof(c));
	/* A shim retrying a refused connection: 50 ms, doubling; and a
	 * steadier peer, just under the burst each window. */
	for (unsigned ms = 50; ms < 60000; ms *= 2) {
		t += ms;
		assert_int_equal(cool_refused(&c, 1000, t), 0);
	}
	for (unsigned w = 0; w < 10; w++) {
		assert_int_equal(refuse(&c, 1002, COOL_BURST - 1, t), 0);
		t += COOL_WINDOW_MS;
	}
	assert_false(cool_active(&c, 1000, t));
	assert_false(cool_active(&c, 1002, t));
}

static void test_full_table(void **state)
{
	static struct cool c;

	(void)state;
	memset(&c, 0, sizeof(c));
	assert_int_equal(refuse(&c, 7, COOL_BURST, T0), 1);
	/* More uids than slots, each a refusal short of its burst: none
	 * cools, and the one cooling keeps its slot while others go. */
	for (uint32_t uid = 100; uid < 100 + 4 * COOL_SLOTS; uid++)
		assert_int_equal(refuse(&c, uid, COOL_BURST - 1, T0 + 10), 0);
	for (uint32_t uid = 100; uid < 100 + 4 * COOL_SLOTS; uid++)
		assert_false(cool_active(&c, uid, T0 + 20));
	assert_true(cool_active(&c, 7, T0 + 20));
	assert_true(c.used <= COOL_SLOTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_burst_cools_its_uid_only),
		cmocka_unit_test(test_spread_out_never_cools),
		cmocka_unit_test(test_full_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
