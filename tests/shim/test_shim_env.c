/* Unit tests of the VSHARE_* environment parsing (shim_env.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
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

static void test_env_size(void **state)
{
	(void)state;
	unsetenv("VSHARE_TEST_SIZE");
	assert_int_equal(shim_env_size("VSHARE_TEST_SIZE", 7), 7);
	setenv("VSHARE_TEST_SIZE", "", 1);
	assert_int_equal(shim_env_size("VSHARE_TEST_SIZE", 7), 7);
	setenv("VSHARE_TEST_SIZE", "2M", 1);
	assert_int_equal(shim_env_size("VSHARE_TEST_SIZE", 7), 2 << 20);
	setenv("VSHARE_TEST_SIZE", "lots", 1);
	assert_int_equal(shim_env_size("VSHARE_TEST_SIZE", 7), 7);
	/* A memory limit of "8" is refused, not taken as 8 bytes. */
	setenv("VSHARE_TEST_SIZE", "8", 1);
	assert_int_equal(shim_env_size("VSHARE_TEST_SIZE", 7), 8);
	assert_int_equal(shim_env_mem("VSHARE_TEST_SIZE", 7), 7);
	setenv("VSHARE_TEST_SIZE", "2097152", 1);
	assert_int_equal(shim_env_mem("VSHARE_TEST_SIZE", 7), 2 << 20);
	setenv("VSHARE_TEST_SIZE", "8G", 1);
	assert_int_equal(shim_env_mem("VSHARE_TEST_SIZE", 7), 8ull << 30);
	unsetenv("VSHARE_TEST_SIZE");
}

static void test_env_bool(void **state)
{
	static const char *const yes[] = { "1", "true", "YES", "on" };
	static const char *const no[] = { "0", "false", "No", "OFF" };

	(void)state;
	unsetenv("VSHARE_TEST_BOOL");
	assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 1), 1);
	assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 0), 0);
	for (int i = 0; i < 4; i++) {
		setenv("VSHARE_TEST_BOOL", yes[i], 1);
		assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 0), 1);
		setenv("VSHARE_TEST_BOOL", no[i], 1);
		assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 1), 0);
	}
	setenv("VSHARE_TEST_BOOL", "maybe", 1);
	assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 1), 1);
	assert_int_equal(shim_env_bool("VSHARE_TEST_BOOL", 0), 0);
}

static void test_env_u64(void **state)
{
	(void)state;
	setenv("VSHARE_TEST_U64", "150", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 1, 1000), 150);
	setenv("VSHARE_TEST_U64", "0", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 1, 1000), 100);
	setenv("VSHARE_TEST_U64", "-5", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
	setenv("VSHARE_TEST_U64", "12abc", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
	setenv("VSHARE_TEST_U64", "1001", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
	/* White space on either side is refused alike. */
	setenv("VSHARE_TEST_U64", " 5", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
	setenv("VSHARE_TEST_U64", "5 ", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
	setenv("VSHARE_TEST_U64", "+5", 1);
	assert_int_equal(shim_env_u64("VSHARE_TEST_U64", 100, 0, 1000), 100);
}

static void test_env_str(void **state)
{
	(void)state;
	unsetenv("VSHARE_TEST_STR");
	assert_string_equal(shim_env_str("VSHARE_TEST_STR", "d"), "d");
	setenv("VSHARE_TEST_STR", "", 1);
	assert_string_equal(shim_env_str("VSHARE_TEST_STR", "d"), "d");
	setenv("VSHARE_TEST_STR", "x", 1);
	assert_string_equal(shim_env_str("VSHARE_TEST_STR", "d"), "x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_env_size),
		cmocka_unit_test(test_env_bool),
		cmocka_unit_test(test_env_u64),
		cmocka_unit_test(test_env_str),
	};

	/* Bad values are reported at warn level; keep test output quiet. */
	log_init("test", LOG_LVL_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
