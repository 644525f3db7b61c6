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
 *   vsharectl label --jupyter-kernel NAME [--] WORD...
 *                      the label of a Jupyter kernel whose command is
 *                      WORD..., jupyter:ID:NAME, cut between characters
 *                      to what HELLO carries; exit 0 or 2.
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

/* A daemon that answered in a protocol version this vsharectl does not
 * speak: one line that says both versions, and the daemon's words. */
static void print_version_refused(const struct vc_reply *r)
{
	if (r->theirs != 0)
		printf("scheduler: reachable, but it speaks protocol version "
		       "%u and this vsharectl versions %u to %u: install "
		       "vsharectl and vshare-scheduler of one vshare release",
		       r->theirs, VS_PROTO_VERSION_MIN, VS_PROTO_VERSION);
	else
		printf("scheduler: reachable, but it refused this vsharectl's "
		       "protocol versions %u to %u: install vsharectl and "
		       "vshare-scheduler of one vshare release",
		       VS_PROTO_VERSION_MIN, VS_PROTO_VERSION);
	if (r->text != NULL && r->text[0] != '\0')
		printf(" (it says: %s)", r->text);
	printf("\n");
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
	struct vc_reply r = { 0, NULL, 0, 1, 0 };
	struct vs_status_req req;
	const char *path = a->socket ? a->socket : getenv("VSHARE_SOCKET");
	char why[512];
	int fd, ec = 0, rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: vsharectl check\nWhether vshare-scheduler "
		       "answers on its socket, in one line; exit 0 if it does, "
		       "1 if it answers in a protocol version this vsharectl "
		       "does not speak, 3 if not.\n");
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
	if (rc != VC_EXIT_OK && r.status == VS_E_VERSION) {
		/* It runs, but we do not speak each other's protocol. */
		print_version_refused(&r);
	} else if (rc == VC_EXIT_OK && r.status != VS_OK) {
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
		/* The daemon answered, with an error of its own (too many
		 * connections): it runs. */
		printf("scheduler: reachable (%s: %s)\n",
		       r.status == VS_E_FULL ? "this connection refused" :
		       "the status refused", r.text);
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
	char why[VS_SIZE_ERR_LEN];
	uint64_t v;
	const char *s;
	int rc;

	(void)a;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		printf("usage: vsharectl bytes [--] SIZE\nThe bytes of a memory size "
		       "as VSHARE_MEM_LIMIT reads it (8G, 512M, 1.5T, 8GiB, "
		       "4096B; a number\nwith no unit is bytes from 1 MiB on, "
		       "and refused below: a unit left out).\n");
		return VC_EXIT_OK;
	}
	if (argc == 3 && strcmp(argv[1], "--") == 0) {
		argc--;
		argv++;
	}
	if (argc != 2 || argv[1][0] == '\0')
		return usage("bytes", " [--] SIZE");
	s = argv[1];
	rc = vs_parse_size(s, VS_SIZE_LOWER_B | VS_SIZE_NEED_UNIT, &v);
	if (rc != 0) {
		fprintf(stderr, "vsharectl: %s\n",
			vs_size_error(why, sizeof(why), s, rc));
		return VC_EXIT_USAGE;
	}
	printf("%llu\n", (unsigned long long)v);
	return VC_EXIT_OK;
}

/* The kernel id in a connection file's name among the command's words:
 * the first word whose base name is ID.json or kernel-ID.json, ID of
 * letters, digits, '_' and '-' (Jupyter names it kernel-UUID.json; a bare
 * KernelManager's tmpXXXX.json gives the start of its own name). Its
 * first 8 characters go into id (9 bytes); 0 when there is none. */
static int kernel_id(int argc, char **argv, char *id)
{
	for (int i = 0; i < argc; i++) {
		const char *base = strrchr(argv[i], '/');
		size_t len;

		base = base ? base + 1 : argv[i];
		len = strlen(base);
		if (len <= 5 || strcmp(base + len - 5, ".json") != 0)
			continue;
		len -= 5;
		if (strncmp(base, "kernel-", 7) == 0) {
			base += 7;
			len -= len >= 7 ? 7 : len;
		}
		if (len == 0 || strspn(base, "0123456789ABCDEFGHIJKLMNOPQRSTUVW"
				 "XYZabcdefghijklmnopqrstuvwxyz_-") < len)
			continue;
		snprintf(id, 9, "%.*s", (int)(len < 8 ? len : 8), base);
		return 1;
	}
	return 0;
}

/* A Jupyter kernel's label: jupyter:ID:NAME, the id first so that it
 * survives the status table's cut and tells two notebooks of one
 * kernelspec apart; jupyter:NAME without a connection file. NAME is cut
 * between characters so that the whole fits in what HELLO carries. */
static int jupyter_label(const char *name, int argc, char **argv)
{
	char id[9], label[VS_LABEL_MAX];
	int n;

	if (name[0] == '\0') {
		fprintf(stderr, "vsharectl: label: --jupyter-kernel needs a "
			"kernel name\n");
		return VC_EXIT_USAGE;
	}
	if (argc > 0 && strcmp(argv[0], "--") == 0) {
		argc--;
		argv++;
	}
	n = kernel_id(argc, argv, id) ?
		snprintf(label, sizeof(label), "jupyter:%s:", id) :
		snprintf(label, sizeof(label), "jupyter:");
	vs_label_cut(label + n, sizeof(label) - (size_t)n, name);
	vs_label_clean(label);
	printf("%s\n", label);
	return VC_EXIT_OK;
}

static void label_usage(void)
{
	printf("usage: vsharectl label [--] TEXT\n"
	       "       vsharectl label --jupyter-kernel NAME [--] "
	       "[COMMAND WORD]...\n"
	       "The label as vsharectl status shows it (a byte that is not "
	       "UTF-8 text, or a\ncontrol character, becomes '?'); at most "
	       "%d bytes, a longer TEXT refused.\n"
	       "--jupyter-kernel: the label of the kernel NAME that runs "
	       "COMMAND,\njupyter:ID:NAME, ID the first 8 characters of the "
	       "kernel id in its connection\nfile's name (kernel-ID.json "
	       "among the words), or jupyter:NAME without one;\nNAME is cut "
	       "between characters to fit.\n",
	       VS_LABEL_MAX - 1);
}

int vc_label_cmd(const struct vc_args *a, int argc, char **argv)
{
	char label[VS_LABEL_MAX];
	const char *kopt = "--jupyter-kernel";
	size_t klen = strlen(kopt);

	(void)a;
	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		label_usage();
		return VC_EXIT_OK;
	}
	if (argc >= 2 && strcmp(argv[1], kopt) == 0)
		return jupyter_label(argc > 2 ? argv[2] : "", argc - 3,
				     argv + 3);
	if (argc >= 2 && strncmp(argv[1], kopt, klen) == 0 &&
	    argv[1][klen] == '=')
		return jupyter_label(argv[1] + klen + 1, argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "--") == 0) {
		argc--;
		argv++;
	}
	if (argc != 2 || argv[1][0] == '\0')
		return usage("label", " [--] TEXT, or --jupyter-kernel NAME "
			     "[--] [WORD]...");
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
