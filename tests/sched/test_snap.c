/*
 * The frozen copy a status report is rendered from (sched_snapshot): its
 * document is the document of the policy it was taken from, holders,
 * queues and members in the same order, and it stays so while the policy
 * moves on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"
#include "srv.h"


static char *doc(const struct sched *s)
{
	size_t len;
	char *t = ctl_status_json(s, NULL, VS_MAX_PAYLOAD, &len);

	assert_non_null(t);
	return t;
}

static void test_snapshot_same_document(void **state)
{
	struct sched_cfg cfg;
	struct sched *s, *snap;
	struct sched_client *c[40];
	char *a, *b, *later;
	(void)state;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_AUTO;
	cfg.grace_ms = 500;
	fake_now = 1000;
	s = sched_new(&cfg, fake_clock, NULL);
	for (int i = 0; i < 40; i++) {
		struct sched_cred cred = { 100 + i, 1000u + (uint32_t)i % 3, 7 };
		char label[32];

		snprintf(label, sizeof(label), "job-%d", i);
		c[i] = sched_client_new(s, &cred, label, NULL);
		assert_int_equal(sched_attach(s, c[i], GPU_A, 10ull << 30), 0);
		if (i % 2)
			assert_int_equal(sched_attach(s, c[i], GPU_B, 1ull << 30), 0);
		sched_footprint(s, c[i], GPU_A, (uint64_t)(i % 5) << 30, 0);
		/* Requests in an order unlike arrival, some released. */
		if (i % 3 != 1)
			sched_request(s, c[(i * 7) % (i + 1)], GPU_A);
		if (i % 2)
			sched_request(s, c[i], GPU_B);
		fake_now += 3;
	}
	sched_client_del(s, c[5]);
	a = doc(s);
	snap = sched_snapshot(s);
	assert_non_null(snap);
	b = doc(snap);
	assert_string_equal(a, b);
	/* The policy moves on; the copy does not. */
	fake_now += 500;
	sched_released(s, c[0], GPU_A);
	sched_client_del(s, c[1]);
	free(b);
	b = doc(snap);
	assert_string_equal(a, b);
	later = doc(s);
	assert_string_not_equal(a, later);
	sched_snap_free(snap);
	sched_free(s);
	free(a);
	free(b);
	free(later);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_same_document),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
