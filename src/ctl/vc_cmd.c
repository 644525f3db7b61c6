/*
 * vsharectl's command line: the commands and the options are tables
 * (cmds[], opts[]), each row giving what parsing, --help and dispatch
 * need, so that a command is one row.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "vc.h"

#ifndef VSHARE_VERSION
#define VSHARE_VERSION "0"
#endif

static int build_none(const struct vc_cmd *, const char *,
		      struct vs_admin_set *);
static int build_value(const struct vc_cmd *, const char *,
		       struct vs_admin_set *);
static int build_number(const struct vc_cmd *, const char *,
			struct vs_admin_set *);
static int show_status(const struct vc_args *, const struct vc_reply *);
static int show_reply(const struct vc_args *, const struct vc_reply *);

/* name, argument, its range and unit, admin, --gpu, help, request,
 * value, build, show. */
static const struct vc_cmd cmds[] = {
	{ "status", NULL, 0, 0, NULL, 0, 0,
	  "GPUs, their holders and queues, and clients",
	  VS_MSG_STATUS, 0, build_none, show_status },
	{ "set-tq", "SECONDS", VS_TQ_MIN_S, VS_TQ_MAX_S, "seconds", 1, 1,
	  "time quantum",
	  VS_MSG_SET_TQ, 0, build_number, show_reply },
	{ "enable", NULL, 0, 0, NULL, 1, 1, "mode on: one holder at a time",
	  VS_MSG_SET_MODE, VS_MODE_ON, build_value, show_reply },
	{ "disable", NULL, 0, 0, NULL, 1, 1, "mode off: never serialize",
	  VS_MSG_SET_MODE, VS_MODE_OFF, build_value, show_reply },
	{ "auto", NULL, 0, 0, NULL, 1, 1,
	  "mode auto: serialize only what does not fit",
	  VS_MSG_SET_MODE, VS_MODE_AUTO, build_value, show_reply },
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
static int opt_help(struct vc_args *a, const char *arg);
static int opt_version(struct vc_args *a, const char *arg);

static const struct vc_opt opts[] = {
	{ "socket", 's', "PATH", "scheduler socket (default $VSHARE_SOCKET "
	  "or\n" VS_DEFAULT_SOCKET ")", opt_socket },
	{ "json", 'j', NULL, "machine-readable output", opt_json },
	{ "gpu", 'g', "G", "a GPU by UUID or by index (order of first "
	  "attach);\ndefault: every GPU, and the default for new ones",
	  opt_gpu },
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
		fprintf(f, ", %u to %u %s", c->lo, c->hi, c->unit);
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
	fprintf(f, "usage: vsharectl [-s PATH] [--json] COMMAND\ncommands:\n");
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

int vc_parse_args(int argc, char **argv, struct vc_args *a)
{
	char shorts[2 * N_OPTS + 1];
	struct option lo[N_OPTS + 1];
	const char *name;
	int ch, rc;

	memset(a, 0, sizeof(*a));
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
	if (a->cmd->arg) {
		if (optind >= argc)
			return bad("%s needs %s", name, a->cmd->arg);
		a->value = argv[optind++];
	}
	if (optind < argc)
		return bad("unexpected argument \"%s\"", argv[optind]);
	if (a->gpu && !a->cmd->gpu)
		return bad("%s shows every GPU: no --gpu", name);
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

static int build_none(const struct vc_cmd *c, const char *arg,
		      struct vs_admin_set *m)
{
	(void)c;
	(void)arg;
	(void)m;
	return 0;
}

static int build_value(const struct vc_cmd *c, const char *arg,
		       struct vs_admin_set *m)
{
	(void)arg;
	m->value = c->value;
	return 0;
}

/* A decimal number in the command's range. */
static int build_number(const struct vc_cmd *c, const char *arg,
			struct vs_admin_set *m)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (arg[0] < '0' || arg[0] > '9' || *end || v < c->lo || v > c->hi)
		return bad("%s: \"%s\" is not %u to %u %s", c->name, arg,
			   c->lo, c->hi, c->unit);
	m->value = (uint32_t)v;
	return 0;
}

int vc_build(const struct vc_args *a, struct vs_admin_set *m)
{
	memset(m, 0, sizeof(*m));
	if (a->cmd->build(a->cmd, a->value, m) != 0)
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
		return vc_print_status(r->text);
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

