/* The Slurm plugin's decisions without Slurm: plugstack.conf options, the
 * limit of a step's shards, the label and the LD_PRELOAD merge. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "vshare/proto.h"
#include "vsp_conf.h"

static int parse(struct vsp_conf *c, char **argv, int argc)
{
	char err[256];

	return vsp_conf_parse(c, argc, argv, err, sizeof(err));
}

static void test_defaults(void **state)
{
	struct vsp_conf c;
	(void)state;

	assert_int_equal(parse(&c, NULL, 0), 0);
	assert_string_equal(c.socket, VS_DEFAULT_SOCKET);
	assert_non_null(strstr(c.shim, "/libvshare.so"));
	assert_int_equal(c.shard_mem, 0);
	assert_int_equal(c.require_scheduler, 0);
	assert_int_equal(c.framework_defaults, 1);
	assert_int_equal(c.steps, VSP_STEPS_SHARDS);
}

static void test_options(void **state)
{
	char *argv[] = { "shim=/opt/v/libvshare.so", "socket=/run/x/s.sock",
			 "shard_mem=1.5G", "require_scheduler=yes",
			 "framework_defaults=off", "steps=gpus" };
	struct vsp_conf c;
	(void)state;

	assert_int_equal(parse(&c, argv, 6), 0);
	assert_string_equal(c.shim, "/opt/v/libvshare.so");
	assert_string_equal(c.socket, "/run/x/s.sock");
	assert_int_equal(c.shard_mem, 3ull << 29);
	assert_int_equal(c.require_scheduler, 1);
	assert_int_equal(c.framework_defaults, 0);
	assert_int_equal(c.steps, VSP_STEPS_GPUS);
	argv[0] = "steps=all";
	assert_int_equal(parse(&c, argv, 1), 0);
	assert_int_equal(c.steps, VSP_STEPS_ALL);
}

static void test_bad_options(void **state)
{
	static char *bad[] = { "shard_mem=lots", "shim=relative/libvshare.so",
			       "require_scheduler=maybe", "nokey", "colour=red",
			       "shard_mem=-1", "=x", "shard_mem=0x10",
			       "steps=some", "all_steps=yes" };
	struct vsp_conf c;
	(void)state;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(parse(&c, &bad[i], 1), -1);
}

static void test_limit(void **state)
{
	uint64_t out, n;
	(void)state;

	assert_int_equal(vsp_limit(3, 1ull << 30, &out), 0);
	assert_int_equal(out, 3ull << 30);
	assert_int_equal(vsp_limit(5, 0, &out), 0);
	assert_int_equal(out, 0);
	assert_int_equal(vsp_limit(1ull << 40, 1ull << 30, &out), -1);
	assert_int_equal(vsp_shards("4", &n), 0);
	assert_int_equal(n, 4);
	assert_int_equal(vsp_shards("", &n), -1);
	assert_int_equal(vsp_shards("-1", &n), -1);
	assert_int_equal(vsp_shards("2x", &n), -1);
	assert_int_equal(vsp_shards(NULL, &n), -1);
	assert_int_equal(vsp_shards("99999999999999999999999", &n), -1);
}

static void test_user_may_only_lower(void **state)
{
	(void)state;
	assert_int_equal(vsp_limit_wins(NULL, 1ull << 30), 1);
	assert_int_equal(vsp_limit_wins("", 1ull << 30), 1);
	assert_int_equal(vsp_limit_wins("512M", 1ull << 30), 0);
	assert_int_equal(vsp_limit_wins("512mb", 1ull << 30), 0);
	assert_int_equal(vsp_limit_wins("2G", 1ull << 30), 1);
	assert_int_equal(vsp_limit_wins("0", 1ull << 30), 1);
	assert_int_equal(vsp_limit_wins("garbage", 1ull << 30), 1);
}

static void test_label(void **state)
{
	char l[64], small[8];
	char longname[100];
	(void)state;

	vsp_label(l, sizeof(l), 42, 0, "alice", NULL);
	assert_string_equal(l, "slurm:42.0:alice");
	vsp_label(l, sizeof(l), 42, VSP_STEP_BATCH, "alice", "train");
	assert_string_equal(l, "slurm:42.batch:alice:train");
	memset(longname, 'u', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	vsp_label(l, sizeof(l), 7, 1, longname, "x");
	assert_int_equal(strlen(l), VS_LABEL_MAX - 1);
	/* A step inherits the batch step's label: not the user's own. */
	vsp_label(l, sizeof(l), 42, 1, "alice", "slurm:42.batch:alice");
	assert_string_equal(l, "slurm:42.1:alice");
	vsp_label(small, sizeof(small), 123456, 3, "bob", NULL);
	assert_string_equal(small, "slurm:1");
}

static void expect_preload(const char *cur, const char *want)
{
	char out[256];

	assert_int_equal(vsp_preload(cur, "/s/libvshare.so", out, sizeof(out)), 0);
	assert_string_equal(out, want);
}

static void test_preload(void **state)
{
	char tiny[8];
	(void)state;

	expect_preload(NULL, "/s/libvshare.so");
	expect_preload("", "/s/libvshare.so");
	expect_preload("/a/libasan.so.8", "/a/libasan.so.8:/s/libvshare.so");
	expect_preload("a.so b.so:c.so", "a.so:b.so:c.so:/s/libvshare.so");
	expect_preload("/old/libvshare.so:x.so", "/s/libvshare.so:x.so");
	expect_preload("libvshare.so.0 x.so /o/libvshare.so",
		       "/s/libvshare.so:x.so");
	expect_preload("::  y.so ::", "y.so:/s/libvshare.so");
	expect_preload("/l/libvshare.sox", "/l/libvshare.sox:/s/libvshare.so");
	assert_int_equal(vsp_preload("abc.so", "/s/libvshare.so", tiny,
				     sizeof(tiny)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_user_may_only_lower),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_preload),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
