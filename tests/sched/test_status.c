/*
 * The status document (ctl_status_json): complete while it fits in a
 * frame, and past that the first clients plus "clients_omitted", with
 * every GPU and its queue still there.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <cjson/cJSON.h>

#include "srv.h"

static uint64_t zero_clock(void *arg)
{
	(void)arg;
	return 0;
}

static const uint8_t GPU_A[VS_UUID_LEN] = { 0xa };

/* n clients with long labels on GPU A, mode on: one holds, n-1 wait. */
static struct sched *populate(int n)
{
	struct sched_cfg cfg;
	struct sched *s;
	char label[64];

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	cfg.grace_ms = 500;
	s = sched_new(&cfg, zero_clock, NULL);
	assert_non_null(s);
	for (int i = 0; i < n; i++) {
		struct sched_cred cred = { 1000 + i, 1000, 1000 };
		struct sched_client *c;

		snprintf(label, sizeof(label), "job-%04d-%s", i,
			 "with-a-label-as-long-as-the-protocol-allows-xx");
		c = sched_client_new(s, &cred, label, NULL);
		assert_non_null(c);
		assert_int_equal(sched_attach(s, c, GPU_A, 1ull << 34), 0);
		assert_int_equal(sched_request(s, c, GPU_A), 0);
	}
	sched_out_clear(s);
	return s;
}

static int array_len(const cJSON *o, const char *key)
{
	return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, key));
}

static void test_fits(void **state)
{
	struct sched *s = populate(20);
	size_t len = 0;
	char *text = ctl_status_json(s, 1 << 20, &len);
	cJSON *doc;

	(void)state;
	assert_non_null(text);
	assert_int_equal(len, strlen(text));
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	assert_int_equal(array_len(doc, "clients"), 20);
	assert_null(cJSON_GetObjectItemCaseSensitive(doc, "clients_omitted"));
	cJSON_Delete(doc);
	free(text);
	sched_free(s);
}

static void test_too_many_clients(void **state)
{
	struct sched *s = populate(200);
	size_t len = 0, max = 16384;
	char *text = ctl_status_json(s, max, &len);
	const cJSON *gpu, *omitted;
	cJSON *doc;
	int shown;

	(void)state;
	assert_non_null(text);
	assert_true(len <= max);
	doc = cJSON_Parse(text);
	assert_non_null(doc);
	shown = array_len(doc, "clients");
	omitted = cJSON_GetObjectItemCaseSensitive(doc, "clients_omitted");
	assert_true(cJSON_IsNumber(omitted));
	assert_true(shown > 0);
	assert_int_equal(shown + omitted->valueint, 200);
	/* Not needlessly short either: most of the room is used. */
	assert_true(len > max / 2);
	gpu = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(doc, "gpus"), 0);
	assert_non_null(gpu);
	assert_int_equal(array_len(gpu, "holders"), 1);
	assert_int_equal(array_len(gpu, "queue"), 199);
	cJSON_Delete(doc);
	free(text);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fits),
		cmocka_unit_test(test_too_many_clients),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
