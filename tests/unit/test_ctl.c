/* vsharectl's command table (src/ctl/vc_cmd.c): every command is in
 * --help, parses and builds its request; bad arguments are usage errors
 * (exit status 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <getopt.h>
#include <cmocka.h>

#include "vc.h"

/* Parse argv (NULL-terminated, without the program's name). */
static int parse(struct vc_args *a, const char **args)
{
	char *argv[16] = { (char *)"vsharectl" };
	int argc = 1;

	while (*args)
		argv[argc++] = (char *)*args++;
	optind = 0;
	return vc_parse_args(argc, argv, a);
}

static void test_help_lists_every_command(void **state)
{
	size_t n, len = 0;
	const struct vc_cmd *c = vc_cmds(&n);
	char *text = NULL;
	FILE *f = open_memstream(&text, &len);
	(void)state;

	assert_non_null(f);
	vc_usage(f);
	fclose(f);
	for (size_t i = 0; i < n; i++) {
		char want[64];

		snprintf(want, sizeof(want), "\n  %s ", c[i].name);
		if (strstr(text, want) == NULL || strstr(text, c[i].help) == NULL)
			fail_msg("--help lacks %s:\n%s", c[i].name, text);
	}
	free(text);
}

/* Every command dispatches to its request, with its argument at the ends
 * of its range (a numeric one; policy and set-weight have their own
 * tests below). */
static void test_every_command_builds(void **state)
{
	size_t n;
	const struct vc_cmd *c = vc_cmds(&n);
	struct vc_args a;
	struct vs_admin_set m;
	char lo[16], hi[16];
	(void)state;

	for (size_t i = 0; i < n; i++, c++) {
		const char *args[] = { c->name, c->arg ? lo : NULL, NULL };

		if (c->local || (c->arg && (c->hi == 0 || c->nargs != 1)))
			continue;   /* test_local_command, test_fair_share */
		snprintf(lo, sizeof(lo), "%u", c->lo);
		snprintf(hi, sizeof(hi), "%u", c->hi);
		assert_int_equal(parse(&a, args), 0);
		assert_ptr_equal(a.cmd, c);
		assert_int_equal(vc_build(&a, &m), 0);
		assert_int_equal(m.value, c->arg ? c->lo : c->value);
		assert_non_null(vs_msg_lookup(c->type));
		if (c->gpu)
			assert_int_equal(m.target, VS_TARGET_ALL);
		if (c->arg) {
			args[1] = hi;
			assert_int_equal(parse(&a, args), 0);
			assert_int_equal(vc_build(&a, &m), 0);
			assert_int_equal(m.value, c->hi);
		}
	}
}

/* The fair share's commands: set-slice like set-tq, policy by name,
 * set-weight by uid or user name; their requests pass the frame check. */
