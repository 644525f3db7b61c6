/*
 * The metrics: the policy's counters driven by a fake clock, and their
 * exposition text (src/scheduler/metrics.c): escaping, the shape of every
 * line, histogram buckets, the fold of users past SCHED_STAT_USERS.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "metrics.h"

static uint64_t fake_now;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static const uint8_t GPU_A[VS_UUID_LEN] = { 0xa };
#define GA "gpu=\"GPU-0a000000-0000-0000-0000-000000000000\",index=\"0\""

static struct sched *mk(uint32_t mode, uint32_t policy)
{
	struct sched_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = mode;
	cfg.grace_ms = 500;
	cfg.skip_unresponsive = 1;
	cfg.policy = policy;
	cfg.min_slice_ms = 10;
	cfg.halflife_ms = 60000;
	cfg.preempt_pct = 67;
	cfg.preempt_budget_pct = 10;
	fake_now = 0;
	return sched_new(&cfg, fake_clock, NULL);
}

static struct sched_client *client(struct sched *s, uint32_t uid)
{
	struct sched_cred cred = { (int32_t)uid, uid, uid };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	assert_int_equal(sched_attach(s, c, GPU_A, 1ull << 30), 0);
	return c;
}

static char *render(const struct sched *s, const struct metrics_daemon *d)
{
	static const struct metrics_daemon none = { "1.0", 0, 0, { 0 } };
	size_t len = 0;
	char *t = metrics_render(s, d ? d : &none, &len);

	assert_non_null(t);
	assert_int_equal(strlen(t), len);
	return t;
}

/* text has the line `line` (a whole line). */
static void has_line(const char *text, const char *line)
{
	size_t n = strlen(line);

	for (const char *p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return;
	fail_msg("no line \"%s\" in:\n%s", line, text);
}

static void test_escape(void **state)
{
	struct metrics_buf b = { NULL, 0, 0, 0 };
	(void)state;

	metrics_label_value(&b, "a\\b\"c\nd");
	metrics_printf(&b, "|");
	metrics_help_text(&b, "a\\b\"c\nd");
	assert_false(b.oom);
	assert_string_equal(b.p, "a\\\\b\\\"c\\nd|a\\\\b\"c\\nd");
	free(b.p);
}

/* A metric name's family: the name, or a histogram's without its suffix. */
static int of_family(const char *sample, size_t n, const char *fam,
		     const char *type)
{
	static const char *const sfx[] = { "_bucket", "_sum", "_count" };
	size_t f = strlen(fam);

	if (n == f && strncmp(sample, fam, f) == 0)
		return 1;
	for (size_t i = 0; strcmp(type, "histogram") == 0 && i < 3; i++)
		if (n == f + strlen(sfx[i]) && strncmp(sample, fam, f) == 0 &&
		    strncmp(sample + f, sfx[i], strlen(sfx[i])) == 0)
			return 1;
	return 0;
}

/* Every line is HELP, then TYPE, then samples of that family; each family
 * once; names vshare_*; a sample is `name{labels} value` or `name value`. */
static void check_shape(const char *text)
{
	char fam[128] = "", type[32] = "", seen[8192] = " ";
	const char *p = text;

	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = strcspn(p, "{ ");
		char want[160];

		assert_non_null(nl);
		if (strncmp(p, "# HELP ", 7) == 0) {
			assert_int_equal(sscanf(p, "# HELP %127s", fam), 1);
			assert_int_equal(strncmp(fam, "vshare_", 7), 0);
			snprintf(want, sizeof(want), " %s ", fam);
			if (strstr(seen, want) != NULL)
				fail_msg("family %s twice", fam);
			strncat(seen, want + 1, sizeof(seen) - strlen(seen) - 1);
			snprintf(want, sizeof(want), "# TYPE %s ", fam);
			assert_int_equal(strncmp(nl + 1, want, strlen(want)), 0);
			p = nl + 1 + strlen(want);
			assert_int_equal(sscanf(p, "%31s", type), 1);
			assert_true(strcmp(type, "gauge") == 0 ||
				    strcmp(type, "counter") == 0 ||
				    strcmp(type, "histogram") == 0);
			p = strchr(p, '\n') + 1;
			continue;
		}
		if (!of_family(p, n, fam, type))
			fail_msg("sample outside its family %s: %.*s", fam,
				 (int)(nl - p), p);
		if (strcmp(type, "counter") == 0 && p[n] != '{' &&
		    strncmp(p + n - 6, "_total", 6) != 0)
			fail_msg("counter without _total: %.*s", (int)n, p);
		if (p[n] == '{')
			n += strcspn(p + n, "}") + 1;
		assert_int_equal(p[n], ' ');
		assert_true(nl[-1] >= '0' && nl[-1] <= '9');
		p = nl + 1;
	}
}

static void test_shape(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a;
	char *t;
	(void)state;

	t = render(s, NULL);
	check_shape(t);
	has_line(t, "# TYPE vshare_wait_seconds histogram");
	free(t);
	a = client(s, 1000);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_gpu_mode{" GA ",mode=\"on\"} 1");
	has_line(t, "vshare_gpu_mode{" GA ",mode=\"auto\"} 0");
	has_line(t, "vshare_gpu_quantum_seconds{" GA "} 1.000");
	has_line(t, "vshare_gpu_capacity_bytes{" GA "} 1073741824");
	has_line(t, "vshare_gpu_holders{" GA "} 1");
	has_line(t, "vshare_gpu_queue_length{" GA "} 0");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",le=\"+Inf\"} 1");
	free(t);
	sched_free(s);
}

/* Grants, drops, hand-offs, waits, holds and held time of one scripted
 * run: a holds 300 ms while b waits, then b holds past its quantum. */
