/* The Slurm plugin's decisions without Slurm: plugstack.conf options, the
 * limit of a step's shards, the srun options, the label and the
 * LD_PRELOAD merge. */
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

/* shard_mem in the shim's grammar: no unit below 1 MiB is a unit left
 * out, said so; bytes said so, and 1 MiB and more, stay bytes. */
static void test_shard_mem_unit(void **state)
{
	char *no_unit[] = { "shard_mem=40" }, *bytes[] = { "shard_mem=40B" };
	char *plain[] = { "shard_mem=1048576" };
	char err[256];
	struct vsp_conf c;
	(void)state;

	assert_int_equal(vsp_conf_parse(&c, 1, no_unit, err, sizeof(err)), -1);
	assert_string_equal(err, "shard_mem '40': a size needs a unit (K, M, "
			    "G, T); a bare number below 1 MiB is refused, "
			    "write 40G or 40B");
	{
		char *word[] = { "shard_mem=lots" };

		assert_int_equal(vsp_conf_parse(&c, 1, word, err, sizeof(err)),
				 -1);
		assert_string_equal(err, "shard_mem 'lots': not a size (like "
				    "8G, 512M or 1.5T; bytes like 4096B)");
	}
	assert_int_equal(parse(&c, bytes, 1), 0);
	assert_int_equal(c.shard_mem, 40);
	assert_int_equal(parse(&c, plain, 1), 0);
	assert_int_equal(c.shard_mem, 1048576);
	/* The user's VSHARE_MEM_LIMIT=8, which the shim refuses, is no
	 * limit that could win over the shards'. */
	assert_int_equal(vsp_limit_wins("8", 1ull << 30), 1);
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

static void test_class(void **state)
{
	static const char *const bad[] = { "", "Batch", "interactive ",
					   "best-effort", "batchx" };
	char err[160];
	(void)state;

	assert_int_equal(vsp_class_parse("interactive", err, sizeof(err)),
			 VSP_CLASS_INTERACTIVE);
	assert_int_equal(vsp_class_parse("batch", err, sizeof(err)),
			 VSP_CLASS_BATCH);
	assert_string_equal(vsp_class_name(VSP_CLASS_INTERACTIVE), "interactive");
	assert_string_equal(vsp_class_name(VSP_CLASS_BATCH), "batch");
	assert_string_equal(vsp_class_name(VSP_CLASS_NONE), "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(vsp_class_parse(bad[i], err, sizeof(err)), -1);
		assert_non_null(strstr(err, "interactive or batch"));
	}
}

static void test_mem_option(void **state)
{
	static const char *const bad[] = { "", "lots", "-1G", "0x10", "1e9",
					   "8GB5", "inf" };
	char err[200];
	uint64_t v;
	(void)state;

	assert_int_equal(vsp_mem_parse("8G", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 8ull << 30);
	assert_int_equal(vsp_mem_parse("512mb", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(vsp_mem_parse("1048576", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 1048576);
	assert_int_equal(vsp_mem_parse("8B", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 8);
	assert_int_equal(vsp_mem_parse("0", &v, err, sizeof(err)), 0);
	assert_int_equal(v, 0);
	/* vshare-run's --mem-limit rule: a plain number below 1 MiB lost its
	 * unit, and the message says which to add. */
	assert_int_equal(vsp_mem_parse("8", &v, err, sizeof(err)), -1);
	assert_string_equal(err, "--vshare-mem '8': a size needs a unit (K, "
			    "M, G, T); a bare number below 1 MiB is refused, "
			    "write 8G or 8B");
	assert_int_equal(vsp_mem_parse("1048575", &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'1048575': a size needs a unit"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(vsp_mem_parse(bad[i], &v, err, sizeof(err)), -1);
		assert_non_null(strstr(err, "': not a size (like 8G, 512M or "
				       "1.5T; bytes like 4096B)"));
	}
}

static void test_step_limit(void **state)
{
	const uint64_t cap = 768ull << 20;
	char err[200];
	uint64_t out = 1;
	(void)state;

	/* Without the option: the cap, unless the user's own is lower. */
	assert_int_equal(vsp_step_limit(cap, 0, 0, NULL, &out, err, sizeof(err)),
			 VSP_LIMIT_SET);
	assert_int_equal(out, cap);
	assert_int_equal(vsp_step_limit(cap, 0, 0, "64M", &out, err,
					sizeof(err)), VSP_LIMIT_KEEP);
	assert_int_equal(vsp_step_limit(0, 0, 0, "64M", &out, err, sizeof(err)),
			 VSP_LIMIT_KEEP);
	assert_int_equal(vsp_step_limit(0, 0, 0, NULL, &out, err, sizeof(err)),
			 VSP_LIMIT_KEEP);
	/* The option within the cap, up to it, or with no cap at all. */
	assert_int_equal(vsp_step_limit(cap, 1, 300ull << 20, "64M", &out, err,
					sizeof(err)), VSP_LIMIT_SET);
	assert_int_equal(out, 300ull << 20);
	assert_int_equal(vsp_step_limit(cap, 1, cap, NULL, &out, err,
					sizeof(err)), VSP_LIMIT_SET);
	assert_int_equal(out, cap);
	assert_int_equal(vsp_step_limit(0, 1, 5ull << 40, NULL, &out, err,
					sizeof(err)), VSP_LIMIT_SET);
	assert_int_equal(out, 5ull << 40);
	assert_int_equal(vsp_step_limit(0, 1, 0, "8G", &out, err, sizeof(err)),
			 VSP_LIMIT_SET);
	assert_int_equal(out, 0);
	/* Above the cap, or no limit under one: refused, the cap named. */
	out = 1;
	assert_int_equal(vsp_step_limit(cap, 1, cap + 1, NULL, &out, err,
					sizeof(err)), VSP_LIMIT_REFUSE);
	assert_int_equal(out, 1);
	assert_string_equal(err, "--vshare-mem 805306369B is above the 768M "
			    "that this step's GPU shards allow (shards x "
			    "shard_mem)");
	assert_int_equal(vsp_step_limit(cap, 1, 1ull << 30, NULL, &out, err,
					sizeof(err)), VSP_LIMIT_REFUSE);
	assert_non_null(strstr(err, "--vshare-mem 1G is above the 768M"));
	assert_int_equal(vsp_step_limit(cap, 1, 0, NULL, &out, err,
					sizeof(err)), VSP_LIMIT_REFUSE);
	assert_non_null(strstr(err, "0 (no limit) is above"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test(test_shard_mem_unit),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_user_may_only_lower),
		cmocka_unit_test(test_label),
		cmocka_unit_test(test_preload),
		cmocka_unit_test(test_class),
		cmocka_unit_test(test_mem_option),
		cmocka_unit_test(test_step_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
