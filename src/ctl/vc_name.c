/*
 * vsharectl name: names for labels (VS_MSG_SET_NAME), which status and
 * the metrics show for the clients of each label. The Kubernetes device
 * plugin runs it with its whole set at each change:
 *
 *   vsharectl name --prefix k8s: k8s:0-2=ns/pod/container ...
 *
 * which clears every name under the prefix, then sets each one, on one
 * connection. Without --prefix, LABEL=NAME sets one name and LABEL= removes
 * it.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "label.h"
#include "vc.h"
#include "vc_name.h"

void vc_name_usage(FILE *f)
{
	fprintf(f,
"usage: vsharectl name [--prefix P] [LABEL=NAME]...\n"
"Name the clients of a label in status and the metrics (admin). LABEL= removes\n"
"a name. --prefix P first removes every name whose label begins with P, so a\n"
"program that names its labels can send its whole set each time.\n"
"Labels of up to %d bytes, names of up to %d (longer ones are cut, ending\n"
"in '~').\n", VS_NAME_LABEL_MAX - 1, VS_NAME_MAX - 1);
}

static int usage_err(const char *what, const char *arg)
{
	fprintf(stderr, "vsharectl: name: %s%s%s\n(see vsharectl name --help)\n",
		what, arg ? ": " : "", arg ? arg : "");
	return VC_EXIT_USAGE;
}

/* One request from "LABEL=NAME" (or the prefix, with clear): 0 or a
 * usage error. A name too long is cut at a character, ending in '~'. */
static int fill(struct vs_set_name *m, const char *label, size_t llen,
		const char *name, int clear)
{
	memset(m, 0, sizeof(*m));
	m->flags = clear ? VS_NAME_CLEAR : 0;
	if (llen == 0 || llen >= sizeof(m->label))
		return usage_err("a label has 1 to 47 bytes", label);
	memcpy(m->label, label, llen);
	if (strlen(name) >= sizeof(m->name))
		vs_label_fit(name, sizeof(m->name) - 1, m->name,
			     sizeof(m->name));
	else
		strcpy(m->name, name);
	for (const char *p = m->label; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return usage_err("a control character in a label", NULL);
	for (char *p = m->name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return 0;
}

static int send_one(int fd, const struct vs_set_name *m)
{
	struct vc_reply r = { 0, NULL, 0, 0, 0 };
	int rc = vc_call(fd, VS_MSG_SET_NAME, m, sizeof(*m), &r);

	if (rc == VC_EXIT_OK && r.status != VS_OK) {
		fprintf(stderr, "vsharectl: name: %s\n", r.text);
		rc = VC_EXIT_ERROR;
	}
	free(r.text);
	return rc;
}

static int parse(int argc, char **argv, const char **prefix)
{
	static const struct option lo[] = {
		{ "prefix", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	optind = 0;
	while ((ch = getopt_long(argc, argv, "+p:h", lo, NULL)) != -1) {
		if (ch == 'p')
			*prefix = optarg;
		else if (ch == 'h') {
			vc_name_usage(stdout);
			return -1;
		} else
			return usage_err("bad option", NULL);
	}
	if (*prefix == NULL && optind >= argc)
		return usage_err("LABEL=NAME or --prefix wanted", NULL);
	return 0;
}

int vc_name_cmd(const struct vc_args *a, int argc, char **argv)
{
	const char *prefix = NULL, *path;
	struct vs_set_name *m;
	int n = 0, rc, fd, ec = 0;

	if ((rc = parse(argc, argv, &prefix)) != 0)
		return rc < 0 ? VC_EXIT_OK : rc;
	m = calloc((size_t)(argc - optind + 1), sizeof(*m));
	if (m == NULL)
		return VC_EXIT_ERROR;
	if (prefix != NULL)
		rc = fill(&m[n++], prefix, strlen(prefix), "", 1);
	for (int i = optind; rc == 0 && i < argc; i++) {
		const char *eq = strchr(argv[i], '=');

		if (eq == NULL) {
			rc = usage_err("LABEL=NAME wanted", argv[i]);
			break;
		}
		rc = fill(&m[n++], argv[i], (size_t)(eq - argv[i]), eq + 1, 0);
	}
	path = a->socket ? a->socket : getenv("VSHARE_SOCKET");
	if (path == NULL || *path == '\0')
		path = VS_DEFAULT_SOCKET;
	fd = rc == 0 ? vc_connect(path, &ec) : -1;
	if (rc == 0 && fd < 0)
		rc = ec;
	for (int i = 0; rc == 0 && i < n; i++)
		rc = send_one(fd, &m[i]);
	if (fd >= 0)
		close(fd);
	free(m);
	return rc;
}