static void test_counters(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	char *t;
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0); /* a: DROP IDLE */
	fake_now = 300;
	assert_int_equal(sched_released(s, a, GPU_A), 0); /* b granted */
	assert_int_equal(sched_swapped(s, b, GPU_A, 2500, 4096), 0);
	fake_now = 1300;
	/* Nobody waited: b's quantum window starts again now. */
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	fake_now = 2300;
	sched_tick(s); /* b: DROP QUANTUM */
	fake_now = 2350;
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_grants_total{" GA ",kind=\"exclusive\"} 2");
	has_line(t, "vshare_grants_total{" GA ",kind=\"shared\"} 0");
	has_line(t, "vshare_handoffs_total{" GA "} 1");
	has_line(t, "vshare_drops_total{" GA ",reason=\"idle\"} 2");
	has_line(t, "vshare_drops_total{" GA ",reason=\"quantum\"} 1");
	has_line(t, "vshare_drops_total{" GA ",reason=\"fair\"} 0");
	has_line(t, "vshare_swapins_total{" GA "} 1");
	has_line(t, "vshare_swapin_bytes_total{" GA "} 4096");
	has_line(t, "vshare_swapin_seconds_total{" GA "} 0.002500");
	/* Waits of 0 and 300 ms. */
	has_line(t, "vshare_wait_seconds_bucket{" GA ",le=\"0.001\"} 1");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",le=\"0.25\"} 1");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",le=\"0.5\"} 2");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",le=\"600\"} 2");
	has_line(t, "vshare_wait_seconds_sum{" GA "} 0.300");
	has_line(t, "vshare_wait_seconds_count{" GA "} 2");
	/* One hold so far (a's 300 ms); b holds on, counted as held time. */
	has_line(t, "vshare_hold_seconds_count{" GA "} 1");
	has_line(t, "vshare_hold_seconds_sum{" GA "} 0.300");
	has_line(t, "vshare_gpu_held_seconds_total{" GA ",uid=\"1000\"} 0.300");
	has_line(t, "vshare_gpu_held_seconds_total{" GA ",uid=\"1001\"} 2.050");
	has_line(t, "vshare_gpu_queue_length{" GA "} 1");
	free(t);
	/* b hangs: past the grace its grant is taken back. */
	fake_now = 2800;
	sched_tick(s);
	t = render(s, NULL);
	has_line(t, "vshare_unresponsive_total{" GA "} 1");
	has_line(t, "vshare_revocations_total{" GA "} 1");
	has_line(t, "vshare_hold_seconds_count{" GA "} 2");
	has_line(t, "vshare_hold_seconds_sum{" GA "} 2.800");
	has_line(t, "vshare_hold_seconds_bucket{" GA ",le=\"1\"} 1");
	has_line(t, "vshare_hold_seconds_bucket{" GA ",le=\"2.5\"} 2");
	has_line(t, "vshare_handoffs_total{" GA "} 2");
	free(t);
	sched_free(s);
}

/* A fair preemption is a quantum drop on the wire, counted apart. */
static void test_fair_drop(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FAIR);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	char *t;
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	fake_now = 100;
	sched_tick(s);
	t = render(s, NULL);
	has_line(t, "vshare_drops_total{" GA ",reason=\"fair\"} 1");
	has_line(t, "vshare_drops_total{" GA ",reason=\"quantum\"} 0");
	free(t);
	sched_free(s);
}

/* Users past SCHED_STAT_USERS share the series uid="other". */
static void test_user_fold(void **state)
{
	struct sched *s = mk(VS_MODE_OFF, SCHED_POLICY_FCFS);
	struct sched_client *c[SCHED_STAT_USERS + 2];
	char *t, line[160];
	(void)state;

	for (uint32_t i = 0; i < SCHED_STAT_USERS + 2; i++) {
		c[i] = client(s, 2000 + i);
		assert_int_equal(sched_request(s, c[i], GPU_A), 0);
	}
	fake_now = 2000;
	for (uint32_t i = 0; i < SCHED_STAT_USERS + 2; i++)
		assert_int_equal(sched_released(s, c[i], GPU_A), 0);
	t = render(s, NULL);
	check_shape(t);
	snprintf(line, sizeof(line), "vshare_gpu_held_seconds_total{" GA
		 ",uid=\"%u\"} 2.000", 2000 + SCHED_STAT_USERS - 1);
	has_line(t, line);
	has_line(t, "vshare_gpu_held_seconds_total{" GA ",uid=\"other\"} 4.000");
	snprintf(line, sizeof(line), "uid=\"%u\"", 2000 + SCHED_STAT_USERS);
	assert_null(strstr(t, line));
	free(t);
	sched_free(s);
}

/* The daemon's counters, and a version string with a quote in it. */
static void test_daemon(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct metrics_daemon d = { "1.0\"x", 3, 7, { 0 } };
	char *t;
	(void)state;

	d.refused[METRICS_REFUSE_uid_conns] = 2;
	d.refused[METRICS_REFUSE_not_admin] = 5;
	client(s, 1000);
	t = render(s, &d);
	check_shape(t);
	has_line(t, "vshare_build_info{version=\"1.0\\\"x\",protocol=\"3\"} 1");
	has_line(t, "vshare_connections 3");
	has_line(t, "vshare_connections_total 7");
	has_line(t, "vshare_clients 1");
	has_line(t, "vshare_refusals_total{reason=\"uid_conns\"} 2");
	has_line(t, "vshare_refusals_total{reason=\"not_admin\"} 5");
	has_line(t, "vshare_refusals_total{reason=\"max_clients\"} 0");
	free(t);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_fair_drop),
		cmocka_unit_test(test_user_fold),
		cmocka_unit_test(test_daemon),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
