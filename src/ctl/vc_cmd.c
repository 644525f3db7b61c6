/*
 * vsharectl's command line: the commands and the options are tables
 * (cmds[], opts[]), each row giving what parsing, --help and dispatch
 * need, so that a command is one row.
 */
#include <errno.h>
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vc.h"
#include "vc_cdi.h"
#include "vc_check.h"
#include "vc_name.h"

#ifndef VSHARE_VERSION
#define VSHARE_VERSION "0"
#endif

static int build_none(const struct vc_cmd *, const char *const *,
		      struct vs_admin_set *);
static int build_value(const struct vc_cmd *, const char *const *,
		       struct vs_admin_set *);
static int build_number(const struct vc_cmd *, const char *const *,
			struct vs_admin_set *);
static int build_policy(const struct vc_cmd *, const char *const *,
			struct vs_admin_set *);
static int build_weight(const struct vc_cmd *, const char *const *,
			struct vs_admin_set *);
static int show_status(const struct vc_args *, const struct vc_reply *);
static int show_metrics(const struct vc_args *, const struct vc_reply *);
static int show_reply(const struct vc_args *, const struct vc_reply *);

/* name, argument and its words, its range and unit, admin, --gpu, help,
 * request, value, build, show, local. */
static const struct vc_cmd cmds[] = {
	{ "status", NULL, 0, 0, 0, NULL, 0, 0,
	  "GPUs, their holders and queues, and clients",
	  VS_MSG_STATUS, 0, build_none, show_status, NULL },
	{ "metrics", NULL, 0, 0, 0, NULL, 0, 0,
	  "the scheduler's metrics, Prometheus text format",
	  VS_MSG_METRICS, 0, build_none, show_metrics, NULL },
	{ "set-tq", "SECONDS", 1, VS_TQ_MIN_S, VS_TQ_MAX_S, "seconds", 1, 1,
	  "time quantum",
	  VS_MSG_SET_TQ, 0, build_number, show_reply, NULL },
	{ "set-slice", "MS", 1, VS_SLICE_MIN_MS, VS_SLICE_MAX_MS, "ms", 1, 1,
	  "minimum slice before a fair preemption",
	  VS_MSG_SET_SLICE, 0, build_number, show_reply, NULL },
	{ "policy", "fair|fcfs", 1, 0, 0, NULL, 1, 0,
	  "queue order of every GPU: fair share between users, or arrival",
	  VS_MSG_SET_POLICY, 0, build_policy, show_reply, NULL },
	{ "set-weight", "USER|UID WEIGHT", 2, VS_WEIGHT_MIN, VS_WEIGHT_MAX, "",
	  1, 0, "a user's weight in the fair share (while it has programs)",
	  VS_MSG_SET_WEIGHT, 0, build_weight, show_reply, NULL },
	{ "enable", NULL, 0, 0, 0, NULL, 1, 1, "mode on: one holder at a time",
	  VS_MSG_SET_MODE, VS_MODE_ON, build_value, show_reply, NULL },
	{ "disable", NULL, 0, 0, 0, NULL, 1, 1, "mode off: never serialize",
	  VS_MSG_SET_MODE, VS_MODE_OFF, build_value, show_reply, NULL },
	{ "auto", NULL, 0, 0, 0, NULL, 1, 1,
	  "mode auto: serialize only what does not fit",
	  VS_MSG_SET_MODE, VS_MODE_AUTO, build_value, show_reply, NULL },
	{ .name = "cdi", .arg = "generate [OPTIONS]",
	  .help = "write a CDI spec for containers (cdi generate --help)",
	  .local = vc_cdi_cmd },
	{ .name = "name", .arg = "[--prefix P] LABEL=NAME...", .admin = 1,
	  .help = "name a label's clients in status (name --help)",
	  .local = vc_name_cmd },
	{ .name = "check",
	  .help = "whether the scheduler answers, and what to do if not",
	  .local = vc_check_cmd },
	{ .name = "bytes", .arg = "SIZE",
	  .help = "the bytes of a memory size, as VSHARE_MEM_LIMIT reads it",
	  .local = vc_bytes_cmd },
	{ .name = "label", .arg = "TEXT",
	  .help = "a label as status shows it, or a Jupyter kernel's "
		  "(label --help)",
	  .local = vc_label_cmd },
};
#define N_CMDS (sizeof(cmds) / sizeof(cmds[0]))

const struct vc_cmd *vc_cmds(size_t *n)
{
	*n = N_CMDS;
	return cmds;
}

