/*
 * The metrics: the policy's counters driven by a fake clock, and their
 * exposition text (src/scheduler/daemon/metrics.c): escaping, the shape of every
 * line, histogram buckets, the fold of users past SCHED_STAT_USERS, GPUs
 * nobody vouches for, one swap-in report per oversubscribed grant, and
 * the cache every reader is served from.
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
#include "policy_fixture.h"

/* Linked with -Wl,--wrap=realloc (tests/sched/CMakeLists.txt): a
 * realloc to fail_size bytes fails (0: none does), so that one table of
 * the policy cannot grow while the others can. */
static size_t fail_size;
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
	return fail_size != 0 && n == fail_size ? NULL : __real_realloc(p, n);
}

#define GA "gpu=\"GPU-0a000000-0000-0000-0000-000000000000\",index=\"0\""
#define GB "gpu=\"GPU-0b000000-0000-0000-0000-000000000000\""
#define MiB (1ull << 20)

/* GPU_A is in the configuration's "gpus": it has series of its own. */
static const struct sched_gpu_cfg gpu_a_cfg = { { 0xa }, 0, 0, 0, 0, 0, 0 };

/* A driver (NVML) that knows GPU_B only. */
static uint64_t nvml_b(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	(void)arg;
	return memcmp(uuid, GPU_B, VS_UUID_LEN) == 0 ? 1ull << 34 : 0;
}

/* Its index of GPU_B, which is not the order of first attach. */
static int64_t nvml_b_index(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	(void)arg;
	return memcmp(uuid, GPU_B, VS_UUID_LEN) == 0 ? 7 : -1;
}

static struct sched *mk_nvml(uint32_t mode, uint32_t policy, int nvml)
{
	struct sched_cfg cfg = fixture_cfg(mode);

	cfg.policy = policy;
	cfg.min_slice_ms = 10;
	cfg.halflife_ms = 60000;
	cfg.preempt_pct = 67;
	cfg.preempt_budget_pct = 10;
	cfg.cap_window_ms = 10000;
	cfg.gpus = &gpu_a_cfg;
	cfg.n_gpus = 1;
	if (nvml) {
		cfg.total_fn = nvml_b;
		cfg.index_fn = nvml_b_index;
	}
	return fixture_new(&cfg, 0);
}

static struct sched *mk(uint32_t mode, uint32_t policy)
{
	return mk_nvml(mode, policy, 0);
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
	static const struct metrics_daemon none = { "1.0", 0, 0, { 0 }, 0, NULL, 0 };
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
/* A histogram's series, line by line: each _bucket's le above the one
 * before and its count not below; _count equal to the +Inf bucket. */
struct hist_walk {
	int in;                 /* the last line was a bucket */
	double le;
	unsigned long long cum, inf;
};

static void check_hist_line(struct hist_walk *w, const char *p, size_t n,
			    const char *nl)
{
	const char *le = strstr(p, "le=\"");
	unsigned long long v = strtoull(strrchr(p, ' ') + 1, NULL, 10);
	double x;

	if (n > 7 && strncmp(p + n - 7, "_bucket", 7) == 0) {
		assert_true(le != NULL && le < nl);
		x = strncmp(le + 4, "+Inf\"", 5) == 0 ? 1e300 :
		    strtod(le + 4, NULL);
		if (w->in && (x <= w->le || v < w->cum))
			fail_msg("buckets do not rise: %.*s", (int)(nl - p), p);
		*w = (struct hist_walk){ 1, x, v, x == 1e300 ? v :
					 w->in ? w->inf : ~0ull };
		return;
	}
	w->in = 0;
	if (n > 6 && strncmp(p + n - 6, "_count", 6) == 0 && v != w->inf)
		fail_msg("_count %llu is not the +Inf bucket's %llu: %.*s", v,
			 w->inf, (int)(nl - p), p);
}

static void check_shape(const char *text)
{
	char fam[128] = "", type[32] = "", seen[8192] = " ";
	const char *p = text;
	struct hist_walk hw = { 0, 0, 0, 0 };

	assert_true(strlen(text) > 0 && text[strlen(text) - 1] == '\n');
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = strcspn(p, "{ ");
		char want[160];

		assert_non_null(nl);
		if (strncmp(p, "# HELP ", 7) == 0) {
			assert_int_equal(sscanf(p, "# HELP %127s", fam), 1);
			assert_true(strncmp(fam, "vshare_", 7) == 0 ||
				    strncmp(fam, "process_", 8) == 0);
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
			/* A counter's family is named with its _total. */
			if (strcmp(type, "counter") == 0 &&
			    (strlen(fam) < 6 ||
			     strcmp(fam + strlen(fam) - 6, "_total") != 0))
				fail_msg("counter family %s without _total", fam);
			p = strchr(p, '\n') + 1;
			continue;
		}
		if (!of_family(p, n, fam, type))
			fail_msg("sample outside its family %s: %.*s", fam,
				 (int)(nl - p), p);
		if (strcmp(type, "counter") == 0 &&
		    strncmp(p + n - 6, "_total", 6) != 0)
			fail_msg("counter without _total: %.*s", (int)n, p);
		if (strcmp(type, "histogram") == 0)
			check_hist_line(&hw, p, n, nl);
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
	has_line(t, "vshare_wait_seconds_bucket{" GA ",class=\"batch\",le=\"+Inf\"} 1");
	free(t);
	sched_free(s);
}

/* Classes and caps: an interactive client's grant is counted and its
 * wait labelled as such, and a capped user's cap and use are given. */
static void test_classes(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FAIR);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	struct sched_class_pol capped = { 1, 20, 25 }, open = { 1, 20, 0 };
	char *t;
	(void)state;

