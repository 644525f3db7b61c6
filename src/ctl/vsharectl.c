/*
 * vsharectl: show and change the state of vshare-scheduler.
 *
 *   vsharectl [-s PATH] [--json] status
 *   vsharectl [-s PATH] [--json] set-tq SECONDS [--gpu UUID|INDEX]
 *   vsharectl [-s PATH] [--json] enable|disable|auto [--gpu UUID|INDEX]
 *
 * Exit codes: 0 ok, 1 the daemon refused or failed, 2 bad usage, 3 the
 * daemon is not running.
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "vc.h"

#ifndef VSHARE_VERSION
#define VSHARE_VERSION "0"
#endif

struct args {
	const char *socket;
	int json;
	const char *gpu;
	const char *cmd;
	const char *value;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: vsharectl [-s PATH] [--json] COMMAND\n"
"commands:\n"
"  status                    GPUs, their holders and queues, and clients\n"
"  set-tq SECONDS [--gpu G]  time quantum, 1 to 86400 seconds\n"
"  enable [--gpu G]          mode on: one holder at a time\n"
"  disable [--gpu G]         mode off: never serialize\n"
"  auto [--gpu G]            mode auto: serialize only what does not fit\n"
"options:\n"
"  -s, --socket PATH   scheduler socket (default $VSHARE_SOCKET or\n"
"                      " VS_DEFAULT_SOCKET ")\n"
"  -j, --json          machine-readable output\n"
"  -g, --gpu G         a GPU by UUID or by index (order of first attach);\n"
"                      default: every GPU, and the default for new ones\n"
"  -h, --help, -V, --version\n"
"exit status: 0 ok, 1 refused or failed, 2 bad usage, 3 not running\n");
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

/* 0, VC_EXIT_USAGE, or -1 for --help/--version (exit 0). */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "gpu", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	memset(a, 0, sizeof(*a));
	while ((ch = getopt_long(argc, argv, "s:jg:hV", lo, NULL)) != -1) {
		switch (ch) {
		case 's': a->socket = optarg; break;
		case 'j': a->json = 1; break;
		case 'g': a->gpu = optarg; break;
		case 'h': usage(stdout); return -1;
		case 'V':
			printf("vsharectl %s (protocol %u)\n", VSHARE_VERSION,
			       VS_PROTO_VERSION);
			return -1;
		default: return bad("%s", "bad option");
		}
	}
	if (a->socket && a->socket[0] == '\0')
		return bad("%s", "--socket needs a path");
	if (optind >= argc)
		return bad("%s", "no command given");
	a->cmd = argv[optind++];
	if (strcmp(a->cmd, "set-tq") == 0) {
		if (optind >= argc)
			return bad("%s", "set-tq needs SECONDS");
		a->value = argv[optind++];
	}
	if (optind < argc)
		return bad("unexpected argument \"%s\"", argv[optind]);
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

/* Build the request of a command; 0 or VC_EXIT_USAGE. */
static int build(const struct args *a, uint16_t *type, struct vs_admin_set *m)
{
	memset(m, 0, sizeof(*m));
	if (strcmp(a->cmd, "status") == 0) {
		if (a->gpu)
			return bad("%s", "status shows every GPU: no --gpu");
		*type = VS_MSG_STATUS;
		return 0;
	}
	if (strcmp(a->cmd, "set-tq") == 0) {
		char *end;
		unsigned long v = strtoul(a->value, &end, 10);

		if (a->value[0] < '0' || a->value[0] > '9' || *end ||
		    v < 1 || v > 86400)
			return bad("set-tq: \"%s\" is not 1 to 86400 seconds",
				   a->value);
		*type = VS_MSG_SET_TQ;
		m->value = (uint32_t)v;
	} else if (strcmp(a->cmd, "enable") == 0) {
		*type = VS_MSG_SET_MODE;
		m->value = VS_MODE_ON;
	} else if (strcmp(a->cmd, "disable") == 0) {
		*type = VS_MSG_SET_MODE;
		m->value = VS_MODE_OFF;
	} else if (strcmp(a->cmd, "auto") == 0) {
		*type = VS_MSG_SET_MODE;
		m->value = VS_MODE_AUTO;
	} else {
		return bad("unknown command \"%s\"", a->cmd);
	}
	return parse_target(a->gpu, m);
}

static int show(const struct args *a, uint16_t type, const struct vc_reply *r)
{
	if (type == VS_MSG_STATUS && r->status == VS_OK) {
		cJSON *doc;
		char *text;

		if (!a->json)
			return vc_print_status(r->text);
		doc = cJSON_Parse(r->text);
		text = doc ? cJSON_Print(doc) : NULL;
		cJSON_Delete(doc);
		if (text == NULL) {
			fprintf(stderr, "vsharectl: the status is not valid "
				"JSON\n");
			return VC_EXIT_ERROR;
		}
		puts(text);
		free(text);
		return VC_EXIT_OK;
	}
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

int main(int argc, char **argv)
{
	struct args a;
	struct vs_admin_set set;
	struct vs_status_req sreq;
	struct vc_reply r = { 0, NULL, 0 };
	uint16_t type = 0;
	const char *path;
	int rc, fd, ec = 0;

	rc = parse_args(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? VC_EXIT_OK : rc;
	rc = build(&a, &type, &set);
	if (rc != 0)
		return rc;
	path = a.socket ? a.socket : getenv("VSHARE_SOCKET");
	if (path == NULL || *path == '\0')
		path = VS_DEFAULT_SOCKET;
	fd = vc_connect(path, &ec);
	if (fd < 0)
		return ec;
	memset(&sreq, 0, sizeof(sreq));
	if (type == VS_MSG_STATUS)
		rc = vc_call(fd, type, &sreq, sizeof(sreq), &r);
	else
		rc = vc_call(fd, type, &set, sizeof(set), &r);
	close(fd);
	if (rc == VC_EXIT_OK)
		rc = show(&a, type, &r);
	free(r.text);
	return rc;
}