/* Take one option: 0, or -1 to exit 0 at once (--help, --version). */
typedef int (*vc_opt_fn)(struct vc_args *a, const char *arg);

struct vc_opt {
	const char *name;
	int         ch;
	const char *arg;       /* its argument, NULL if none */
	const char *help;      /* lines after the first are indented */
	vc_opt_fn   take;
};

static int opt_socket(struct vc_args *a, const char *arg);
static int opt_json(struct vc_args *a, const char *arg);
static int opt_gpu(struct vc_args *a, const char *arg);
static int opt_wide(struct vc_args *a, const char *arg);
static int opt_help(struct vc_args *a, const char *arg);
static int opt_version(struct vc_args *a, const char *arg);

static const struct vc_opt opts[] = {
	{ "socket", 's', "PATH", "scheduler socket (default $VSHARE_SOCKET "
	  "or\n" VS_DEFAULT_SOCKET ")", opt_socket },
	{ "json", 'j', NULL, "machine-readable output", opt_json },
	{ "gpu", 'g', "G", "a GPU by UUID or by index (nvidia-smi's, else "
	  "the order\nof first attach); default: every GPU, and the default "
	  "for new ones",
	  opt_gpu },
	{ "wide", 'w', NULL, "status: whole labels and user names, however "
	  "wide\nthe table gets, and what each client uses", opt_wide },
	{ "help", 'h', NULL, "this help", opt_help },
	{ "version", 'V', NULL, "the version of vsharectl and its protocol",
	  opt_version },
};
#define N_OPTS (sizeof(opts) / sizeof(opts[0]))

static void usage_cmd(FILE *f, const struct vc_cmd *c)
{
	char syn[64];

	snprintf(syn, sizeof(syn), "%s%s%s%s", c->name, c->arg ? " " : "",
		 c->arg ? c->arg : "", c->gpu ? " [--gpu G]" : "");
	fprintf(f, "  %-26s%s%s", syn, c->admin ? "* " : "  ", c->help);
	if (c->hi > 0)
		fprintf(f, ", %u to %u%s%s", c->lo, c->hi, *c->unit ? " " : "",
			c->unit);
	fprintf(f, "\n");
}

static void usage_opt(FILE *f, const struct vc_opt *o)
{
	char syn[64];
	const char *h = o->help, *nl;

	snprintf(syn, sizeof(syn), "-%c, --%s%s%s", o->ch, o->name,
		 o->arg ? " " : "", o->arg ? o->arg : "");
	fprintf(f, "  %-20s", syn);
	while ((nl = strchr(h, '\n')) != NULL) {
		fprintf(f, "%.*s\n%22s", (int)(nl - h), h, "");
		h = nl + 1;
	}
	fprintf(f, "%s\n", h);
}

void vc_usage(FILE *f)
{
	fprintf(f, "usage: vsharectl [-s PATH] [--json] [--wide] COMMAND\ncommands:\n");
	for (size_t i = 0; i < N_CMDS; i++)
		usage_cmd(f, &cmds[i]);
	fprintf(f, "  (* needs root or the admin group)\noptions:\n");
	for (size_t i = 0; i < N_OPTS; i++)
		usage_opt(f, &opts[i]);
	fprintf(f, "exit status: 0 ok, 1 refused or failed, 2 bad usage, "
		"3 not running\n");
}

static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "vsharectl: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see vsharectl --help)\n");
	return VC_EXIT_USAGE;
}

static const struct vc_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < N_CMDS; i++)
		if (strcmp(cmds[i].name, name) == 0)
			return &cmds[i];
	return NULL;
}

/* getopt's short and long options, from opts[]. */
static void getopt_tables(char *shorts, struct option *lo)
{
	for (size_t i = 0; i < N_OPTS; i++) {
		*shorts++ = (char)opts[i].ch;
		if (opts[i].arg)
			*shorts++ = ':';
		lo[i] = (struct option){ opts[i].name, opts[i].arg ?
			required_argument : no_argument, NULL, opts[i].ch };
	}
	*shorts = '\0';
	lo[N_OPTS] = (struct option){ NULL, 0, NULL, 0 };
}

static int opt_socket(struct vc_args *a, const char *arg)
{
	a->socket = arg;
	return 0;
}

static int opt_json(struct vc_args *a, const char *arg)
{
	(void)arg;
	a->json = 1;
	return 0;
}

static int opt_gpu(struct vc_args *a, const char *arg)
{
	a->gpu = arg;
	return 0;
}

static int opt_wide(struct vc_args *a, const char *arg)
{
	(void)arg;
	a->wide = 1;
	return 0;
}