	sched_client_set_class(b, VS_CLASS_INTERACTIVE);
	sched_client_set_policy(s, a, &capped);
	sched_client_set_policy(s, b, &open);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	fake_now += 1000;
	assert_int_equal(sched_request(s, b, GPU_A), 0); /* preempts a */
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_class_grants_total{" GA ",class=\"batch\"} 1");
	has_line(t, "vshare_class_grants_total{" GA ",class=\"interactive\"} 1");
	has_line(t, "vshare_wait_seconds_count{" GA ",class=\"interactive\"} 1");
	has_line(t, "vshare_drops_total{" GA ",reason=\"class\"} 1");
	has_line(t, "vshare_user_cap_ratio{" GA ",uid=\"1000\"} 0.250");
	has_line(t, "vshare_user_cap_used_ratio{" GA ",uid=\"1000\"} 0.100");
	has_line(t, "vshare_interactive_budget_used_ratio{" GA
		 ",uid=\"1001\"} 0.000");
	free(t);
	/* Held time by the class in force: a's second as batch, b's half
	 * second as interactive. */
	fake_now += 500;
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	t = render(s, NULL);
	has_line(t, "vshare_class_held_seconds_total{" GA ",class=\"batch\"} 1.000");
	has_line(t, "vshare_class_held_seconds_total{" GA
		 ",class=\"interactive\"} 0.500");
	/* The class as a whole: its bound (none configured: the whole
	 * GPU) and its use, nothing while nobody waited. */
	has_line(t, "vshare_interactive_total_ratio{" GA "} 1.000");
	has_line(t, "vshare_interactive_total_used_ratio{" GA "} 0.000");
	free(t);
	/* What the HTTP endpoint serves when the status is private: the
	 * GPU's totals, and no series by uid. */
	{
		struct metrics_daemon d = { "1.0", 0, 0, { 0 }, 0, NULL, 1 };

		t = render(s, &d);
		has_line(t, "vshare_class_held_seconds_total{" GA
			 ",class=\"batch\"} 1.000");
		assert_null(strstr(t, "uid=\""));
		free(t);
	}
	sched_free(s);
}

/* Grants, drops, hand-offs, waits, holds and held time of one scripted
 * run: a holds 300 ms while b waits, then b holds past its quantum. */