static void test_fair_share(void **state)
{
	const char *slice[] = { "set-slice", "250", "--gpu", "1", NULL };
	const char *fcfs[] = { "policy", "fcfs", NULL };
	const char *fair[] = { "--json", "policy", "fair", NULL };
	const char *by_uid[] = { "set-weight", "1234", "7", NULL };
	const char *by_name[] = { "set-weight", "root", "1000", NULL };
	struct vc_args a;
	struct vs_admin_set m;
	struct vs_hdr h;
	(void)state;

	assert_int_equal(parse(&a, slice), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(a.cmd->type, VS_MSG_SET_SLICE);
	assert_int_equal(m.value, 250);
	assert_int_equal(m.target, VS_TARGET_INDEX);
	assert_int_equal(m.index, 1);
	vs_hdr_init(&h, a.cmd->type, sizeof(m));
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);

	assert_int_equal(parse(&a, fcfs), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(a.cmd->type, VS_MSG_SET_POLICY);
	assert_int_equal(m.value, VS_POLICY_FCFS);
	vs_hdr_init(&h, a.cmd->type, sizeof(m));
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	assert_int_equal(parse(&a, fair), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(m.value, VS_POLICY_FAIR);
	assert_int_equal(m.target, VS_TARGET_ALL);

	assert_int_equal(parse(&a, by_uid), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(a.cmd->type, VS_MSG_SET_WEIGHT);
	assert_int_equal(m.target, VS_TARGET_UID);
	assert_int_equal(m.index, 1234);
	assert_int_equal(m.value, 7);
	vs_hdr_init(&h, a.cmd->type, sizeof(m));
	assert_int_equal(vs_check_payload(&h, &m, NULL), VS_OK);
	assert_int_equal(parse(&a, by_name), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(m.index, 0);
	assert_int_equal(m.value, VS_WEIGHT_MAX);
}

static int usage_error(const char **args)
{
	struct vc_args a;
	struct vs_admin_set m;
	int rc = parse(&a, args);

	return rc != 0 ? rc : vc_build(&a, &m);
}

static void test_bad_arguments(void **state)
{
	static const char *const cases[][6] = {
		{ NULL }, { "frob", NULL }, { "set-tq", NULL },
		{ "set-tq", "abc", NULL }, { "set-tq", "0", NULL },
		{ "set-tq", "86401", NULL }, { "enable", "--gpu", "zz", NULL },
		{ "status", "--gpu", "0", NULL }, { "enable", "extra", NULL },
		{ "--bogus", NULL },
		{ "set-slice", NULL }, { "set-slice", "9", NULL },
		{ "set-slice", "3600001", NULL }, { "set-slice", "1s", NULL },
		{ "set-slice", "100", "--gpu", "GPU-zz", NULL },
		{ "policy", NULL }, { "policy", "fifo", NULL },
		{ "policy", "fair", "--gpu", "0", NULL },
		{ "policy", "fair", "extra", NULL },
		{ "set-weight", NULL }, { "set-weight", "root", NULL },
		{ "set-weight", "root", "0", NULL },
		{ "set-weight", "root", "1001", NULL },
		{ "set-weight", "root", "x", NULL },
		{ "set-weight", "no-such-user-vs", "2", NULL },
		{ "set-weight", "4294967295", "2", NULL },
		{ "set-weight", "", "2", NULL },
		{ "set-weight", "0", "2", "--gpu", "0", NULL },
		{ "set-weight", "0", "2", "3", NULL },
		{ "--wide", "set-tq", "5", NULL }, { "-w", "enable", NULL },
	};
	FILE *saved = stderr;
	(void)state;

	/* The messages are checked by tests/sched (t_ctl); keep them out of
	 * this test's output. */
	stderr = fopen("/dev/null", "w");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(usage_error((const char **)cases[i]),
				 VC_EXIT_USAGE);
	fclose(stderr);
	stderr = saved;
}

/* --wide: for status alone, short or long, beside --json. */
static void test_wide(void **state)
{
	static const char *wide[] = { "--wide", "status", NULL };
	static const char *w_json[] = { "-w", "--json", "status", NULL };
	static const char *plain[] = { "status", NULL };
	struct vc_args a;
	(void)state;

	assert_int_equal(parse(&a, wide), 0);
	assert_int_equal(a.wide, 1);
	assert_int_equal(parse(&a, w_json), 0);
	assert_true(a.wide && a.json);
	assert_int_equal(parse(&a, plain), 0);
	assert_int_equal(a.wide, 0);
}

/* A local command (cdi) runs during parsing, with vsharectl's options
 * before its word and its own after it. */
static void test_local_command(void **state)
{
	const char *help[] = { "--socket", "/x", "-j", "cdi", "--help", NULL };
	const char *none[] = { "cdi", NULL };
	const char *bad[] = { "-s", "/x", "cdi", "generate", "--kind", "k",
			      NULL };
	const char *after[] = { "status", "cdi", NULL };
	struct vc_args a;
	FILE *saved = stdout, *saved_err = stderr;
	(void)state;

	stdout = fopen("/dev/null", "w");
	stderr = fopen("/dev/null", "w");
	assert_int_equal(parse(&a, help), -1);
	assert_string_equal(a.socket, "/x");
	assert_int_equal(a.json, 1);
	assert_int_equal(parse(&a, none), VC_EXIT_USAGE);
	assert_int_equal(parse(&a, bad), VC_EXIT_USAGE);
	assert_int_equal(parse(&a, after), VC_EXIT_USAGE);
	fclose(stdout);
	fclose(stderr);
	stdout = saved;
	stderr = saved_err;
}

static void test_gpu_target(void **state)
{
	const char *by_index[] = { "enable", "--gpu", "3", NULL };
	const char *by_uuid[] = { "auto", "--gpu",
		"GPU-00000000-0000-0000-0000-000000000001", NULL };
	struct vc_args a;
	struct vs_admin_set m;
	(void)state;

	assert_int_equal(parse(&a, by_index), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(m.target, VS_TARGET_INDEX);
	assert_int_equal(m.index, 3);
	assert_int_equal(m.value, VS_MODE_ON);
	assert_int_equal(parse(&a, by_uuid), 0);
	assert_int_equal(vc_build(&a, &m), 0);
	assert_int_equal(m.target, 0);
	assert_int_equal(m.uuid[15], 1);
	assert_int_equal(m.value, VS_MODE_AUTO);
}

/* What vc_print_status prints for a document, as one string. */
static char *printed_as(const char *json, int wide)
{
	FILE *t = tmpfile();
	int saved = dup(1);
	char *out = calloc(1, 8192);

	assert_non_null(t);
	assert_non_null(out);
	fflush(stdout);
	dup2(fileno(t), 1);
	assert_int_equal(vc_print_status(json, wide), VC_EXIT_OK);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(t);
	assert_true(fread(out, 1, 8191, t) > 0);
	fclose(t);
	return out;
}

static char *printed(const char *json)
{
	return printed_as(json, 0);
}

/* The status says what is known: a capacity nothing gave is unknown,
 * not 0 B; a waiter whose holder was asked to release waits for the
 * holder's work in flight, the grace only bounding it. */
static void test_status_words(void **state)
{
	char *t;
	(void)state;

	t = printed("{\"gpus\": [{\"uuid\": \"GPU-a\", \"index\": 0, "
		    "\"mode\": \"on\", \"tq_s\": 30, \"capacity\": 0, "
		    "\"policy\": \"fair\"}], \"clients\": [{\"id\": 7, "
		    "\"pid\": 100, \"uid\": 0, \"label\": \"nb\", \"gpus\": "
		    "[{\"uuid\": \"GPU-a\", \"state\": \"waiting\", "
		    "\"waited_ms\": 3, \"wait_why\": \"release\", "
		    "\"position\": 1, \"eta_ms\": 4990}]}]}");
	assert_non_null(strstr(t, "capacity unknown,"));
	assert_null(strstr(t, "capacity 0 B"));
	assert_non_null(strstr(t, "next, the holder was asked to release; "
			       "once its work in flight is done, 5.0 s at "
			       "the latest (its grace)"));
	assert_null(strstr(t, "about 5.0 s"));
	free(t);
	/* Behind a quantum, the eta is an estimate. */
	t = printed("{\"gpus\": [{\"uuid\": \"GPU-a\", \"index\": 0, "
		    "\"capacity\": 1073741824}], \"clients\": [{\"id\": 7, "
		    "\"gpus\": [{\"uuid\": \"GPU-a\", \"state\": \"waiting\", "
		    "\"wait_why\": \"quantum\", \"position\": 1, "
		    "\"eta_ms\": 12000}]}]}");
	assert_non_null(strstr(t, "capacity 1.0 GiB,"));
	assert_non_null(strstr(t, "quantum ends; about 12.0 s"));
	free(t);
}

/* t has s (the text is shown when not). */
static void contains(const char *t, const char *s)
{
	if (strstr(t, s) == NULL)
		fail_msg("no \"%s\" in:\n%s", s, t);
}

/* --wide: each member's use, summed by user and by name; a program
 * that ran unshared says so; a daemon's document before version 6 has
 * no use figures, shown as "-" rather than as zeros. */
static void test_status_use(void **state)
{
	static const char member[] =
		"{\"uuid\": \"GPU-a\", \"state\": \"holding\", "
		"\"managed\": 1048576, \"gpu_mem\": 50331648, \"sm_pct\": 37, "
		"\"busy_ms\": 1500, \"idle_ms\": 61000, \"swapin_bytes\": 0, "
		"\"swapout_bytes\": 2097152}";
	char doc[2048], *t;
	(void)state;

	snprintf(doc, sizeof(doc), "{\"version\": 6, \"gpus\": [{\"uuid\": "
		 "\"GPU-a\", \"index\": 0, \"capacity\": 1073741824}], "
		 "\"clients\": [{\"id\": 1, \"pid\": 10, \"uid\": 0, "
		 "\"label\": \"k8s:0-1\", \"name\": \"ns/pod/c\", "
		 "\"gpus\": [%s], \"unshared_ms\": 2500, \"unshared_why\": "
		 "\"lost\"}, {\"id\": 2, \"pid\": 11, \"uid\": 0, \"label\": "
		 "\"job\", \"name\": \"\", \"gpus\": [%s], \"unshared_why\": "
		 "\"\"}]}", member, member);
	t = printed_as(doc, 1);
	contains(t, "GPU-MEM");
	contains(t, "48.0 MiB  37%     1.5 s     1m01s        0 B"
		    "    2.0 MiB");
	/* The user's two programs, then the named one alone. */
	contains(t, "BY USER");
	contains(t, "root                       0    96.0 MiB    2.0 MiB   74%"
		    "     3.0 s     2m02s");
	contains(t, "ns/pod/c                 all    48.0 MiB    1.0 MiB   37%"
		    "     1.5 s     1m01s");
	contains(t, "ran unshared for 2.5 s before it connected "
		    "(its connection to the scheduler ended)");
	free(t);
	/* Without --wide: no use columns, the unshared line all the same. */
	t = printed(doc);
	assert_null(strstr(t, "GPU-MEM"));
	contains(t, "ran unshared for 2.5 s");
	free(t);
	/* Document version 5: the keys absent, every figure "-". */
	doc[12] = '5';
	assert_non_null(strstr(doc, "\"version\": 5"));
	t = printed_as(doc, 1);
	assert_null(strstr(t, "48.0 MiB"));
	assert_null(strstr(t, "BY USER"));
	contains(t, "         -    -         -         -");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_lists_every_command),
		cmocka_unit_test(test_every_command_builds),
		cmocka_unit_test(test_fair_share),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_gpu_target),
		cmocka_unit_test(test_local_command),
		cmocka_unit_test(test_status_words),
		cmocka_unit_test(test_status_use),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
