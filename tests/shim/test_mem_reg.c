/* Unit tests of the allocation registry (mem_reg.c). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "mem_reg.h"

static int reset(void **state)
{
	(void)state;
	mreg_reset();
	return 0;
}

static void add(int ns, uint64_t key, uint64_t size, int dev, int kind)
{
	assert_int_equal(mreg_reserve(dev, kind, size, 0), 0);
	assert_int_equal(mreg_insert(ns, key, size, dev, kind), 0);
}

static void test_insert_lookup_remove(void **state)
{
	struct mreg_entry e;
	uint64_t m, p;

	(void)state;
	add(MREG_PTR, 0x7f0000000000, 4096, 0, MREG_MANAGED);
	add(MREG_PTR, 0x7f0000100000, 1000, 1, MREG_MANAGED);
	add(MREG_VMM, 0x7f0000000000, 2 << 20, 0, MREG_PINNED);

	assert_int_equal(mreg_lookup(MREG_PTR, 0x7f0000000000, &e), 0);
	assert_int_equal(e.size, 4096);
	assert_int_equal(e.dev, 0);
	assert_int_equal(e.kind, MREG_MANAGED);
	/* Same number in the other key space is a different entry. */
	assert_int_equal(mreg_lookup(MREG_VMM, 0x7f0000000000, &e), 0);
	assert_int_equal(e.kind, MREG_PINNED);
	assert_int_equal(mreg_lookup(MREG_PTR, 0x1234, NULL), -1);

	mreg_usage(0, &m, &p);
	assert_int_equal(m, 4096);
	assert_int_equal(p, 2 << 20);
	mreg_usage(1, &m, &p);
	assert_int_equal(m, 1000);
	assert_int_equal(p, 0);

	assert_int_equal(mreg_remove(MREG_PTR, 0x7f0000000000, &e), 0);
	assert_int_equal(e.size, 4096);
	assert_int_equal(mreg_remove(MREG_PTR, 0x7f0000000000, &e), -1);
	mreg_usage(0, &m, &p);
	assert_int_equal(m, 0);
	assert_int_equal(p, 2 << 20);
}

static void test_limit(void **state)
{
	uint64_t m;

	(void)state;
	assert_int_equal(mreg_reserve(0, MREG_MANAGED, 600, 1000), 0);
	assert_int_equal(mreg_reserve(0, MREG_PINNED, 400, 1000), 0);
	/* managed + pinned together are bounded */
	assert_int_equal(mreg_reserve(0, MREG_MANAGED, 1, 1000), -1);
	assert_int_equal(mreg_reserve(0, MREG_MANAGED, UINT64_MAX, 1000), -1);
	/* no limit */
	assert_int_equal(mreg_reserve(0, MREG_MANAGED, 1, 0), 0);
	mreg_unreserve(0, MREG_MANAGED, 601);
	mreg_usage(0, &m, NULL);
	assert_int_equal(m, 0);
	/* unreserving more than reserved does not wrap */
	mreg_unreserve(0, MREG_MANAGED, 5);
	mreg_usage(0, &m, NULL);
	assert_int_equal(m, 0);
	/* other devices have their own budget */
	assert_int_equal(mreg_reserve(1, MREG_MANAGED, 1000, 1000), 0);
}

static void test_many_and_snapshot(void **state)
{
	struct mreg_entry es[8];
	uint64_t m;
	size_t n;

	(void)state;
	for (uint64_t i = 0; i < 5000; i++)
		add(MREG_PTR, 0x100000000ull + i * 0x200000, 10, (int)(i % 2),
		    MREG_MANAGED);
	mreg_usage(0, &m, NULL);
	assert_int_equal(m, 2500 * 10);
	for (uint64_t i = 0; i < 5000; i += 2)
		assert_int_equal(mreg_remove(MREG_PTR, 0x100000000ull +
					     i * 0x200000, NULL), 0);
	mreg_usage(0, &m, NULL);
	assert_int_equal(m, 0);
	n = mreg_snapshot(1, MREG_MANAGED, es, 8);
	assert_int_equal(n, 2500);
	for (int i = 0; i < 8; i++)
		assert_int_equal(es[i].dev, 1);
	assert_int_equal(mreg_snapshot(1, MREG_PINNED, es, 8), 0);
	for (uint64_t i = 1; i < 5000; i += 2)
		assert_int_equal(mreg_lookup(MREG_PTR, 0x100000000ull +
					     i * 0x200000, NULL), 0);
}

static void test_drop_device(void **state)
{
	uint64_t m, p;

	(void)state;
	add(MREG_PTR, 0x1000, 10, 0, MREG_MANAGED);
	add(MREG_VMM, 7, 20, 0, MREG_PINNED);
	add(MREG_PTR, 0x2000, 30, 1, MREG_MANAGED);
	mreg_drop_device(0);
	mreg_usage(0, &m, &p);
	assert_int_equal(m + p, 0);
	assert_int_equal(mreg_lookup(MREG_PTR, 0x1000, NULL), -1);
	assert_int_equal(mreg_lookup(MREG_PTR, 0x2000, NULL), 0);
}

static void test_bad_device(void **state)
{
	uint64_t m = 1, p = 1;

	(void)state;
	/* unknown devices are tracked but not counted */
	assert_int_equal(mreg_reserve(-1, MREG_MANAGED, 10, 5), 0);
	assert_int_equal(mreg_insert(MREG_PTR, 0x10, 10, -1, MREG_MANAGED), 0);
	mreg_usage(-1, &m, &p);
	assert_int_equal(m + p, 0);
	assert_int_equal(mreg_remove(MREG_PTR, 0x10, NULL), 0);
}

#define THREADS 4
#define PER_THREAD 2000

static void *worker(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg << 40;

	for (uint64_t i = 0; i < PER_THREAD; i++) {
		if (mreg_reserve(0, MREG_MANAGED, 8, 0) != 0 ||
		    mreg_insert(MREG_PTR, base + i * 64, 8, 0, MREG_MANAGED))
			return (void *)1;
		if (i % 2 && mreg_remove(MREG_PTR, base + (i - 1) * 64, NULL))
			return (void *)1;
	}
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t t[THREADS];
	uint64_t m;

	(void)state;
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, worker,
						(void *)(i + 1)), 0);
	for (int i = 0; i < THREADS; i++) {
		void *rv;

		pthread_join(t[i], &rv);
		assert_null(rv);
	}
	mreg_usage(0, &m, NULL);
	assert_int_equal(m, THREADS * PER_THREAD / 2 * 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_insert_lookup_remove, reset),
		cmocka_unit_test_setup(test_limit, reset),
		cmocka_unit_test_setup(test_many_and_snapshot, reset),
		cmocka_unit_test_setup(test_drop_device, reset),
		cmocka_unit_test_setup(test_bad_device, reset),
		cmocka_unit_test_setup(test_threads, reset),
	};

	return cmocka_run_group_tests(tests, NULL, reset);
}