/* text has no line that begins with `start`. */
static void lacks(const char *text, const char *start)
{
	size_t n = strlen(start);

	for (const char *p = text; (p = strstr(p, start)) != NULL; p++)
		if (p == text || p[-1] == '\n')
			fail_msg("a line \"%s...\" in:\n%s", start, text);
	(void)n;
}

/* Use, not only holding: NVML's per-process figures summed by user (a
 * user's two processes add up, a process NVML has no sample of has no
 * utilisation), the shims' busy and idle time clamped to the time held,
 * swap-outs, and programs that ran unshared. */
static void test_use(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001), *a2;
	struct sched_cred cred = { 2000, 1000, 1000 };
	const struct sched_proc_use procs[] = {
		{ 1000, 300 * MiB, 40 }, { 2000, 100 * MiB, 25 },
		{ 1001, 5 * MiB, SCHED_UTIL_UNKNOWN }, { 4242, MiB, 90 },
	};
	struct sched_member_info mi;
	char *t;
	(void)state;

	a2 = sched_client_new(s, &cred, "job", NULL);
	assert_non_null(a2);
	assert_int_equal(sched_attach(s, a2, GPU_A, 1ull << 30), 0);
	assert_int_equal(sched_footprint(s, a, GPU_A, 100 * MiB, 0), 0);
	assert_int_equal(sched_footprint(s, a2, GPU_A, 50 * MiB, 0), 0);
	assert_int_equal(sched_footprint(s, b, GPU_A, 10 * MiB, 0), 0);
	/* No NVML view yet: the managed footprints only. */
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_user_managed_bytes{" GA ",uid=\"1000\"} 157286400");
	has_line(t, "vshare_user_managed_bytes{" GA ",uid=\"1001\"} 10485760");
	lacks(t, "vshare_user_gpu_memory_bytes{");
	lacks(t, "vshare_user_sm_utilization_ratio{");
	free(t);
	assert_int_equal(sched_client_gpu(s, a, 0, &mi), 0);
	assert_false(mi.use_known);
	assert_int_equal(mi.sm_pct, SCHED_UTIL_UNKNOWN);

	sched_gpu_use(s, GPU_A, 1, procs, 4);
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_user_gpu_memory_bytes{" GA ",uid=\"1000\"} 419430400");
	has_line(t, "vshare_user_gpu_memory_bytes{" GA ",uid=\"1001\"} 5242880");
	has_line(t, "vshare_user_sm_utilization_ratio{" GA ",uid=\"1000\"} 0.65");
	lacks(t, "vshare_user_sm_utilization_ratio{" GA ",uid=\"1001\"}");
	free(t);

	/* a holds for a second; its reports past that are cut. */
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	fake_now = 1000;
	assert_int_equal(sched_usage(s, a, GPU_A, 600, 300, 0, 0), 0);
	assert_int_equal(sched_usage(s, a, GPU_A, 500, 500, 0, 0), 0);
	assert_int_equal(sched_usage(s, a, GPU_A, 0, 0, 4096, 1500), 0);
	assert_int_equal(sched_usage(s, a, GPU_B, 1, 1, 0, 0), VS_E_NOGPU);
	/* b never held: nothing it says of busy time counts. */
	assert_int_equal(sched_usage(s, b, GPU_A, 100, 100, 0, 0), 0);
	assert_int_equal(sched_unshared(s, b, 5000, VS_UNSHARED_LOST), 1);
	assert_int_equal(sched_unshared(s, b, 9000, VS_UNSHARED_ABSENT), 0);
	assert_int_equal(sched_unshared(s, a, 10, VS_UNSHARED_MAX + 1),
			 VS_E_INVAL);
	assert_int_equal(sched_client_gpu(s, a, 0, &mi), 0);
	assert_true(mi.use_known);
	assert_int_equal(mi.dev_mem, 300 * MiB);
	assert_int_equal(mi.sm_pct, 40);
	assert_int_equal(mi.held_total_ms, 1000);
	assert_int_equal(mi.busy_ms, 700);
	assert_int_equal(mi.idle_ms, 300);
	assert_int_equal(mi.swapout_bytes, 4096);
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_gpu_busy_seconds_total{" GA ",uid=\"1000\"} 0.700");
	has_line(t, "vshare_gpu_idle_held_seconds_total{" GA ",uid=\"1000\"} 0.300");
	lacks(t, "vshare_gpu_busy_seconds_total{" GA ",uid=\"1001\"}");
	has_line(t, "vshare_swapouts_total{" GA "} 1");
	has_line(t, "vshare_swapout_bytes_total{" GA "} 4096");
	has_line(t, "vshare_swapout_seconds_total{" GA "} 0.001500");
	has_line(t, "vshare_unshared_runs_total{reason=\"lost\"} 1");
	has_line(t, "vshare_unshared_runs_total{reason=\"absent\"} 0");
	has_line(t, "vshare_unshared_seconds_total{reason=\"lost\"} 5.000");
	free(t);

	/* NVML lost its view of the GPU: its figures go, nothing else. */
	sched_gpu_use(s, GPU_A, 0, NULL, 0);
	t = render(s, NULL);
	lacks(t, "vshare_user_gpu_memory_bytes{");
	has_line(t, "vshare_user_managed_bytes{" GA ",uid=\"1000\"} 157286400");
	free(t);
	sched_free(s);
}

