/*
 * vsharectl check and vsharectl bytes: what vshare-run asks of the
 * project's C code instead of parsing sizes or vsharectl's words itself.
 *
 *   vsharectl check    whether the scheduler answers, in one line:
 *                      "scheduler: reachable (protocol version N)",
 *                      "scheduler: reachable (status refused: ...)" or
 *                      "scheduler: not reachable: WHY", WHY saying what
 *                      to do (vc_connect_why); exit 0 or 3.
 *   vsharectl bytes S  the bytes of the memory size S, in the grammar of
 *                      VSHARE_MEM_LIMIT (src/common/size.c: no unit below
 *                      1 MiB is a unit left out); exit 0 or 2.
 *   vsharectl label T  the label T as status will show it (src/common/
 *                      label.c's rule), refused past what HELLO carries;
 *                      exit 0 or 2.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "label.h"
#include "size.h"
#include "status_json.h"
#include "vc.h"
#include "vc_check.h"

static int usage(const char *cmd, const char *syn)
{
	fprintf(stderr, "usage: vsharectl %s%s\n", cmd, syn);
	return VC_EXIT_USAGE;
}

/* The protocol version in a status document; 0 before version 3. */
static double doc_protocol(const char *json)
{
	struct vs_st_val v[VS_SD__N];
	cJSON *root = cJSON_Parse(json);
	double proto = 0;

	if (root != NULL) {
		vs_status_get(root, &vs_status_doc, v);
		proto = v[VS_SD_protocol].num;
		cJSON_Delete(root);
	}
	return proto;
}

int vc_check_cmd(const struct vc_args *a, int argc, char **argv)
{
	struct vc_reply r = { 0, NULL, 0, 1 };
	struct vs_status_req req;
	const char *path = a->socket ? a->socket : getenv("VSHARE_SOCKET");
	char why[512];
	int fd, ec = 0, rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: vsharectl check\nWhether vshare-scheduler "
		       "answers on its socket, in one line; exit 0 if it does, "
		       "3 if not.\n");
		return VC_EXIT_OK;
	}
	if (argc != 1)
		return usage("check", "");
	if (path == NULL || *path == '\0')
		path = VS_DEFAULT_SOCKET;
	fd = vc_connect_why(path, &ec, why, sizeof(why));
	if (fd < 0) {
		printf("scheduler: not reachable: %s\n", why);
		return VC_EXIT_DOWN;
	}
	memset(&req, 0, sizeof(req));
	rc = vc_call(fd, VS_MSG_STATUS, &req, sizeof(req), &r);
	close(fd);
	if (rc == VC_EXIT_OK && r.status != VS_OK) {
		/* A status for admins only: a REPLY that refuses, from a
		 * daemon that runs. */
		printf("scheduler: reachable (status refused: %s)\n",
		       r.len ? r.text : vs_err_name(r.status));
	} else if (rc == VC_EXIT_OK) {
		double proto = doc_protocol(r.text);

		if (proto > 0)
			printf("scheduler: reachable (protocol version %.0f)\n",
			       proto);
		else
			printf("scheduler: reachable (protocol version unknown: "
			       "an older vshare-scheduler)\n");
	} else if (r.text != NULL) {
		/* The daemon answered, with a refusal of its own (a status
		 * for admins only): it runs. */
		printf("scheduler: reachable (status refused: %s)\n", r.text);
		rc = VC_EXIT_OK;
	} else {
		printf("scheduler: not reachable: no answer from %s (above)\n",
		       path);
		rc = VC_EXIT_DOWN;
	}
	free(r.text);
	return rc;
}

int vc_bytes_cmd(const struct vc_args *a, int argc, char **argv)
{
	uint64_t v;
	const char *s;

	(void)a;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: vsharectl bytes SIZE\nThe bytes of a memory size "
		       "as VSHARE_MEM_LIMIT reads it (8G, 512M, 1.5T, 8GiB, "
		       "4096B; a number\nwith no unit is bytes from 1 MiB on, "
		       "and refused below: a unit left out).\n");
		return VC_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '\0')
		return usage("bytes", " SIZE");
	s = argv[1];
	switch (vs_parse_size(s, VS_SIZE_LOWER_B | VS_SIZE_NEED_UNIT, &v)) {
	case 0:
		printf("%llu\n", (unsigned long long)v);
		return VC_EXIT_OK;
	case -2:
		fprintf(stderr, "vsharectl: '%s' has no unit and is below "
			"1 MiB: add one (like %sG or %sM; bytes as %sB)\n", s, s,
			s, s);
		return VC_EXIT_USAGE;
	default:
		fprintf(stderr, "vsharectl: '%s' is not a size (like 8G, 512M "
			"or 1073741824)\n", s);
		return VC_EXIT_USAGE;
	}
}

int vc_label_cmd(const struct vc_args *a, int argc, char **argv)
{
	char label[VS_LABEL_MAX];

	(void)a;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: vsharectl label TEXT\nThe label as vsharectl "
		       "status shows it (a byte that is not UTF-8 text, or a "
		       "control\ncharacter, becomes '?'); at most %d bytes.\n",
		       VS_LABEL_MAX - 1);
		return VC_EXIT_OK;
	}
	if (argc != 2 || argv[1][0] == '\0')
		return usage("label", " TEXT");
	if (strlen(argv[1]) >= sizeof(label)) {
		fprintf(stderr, "vsharectl: label '%s' is longer than %d bytes\n",
			argv[1], VS_LABEL_MAX - 1);
		return VC_EXIT_USAGE;
	}
	strcpy(label, argv[1]);
	vs_label_clean(label);
	printf("%s\n", label);
	return VC_EXIT_OK;
}