static int opt_help(struct vc_args *a, const char *arg)
{
	(void)a;
	(void)arg;
	vc_usage(stdout);
	return -1;
}

static int opt_version(struct vc_args *a, const char *arg)
{
	(void)a;
	(void)arg;
	printf("vsharectl %s (protocol %u)\n", VSHARE_VERSION,
	       VS_PROTO_VERSION);
	return -1;
}

/* One option as getopt returns it; 0, VC_EXIT_USAGE, or -1. */
static int take_opt(int ch, struct vc_args *a)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (opts[i].ch == ch)
			return opts[i].take(a, optarg);
	return bad("%s", "bad option");
}

/* Whether the option word s (a cluster of short options, or a long one)
 * takes the next word as its argument. */
static int takes_next_word(const char *s)
{
	for (size_t i = 0; i < N_OPTS; i++)
		if (s[1] == '-' && opts[i].arg && strcmp(s + 2, opts[i].name) == 0)
			return 1;
	for (const char *p = s + 1; s[1] != '-' && *p; p++)
		for (size_t i = 0; i < N_OPTS; i++)
			if (opts[i].ch == *p && opts[i].arg)
				return p[1] == '\0';
	return 0;
}

/* The index of the command's word: the first that is neither one of
 * vsharectl's options nor an option's argument; 0 if none. */
static int command_word(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return i + 1 < argc ? i + 1 : 0;
		if (argv[i][0] != '-' || argv[i][1] == '\0')
			return i;
		if (takes_next_word(argv[i]))
			i++;
	}
	return 0;
}

/* A local command takes vsharectl's options before its word; what follows
 * is its own, options included, so getopt must not see it. */
static int run_local(int argc, char **argv, int at, struct vc_args *a)
{
	char shorts[2 * N_OPTS + 1];
	struct option lo[N_OPTS + 1];
	int ch, rc;

	getopt_tables(shorts, lo);
	while ((ch = getopt_long(at, argv, shorts, lo, NULL)) != -1)
		if ((rc = take_opt(ch, a)) != 0)
			return rc;
	optind = 0;
	rc = a->cmd->local(a, argc - at, argv + at);
	return rc == VC_EXIT_OK ? -1 : rc;
}

int vc_parse_args(int argc, char **argv, struct vc_args *a)
{
	char shorts[2 * N_OPTS + 1];
	struct option lo[N_OPTS + 1];
	const char *name;
	int ch, rc, at = command_word(argc, argv);

	memset(a, 0, sizeof(*a));
	a->cmd = at > 0 ? find_cmd(argv[at]) : NULL;
	if (a->cmd != NULL && a->cmd->local != NULL)
		return run_local(argc, argv, at, a);
	getopt_tables(shorts, lo);
	while ((ch = getopt_long(argc, argv, shorts, lo, NULL)) != -1)
		if ((rc = take_opt(ch, a)) != 0)
			return rc;
	if (a->socket && a->socket[0] == '\0')
		return bad("%s", "--socket needs a path");
	if (optind >= argc)
		return bad("%s", "no command given");
	name = argv[optind++];
	a->cmd = find_cmd(name);
	if (a->cmd == NULL)
		return bad("unknown command \"%s\"", name);
	for (uint32_t i = 0; a->cmd->arg && i < a->cmd->nargs; i++) {
		if (optind >= argc)
			return bad("%s needs %s", name, a->cmd->arg);
		a->args[i] = argv[optind++];
	}
	if (optind < argc)
		return bad("unexpected argument \"%s\"", argv[optind]);
	if (a->gpu && !a->cmd->gpu)
		return bad("%s shows every GPU: no --gpu", name);
	if (a->wide && a->cmd->show != show_status)
		return bad("--wide is for status, not %s", name);
	return 0;
}

static int parse_target(const char *gpu, struct vs_admin_set *m)
{
	char *end;
	unsigned long v;

	if (gpu == NULL) {
		m->target = VS_TARGET_ALL;
		return 0;
	}
	if (gpu[0] >= '0' && gpu[0] <= '9' && strlen(gpu) < 8) {
		v = strtoul(gpu, &end, 10);
		if (*end == '\0') {
			m->target = VS_TARGET_INDEX;
			m->index = (uint32_t)v;
			return 0;
		}
	}
	if (vs_uuid_parse(gpu, m->uuid) != 0)
		return bad("--gpu: \"%s\" is neither an index nor a GPU UUID", gpu);
	m->target = 0;
	return 0;
}

static int build_none(const struct vc_cmd *c, const char *const *args,
		      struct vs_admin_set *m)
{
	(void)c;
	(void)args;
	(void)m;
	return 0;
}