/* The daemon's own process_* series, from /proc/self: this test
 * process's, which has descriptors open and has used some CPU. */
static void test_process(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	static const char *const names[] = {
		"process_cpu_seconds_total ", "process_resident_memory_bytes ",
		"process_virtual_memory_bytes ", "process_start_time_seconds ",
		"process_open_fds ", "process_max_fds ",
	};
	char *t = render(s, NULL), *p;
	(void)state;

	check_shape(t);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		p = strstr(t, names[i]);
		while (p != NULL && p != t && p[-1] != '\n')
			p = strstr(p + 1, names[i]);
		if (p == NULL)
			fail_msg("no %s in:\n%s", names[i], t);
		/* Every one but the CPU time is well above zero here. */
		if (i > 0 && strtod(p + strlen(names[i]), NULL) < 1)
			fail_msg("%s is below 1", names[i]);
	}
	free(t);
	sched_free(s);
}

static void test_counters(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	char *t;
	(void)state;

	/* 1.25 GiB in 1 GiB: every grant is oversubscribed. */
	assert_int_equal(sched_footprint(s, a, GPU_A, 512 * MiB, 0), 0);
	assert_int_equal(sched_footprint(s, b, GPU_A, 768 * MiB, 0), 0);
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
	has_line(t, "vshare_wait_seconds_bucket{" GA ",class=\"batch\",le=\"0.001\"} 1");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",class=\"batch\",le=\"0.25\"} 1");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",class=\"batch\",le=\"0.5\"} 2");
	has_line(t, "vshare_wait_seconds_bucket{" GA ",class=\"batch\",le=\"600\"} 2");
	has_line(t, "vshare_wait_seconds_sum{" GA ",class=\"batch\"} 0.300");
	has_line(t, "vshare_wait_seconds_count{" GA ",class=\"batch\"} 2");
	/* One hold so far (a's 300 ms); b holds on, counted as held time. */
	has_line(t, "vshare_hold_seconds_count{" GA ",class=\"batch\"} 1");
	has_line(t, "vshare_hold_seconds_sum{" GA ",class=\"batch\"} 0.300");
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
	has_line(t, "vshare_hold_seconds_count{" GA ",class=\"batch\"} 2");
	has_line(t, "vshare_hold_seconds_sum{" GA ",class=\"batch\"} 2.800");
	has_line(t, "vshare_hold_seconds_bucket{" GA ",class=\"batch\",le=\"1\"} 1");
	has_line(t, "vshare_hold_seconds_bucket{" GA ",class=\"batch\",le=\"2.5\"} 2");
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

/* A drop that could not be queued (out of memory) was not sent: it is
 * not counted, under any reason. */
