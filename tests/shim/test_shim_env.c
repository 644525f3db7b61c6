/* Unit tests of the shim's settings table and its reader (shim_env.c):
 * each type, out of range, garbage, unset. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"
#include "shim_env.h"
#include "size.h"

static void test_parse_size(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(vs_parse_size("123", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(vs_parse_size("64K", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 64 * 1024);
	assert_int_equal(vs_parse_size("8G", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 8ull << 30);
	assert_int_equal(vs_parse_size("8GiB", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 8ull << 30);
	assert_int_equal(vs_parse_size("512mb", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(vs_parse_size("1.5G", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 3ull << 29);
	assert_int_equal(vs_parse_size("2T", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 2ull << 40);
	assert_int_equal(vs_parse_size("0", VS_SIZE_LOWER_B, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(vs_parse_size("", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("G", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("-1", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("8X", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("8 G", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("8Gx", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("99999999999T", VS_SIZE_LOWER_B, &v), -1);
	/* strtod's other forms were once taken: "nan" gave an undefined limit. */
	assert_int_equal(vs_parse_size("nan", VS_SIZE_LOWER_B, &v), -1);
	assert_int_equal(vs_parse_size("0x10", VS_SIZE_LOWER_B, &v), -1);
	/* A memory limit: a small number with no unit is a unit left out;
	 * 0 (none), 1 MiB and up, and explicit bytes stay. */
	assert_int_equal(vs_parse_size("8", VS_SIZE_NEED_UNIT, &v), -2);
	assert_int_equal(vs_parse_size("1048575", VS_SIZE_NEED_UNIT, &v), -2);
	assert_int_equal(vs_parse_size("0.5", VS_SIZE_NEED_UNIT, &v), -2);
	assert_int_equal(vs_parse_size("8", 0, &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(vs_parse_size("0", VS_SIZE_NEED_UNIT, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(vs_parse_size("1048576", VS_SIZE_NEED_UNIT, &v), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(vs_parse_size("8B", VS_SIZE_NEED_UNIT, &v), 0);
	assert_int_equal(v, 8);
	assert_int_equal(vs_parse_size("8k", VS_SIZE_NEED_UNIT, &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(vs_parse_size("8x", VS_SIZE_NEED_UNIT, &v), -1);
}

/* Every row is whole: a name, a doc line, a default in its own range, and
 * an ENUM's choices that its parser takes, each as its own index. */
static void test_table(void **state)
{
	char dflt[128];
	struct shim_set_val v;

	(void)state;
	for (int i = 0; i < SET_COUNT; i++) {
		const struct shim_setting *s = &shim_settings[i];

		assert_non_null(s->name);
		assert_memory_equal(s->name, "VSHARE_", 7);
		assert_non_null(s->doc);
		shim_setting_default(s, dflt, sizeof(dflt));
		assert_true(dflt[0] != '\0');
		if ((s->type == SHIM_T_INT || s->type == SHIM_T_MS ||
		     s->type == SHIM_T_US) && s->dflt_doc == NULL) {
			assert_true(s->lo <= s->dflt);
			assert_true(s->dflt <= s->hi);
		}
		if (s->type != SHIM_T_ENUM)
			continue;
		/* Each choice, cut from "a|b|c", parses to its index. */
		for (const char *c = s->choices; c != NULL; ) {
			char one[32];
			size_t len = strcspn(c, "|");
			int idx = 0;

			snprintf(one, sizeof(one), "%.*s", (int)len, c);
			for (const char *d = s->choices; d < c; d++)
				idx += *d == '|';
			assert_int_equal(shim_setting_parse(s, one, &v), 0);
			assert_int_equal(v.u, idx);
			c = c[len] == '|' ? c + len + 1 : NULL;
		}
	}
}

/* A bad value leaves the default and given 0. */
static void bad(enum shim_set_id id, const char *text, int rc)
{
	struct shim_set_val v = { .given = 1, .u = 12345 };

	assert_int_equal(shim_setting_parse(&shim_settings[id], text, &v), rc);
	assert_int_equal(v.given, 0);
	assert_int_equal(v.u, shim_settings[id].dflt);
}

static uint64_t good(enum shim_set_id id, const char *text)
{
	struct shim_set_val v = { 0 };

	assert_int_equal(shim_setting_parse(&shim_settings[id], text, &v), 0);
	assert_int_equal(v.given, 1);
	return v.u;
}

static void test_parse_bool(void **state)
{
	static const char *const yes[] = { "1", "true", "YES", "on" };
	static const char *const no[] = { "0", "false", "No", "OFF" };

	(void)state;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(good(SET_CONVERT, yes[i]), 1);
		assert_int_equal(good(SET_CONVERT, no[i]), 0);
	}
	bad(SET_CONVERT, "maybe", -1);
	bad(SET_CONVERT, "2", -1);
	bad(SET_CONVERT, " 1", -1);
}

static void test_parse_int(void **state)
{
	(void)state;
	/* VSHARE_SWAP_STREAMS: 1 to 8. */
	assert_int_equal(good(SET_SWAP_STREAMS, "1"), 1);
	assert_int_equal(good(SET_SWAP_STREAMS, "8"), 8);
	bad(SET_SWAP_STREAMS, "0", -1);
	bad(SET_SWAP_STREAMS, "9", -1);
	bad(SET_SWAP_STREAMS, "-1", -1);
	bad(SET_SWAP_STREAMS, "12abc", -1);
	bad(SET_SWAP_STREAMS, "0x4", -1);
	bad(SET_SWAP_STREAMS, "99999999999999999999999", -1);
	/* White space on either side and a sign are refused alike. */
	bad(SET_SWAP_STREAMS, " 5", -1);
	bad(SET_SWAP_STREAMS, "5 ", -1);
	bad(SET_SWAP_STREAMS, "+5", -1);
	/* VSHARE_COPY_THREADS: 0 counts (the copying thread alone). */
	assert_int_equal(good(SET_COPY_THREADS, "0"), 0);
	bad(SET_COPY_THREADS, "8", -1);
}

static void test_parse_duration(void **state)
{
	(void)state;
	assert_int_equal(good(SET_IDLE_MS, "0"), 0);
	assert_int_equal(good(SET_IDLE_MS, "3600000"), 3600000);
	bad(SET_IDLE_MS, "3600001", -1);
	bad(SET_IDLE_MS, "100ms", -1);
	/* VSHARE_WAIT_NOTICE_MS starts at 100. */
	bad(SET_WAIT_NOTICE_MS, "99", -1);
	assert_int_equal(good(SET_WAIT_NOTICE_MS, "100"), 100);
	assert_int_equal(good(SET_SPIN_US, "10000"), 10000);
	bad(SET_SPIN_US, "10001", -1);
}

static void test_parse_size_settings(void **state)
{
	(void)state;
	assert_int_equal(good(SET_FOOTPRINT_STEP, "1M"), 1 << 20);
	assert_int_equal(good(SET_FOOTPRINT_STEP, "8"), 8);
	bad(SET_FOOTPRINT_STEP, "lots", -1);
	bad(SET_FOOTPRINT_STEP, "-1G", -1);
	/* A memory limit of "8" is a unit left out, not 8 bytes. */
	bad(SET_MEM_LIMIT, "8", -2);
	assert_int_equal(good(SET_MEM_LIMIT, "8B"), 8);
	assert_int_equal(good(SET_MEM_LIMIT, "2097152"), 2 << 20);
	assert_int_equal(good(SET_MEM_LIMIT, "8G"), 8ull << 30);
	assert_int_equal(good(SET_MEM_LIMIT, "0"), 0);
	bad(SET_MEM_LIMIT, "8X", -1);
}

static void test_parse_string_enum(void **state)
{
	char path[109];
	struct shim_set_val v;

	(void)state;
	/* A socket path fits sun_path with its NUL: 107 bytes at most. */
	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[107] = '\0';
	assert_int_equal(shim_setting_parse(&shim_settings[SET_SOCKET], path,
					    &v), 0);
	assert_ptr_equal(v.s, path);
	path[107] = 'a';
	path[108] = '\0';
	assert_int_equal(shim_setting_parse(&shim_settings[SET_SOCKET], path,
					    &v), -1);
	assert_string_equal(v.s, "/run/vshare/scheduler.sock");
	assert_int_equal(good(SET_SWAP_OUT, "eager"), SHIM_SWAP_OUT_EAGER);
	assert_int_equal(good(SET_SWAP_OUT, "lazy"), SHIM_SWAP_OUT_LAZY);
	bad(SET_SWAP_OUT, "Eager", -1);
	bad(SET_SWAP_OUT, "lazy|eager", -1);
	bad(SET_SWAP_OUT, "laz", -1);
	assert_int_equal(good(SET_LOG_LEVEL, "debug"), LOG_LVL_DEBUG);
	/* log_level_parse's other spelling stays accepted. */
	assert_int_equal(good(SET_LOG_LEVEL, "warning"), LOG_LVL_WARN);
	bad(SET_LOG_LEVEL, "loud", -1);
}

static void test_defaults(void **state)
{
	static const struct { enum shim_set_id id; const char *text; } d[] = {
		{ SET_CONVERT, "1" }, { SET_IDLE_MS, "100" },
		{ SET_FOOTPRINT_STEP, "64M" }, { SET_SWAP_OUT, "lazy" },
		{ SET_LOG_LEVEL, "warn" }, { SET_MEM_LIMIT, "none" },
		{ SET_SOCKET, "/run/vshare/scheduler.sock" },
		{ SET_COPY_THREADS,
		  "one fewer than the usable CPUs, at most 3" },
	};
	char buf[128];

	(void)state;
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
		shim_setting_default(&shim_settings[d[i].id], buf, sizeof(buf));
		assert_string_equal(buf, d[i].text);
	}
}

/* What the shim logs while reading, from stderr into buf. */
static void read_logged(enum shim_set_id id, struct shim_set_val *v,
			char *buf, size_t n)
{
	FILE *f = tmpfile();
	int saved = dup(2);
	size_t len;

	assert_non_null(f);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fileno(f), 2), 2);
	log_set_level(LOG_LVL_WARN);
	*v = shim_setting(id);
	log_set_level(LOG_LVL_ERROR);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	rewind(f);
	len = fread(buf, 1, n - 1, f);
	buf[len] = '\0';
	fclose(f);
}

/* Through the environment: unset and empty are the default, not given;
 * garbage is the default with one warning that names the variable, the
 * value, what was expected and the default. */
static void test_read_env(void **state)
{
	struct shim_set_val v;
	char log[512];

	(void)state;
	unsetenv("VSHARE_IDLE_MS");
	read_logged(SET_IDLE_MS, &v, log, sizeof(log));
	assert_int_equal(v.given, 0);
	assert_int_equal(v.u, 100);
	assert_string_equal(log, "");
	setenv("VSHARE_IDLE_MS", "", 1);
	read_logged(SET_IDLE_MS, &v, log, sizeof(log));
	assert_int_equal(v.given, 0);
	assert_string_equal(log, "");
	setenv("VSHARE_IDLE_MS", "250", 1);
	read_logged(SET_IDLE_MS, &v, log, sizeof(log));
	assert_int_equal(v.given, 1);
	assert_int_equal(v.u, 250);
	assert_string_equal(log, "");
	setenv("VSHARE_IDLE_MS", "soon", 1);
	read_logged(SET_IDLE_MS, &v, log, sizeof(log));
	assert_int_equal(v.given, 0);
	assert_int_equal(v.u, 100);
	assert_non_null(strstr(log, "VSHARE_IDLE_MS=\"soon\" is not a number "
			       "of milliseconds in 0..3600000; using the "
			       "default (100)"));
	/* The quiet read, for before logging is set up, says nothing. */
	assert_int_equal(shim_setting_quiet(SET_IDLE_MS).u, 100);
	unsetenv("VSHARE_IDLE_MS");
	setenv("VSHARE_MEM_LIMIT", "8", 1);
	read_logged(SET_MEM_LIMIT, &v, log, sizeof(log));
	assert_int_equal(v.given, 0);
	assert_int_equal(v.u, 0);
	assert_non_null(strstr(log, "VSHARE_MEM_LIMIT='8': a size needs a "
			       "unit (K, M, G, T); a bare number below 1 MiB "
			       "is refused, write 8G or 8B; using the default"));
	setenv("VSHARE_MEM_LIMIT", "8X", 1);
	read_logged(SET_MEM_LIMIT, &v, log, sizeof(log));
	assert_int_equal(v.given, 0);
	assert_non_null(strstr(log, "VSHARE_MEM_LIMIT='8X': not a size (like "
			       "8G, 512M or 1.5T; bytes like 4096B); using the "
			       "default"));
	unsetenv("VSHARE_MEM_LIMIT");
	setenv("VSHARE_LABEL", "nightly", 1);
	read_logged(SET_LABEL, &v, log, sizeof(log));
	assert_int_equal(v.given, 1);
	assert_string_equal(v.s, "nightly");
	unsetenv("VSHARE_LABEL");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_parse_bool),
		cmocka_unit_test(test_parse_int),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_size_settings),
		cmocka_unit_test(test_parse_string_enum),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_read_env),
	};

	/* Bad values are reported at warn level; keep test output quiet. */
	log_init("test", LOG_LVL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