static int build_value(const struct vc_cmd *c, const char *const *args,
		       struct vs_admin_set *m)
{
	(void)args;
	m->value = c->value;
	return 0;
}

/* A decimal number in lo..hi; 0 or -1. */
static int number(const char *s, uint32_t lo, uint32_t hi, uint32_t *out)
{
	char *end;
	unsigned long v;

	if (s[0] < '0' || s[0] > '9' || strlen(s) > 10)
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (*end || errno != 0 || v < lo || v > hi)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

/* A decimal number in the command's range. */
static int build_number(const struct vc_cmd *c, const char *const *args,
			struct vs_admin_set *m)
{
	if (number(args[0], c->lo, c->hi, &m->value) != 0)
		return bad("%s: \"%s\" is not %u to %u %s", c->name, args[0],
			   c->lo, c->hi, c->unit);
	return 0;
}

static int build_policy(const struct vc_cmd *c, const char *const *args,
			struct vs_admin_set *m)
{
	if (vs_policy_parse(args[0], &m->value) != 0)
		return bad("%s: \"%s\" is neither fair nor fcfs", c->name,
			   args[0]);
	m->target = VS_TARGET_ALL;
	return 0;
}

/* A user by name (this machine's, as the daemon's uids are) or by uid,
 * then its weight. */
static int build_weight(const struct vc_cmd *c, const char *const *args,
			struct vs_admin_set *m)
{
	const struct passwd *pw;

	if (number(args[0], 0, UINT32_MAX - 1, &m->index) != 0) {
		pw = args[0][0] != '\0' ? getpwnam(args[0]) : NULL;
		if (pw == NULL)
			return bad("%s: no user \"%s\"", c->name, args[0]);
		m->index = (uint32_t)pw->pw_uid;
	}
	if (number(args[1], c->lo, c->hi, &m->value) != 0)
		return bad("%s: weight \"%s\" is not %u to %u", c->name,
			   args[1], c->lo, c->hi);
	m->target = VS_TARGET_UID;
	return 0;
}

int vc_build(const struct vc_args *a, struct vs_admin_set *m)
{
	memset(m, 0, sizeof(*m));
	if (a->cmd->build(a->cmd, a->args, m) != 0)
		return VC_EXIT_USAGE;
	return a->cmd->gpu ? parse_target(a->gpu, m) : 0;
}

static int show_status(const struct vc_args *a, const struct vc_reply *r)
{
	cJSON *doc;
	char *text;

	if (r->status != VS_OK)
		return show_reply(a, r);
	if (!a->json)
		return vc_print_status(r->text, a->wide);
	doc = cJSON_Parse(r->text);
	text = doc ? cJSON_Print(doc) : NULL;
	cJSON_Delete(doc);
	if (text == NULL) {
		fprintf(stderr, "vsharectl: the status is not valid JSON\n");
		return VC_EXIT_ERROR;
	}
	puts(text);
	free(text);
	return VC_EXIT_OK;
}

/* The exposition text as the daemon wrote it (already for machines:
 * --json changes nothing but a refusal's form). */
static int show_metrics(const struct vc_args *a, const struct vc_reply *r)
{
	if (r->status != VS_OK)
		return show_reply(a, r);
	if (fwrite(r->text, 1, r->len, stdout) != r->len || fflush(stdout)) {
		fprintf(stderr, "vsharectl: metrics: cannot write: %s\n",
			strerror(errno));
		return VC_EXIT_ERROR;
	}
	return VC_EXIT_OK;
}

/* A message reply (or a refused status), as text or JSON. */
static int show_reply(const struct vc_args *a, const struct vc_reply *r)
{
	if (a->json) {
		cJSON *o = cJSON_CreateObject();
		char *text;

		cJSON_AddNumberToObject(o, "status", r->status);
		cJSON_AddStringToObject(o, "error", r->status ?
					vs_err_name(r->status) : "");
		cJSON_AddStringToObject(o, "message", r->text);
		text = cJSON_Print(o);
		if (text)
			puts(text);
		free(text);
		cJSON_Delete(o);
	}
	if (r->status == VS_OK) {
		if (!a->json)
			printf("%s\n", r->text);
		return VC_EXIT_OK;
	}
	fprintf(stderr, "vsharectl: %s%s\n", r->status == VS_E_PERM &&
		strncmp(r->text, "permission", 10) ? "permission denied: " : "",
		r->len ? r->text : vs_err_name(r->status));
	return VC_EXIT_ERROR;
}