static void test_drop_not_queued(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FAIR);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	struct sched_client *c = client(s, 1002);
	char *t;
	(void)state;

	/* The outbox holds 16 before it grows: 14 grants on another GPU,
	 * then a's grant and the idle drop that b's request sends. */
	assert_int_equal(sched_attach(s, c, GPU_B, 1ull << 30), 0);
	for (int i = 0; i < 14; i++) {
		assert_int_equal(sched_request(s, c, GPU_B), 0);
		assert_int_equal(sched_released(s, c, GPU_B), 0);
	}
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_out_count(s), 16);
	fail_size = 32 * sizeof(struct sched_out); /* its growth from 16 */
	fake_now = 100;
	sched_tick(s); /* the fair preemption of a finds no room */
	fail_size = 0;
	assert_int_equal(sched_out_count(s), 16);
	t = render(s, NULL);
	has_line(t, "vshare_drops_total{" GA ",reason=\"fair\"} 0");
	has_line(t, "vshare_drops_total{" GA ",reason=\"quantum\"} 0");
	has_line(t, "vshare_drops_total{" GA ",reason=\"idle\"} 1");
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
	struct metrics_daemon d = { "1.0\"x", 3, 7, { 0 }, 0, NULL, 0 };
	char *t;
	(void)state;

	d.refused[METRICS_REFUSE_uid_conns] = 2;
	d.refused[METRICS_REFUSE_not_admin] = 5;
	client(s, 1000);
	t = render(s, &d);
	check_shape(t);
	has_line(t, "vshare_build_info{version=\"1.0\\\"x\",protocol=\"9\"} 1");
	has_line(t, "vshare_connections_open 3");
	assert_null(strstr(t, "vshare_connections "));
	has_line(t, "vshare_connections_total 7");
	has_line(t, "vshare_clients 1");
	has_line(t, "vshare_refusals_total{reason=\"uid_conns\"} 2");
	has_line(t, "vshare_refusals_total{reason=\"not_admin\"} 5");
	has_line(t, "vshare_refusals_total{reason=\"max_clients\"} 0");
	free(t);
	sched_free(s);
}

static size_t count_lines(const char *t)
{
	size_t n = 0;

	for (; *t; t++)
		n += *t == '\n';
	return n;
}

/* A client attaching made-up UUIDs adds no series past metrics_gpus:
 * GPUs that the configuration or NVML vouch for have series, and the
 * first gpus_max others; the rest are counted. */
static void test_unverified(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a = client(s, 1000);
	struct metrics_daemon d = { "1.0", 0, 0, { 0 }, 3, NULL, 0 };
	char *t;
	size_t lines;
	(void)state;

	t = render(s, NULL);
	lines = count_lines(t);
	has_line(t, "vshare_gpus_unverified 0");
	free(t);
	for (uint8_t i = 1; i <= 8; i++) {
		uint8_t made_up[VS_UUID_LEN] = { 0xee, i };

		assert_int_equal(sched_attach(s, a, made_up, 1ull << 30), 0);
		assert_int_equal(sched_request(s, a, made_up), 0);
	}
	t = render(s, NULL);
	check_shape(t);
	assert_int_equal(count_lines(t), lines);
	has_line(t, "vshare_gpus_unverified 8");
	assert_null(strstr(t, "GPU-ee"));
	has_line(t, "vshare_gpu_clients{" GA "} 1");
	free(t);
	t = render(s, &d);
	check_shape(t);
	has_line(t, "vshare_gpus_unverified 5");
	for (int i = 1; i <= 8; i++) {
		char line[160];

		snprintf(line, sizeof(line), "vshare_gpu_clients{gpu=\"GPU-ee"
			 "%02x0000-0000-0000-0000-000000000000\",index=\"%d\"} 1",
			 i, i);
		assert_true((strstr(t, line) != NULL) == (i <= 3));
	}
	free(t);
	sched_free(s);
	/* The driver's report vouches for GPU_B, and its index is NVML's
	 * (7), not the order of first attach (1). */
	s = mk_nvml(VS_MODE_ON, SCHED_POLICY_FCFS, 1);
	a = client(s, 1000);
	assert_int_equal(sched_attach(s, a, GPU_B, 1ull << 30), 0);
	t = render(s, NULL);
	check_shape(t);
	has_line(t, "vshare_gpus_unverified 0");
	has_line(t, "vshare_gpu_clients{" GB ",index=\"7\"} 1");
	free(t);
	sched_free(s);
}

static void has_swaps(const struct sched *s, const char *n, const char *bytes)
{
	char *t = render(s, NULL);
	char line[160];

	snprintf(line, sizeof(line), "vshare_swapins_total{" GA "} %s", n);
	has_line(t, line);
	snprintf(line, sizeof(line), "vshare_swapin_bytes_total{" GA "} %s",
		 bytes);
	has_line(t, line);
	free(t);
}

/* One swap-in report per oversubscribed grant, its bytes at most
 * SCHED_FP_MAX: a holder cannot inflate the counters (nor the fair
 * share's measured swap-in). */
static void test_swap_once(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct sched_client *a = client(s, 1000), *b = client(s, 1001);
	struct sched_gpu_info gi;
	(void)state;

	assert_int_equal(sched_footprint(s, a, GPU_A, 512 * MiB, 0), 0);
	assert_int_equal(sched_footprint(s, b, GPU_A, 768 * MiB, 0), 0);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_swapped(s, a, GPU_A, 1000, UINT64_MAX), 0);
	/* The second report of the grant is ignored. */
	for (int i = 0; i < 5; i++)
		assert_int_equal(sched_swapped(s, a, GPU_A, 900000,
					       UINT64_MAX), 0);
	has_swaps(s, "1", "17592186044416"); /* SCHED_FP_MAX */
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_int_equal(gi.swap_us, 1000);
	/* A new oversubscribed grant: one report more. */
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_swapped(s, b, GPU_A, 1000, 4096), 0);
	assert_int_equal(sched_swapped(s, b, GPU_A, 1000, 4096), 0);
	has_swaps(s, "2", "17592186048512");
	/* A grant that fits: no report is taken. */
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_int_equal(sched_footprint(s, a, GPU_A, 0, 0), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_swapped(s, b, GPU_A, 1000, 4096), 0);
	has_swaps(s, "2", "17592186048512");
	/* Not holding: refused as before. */
	assert_int_equal(sched_swapped(s, a, GPU_A, 1000, 4096), VS_E_STATE);
	sched_free(s);
}

/* Every reader gets the same text for METRICS_CACHE_MS, then a new one. */
static void test_cache(void **state)
{
	struct sched *s = mk(VS_MODE_ON, SCHED_POLICY_FCFS);
	struct metrics_daemon d = { "1.0", 1, 1, { 0 }, 0, NULL, 0 };
	struct metrics_cache mc = { NULL, 0, 0 };
	size_t n1 = 0, n2 = 0, n3 = 0;
	char *t1, *t2, *t3;
	(void)state;

	t1 = metrics_cached(&mc, s, &d, 5000, &n1);
	assert_non_null(t1);
	has_line(t1, "vshare_clients 0");
	client(s, 1000);
	d.conns_total = 2;
	t2 = metrics_cached(&mc, s, &d, 5000 + METRICS_CACHE_MS - 1, &n2);
	assert_non_null(t2);
	assert_true(t1 != t2 && n1 == n2 && strcmp(t1, t2) == 0);
	t3 = metrics_cached(&mc, s, &d, 5000 + METRICS_CACHE_MS, &n3);
	assert_non_null(t3);
	assert_int_equal(strlen(t3), n3);
	has_line(t3, "vshare_clients 1");
	has_line(t3, "vshare_connections_total 2");
	free(t1);
	free(t2);
	free(t3);
	metrics_cache_free(&mc);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape),
		cmocka_unit_test(test_shape),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_use),
		cmocka_unit_test(test_process),
		cmocka_unit_test(test_classes),
		cmocka_unit_test(test_fair_drop),
		cmocka_unit_test(test_drop_not_queued),
		cmocka_unit_test(test_user_fold),
		cmocka_unit_test(test_daemon),
		cmocka_unit_test(test_unverified),
		cmocka_unit_test(test_swap_once),
		cmocka_unit_test(test_cache),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
