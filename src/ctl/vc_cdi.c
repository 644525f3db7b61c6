/*
 * The CDI spec for vshare (see vc_cdi.h). Every device is one GPU's device
 * node; what all of them need (the control nodes, the shim, the socket
 * directory, the environment) is in the spec's common containerEdits, so a
 * container that asks for two GPUs gets it once.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "shim_node.h"
#include "vc.h"
#include "vc_cdi.h"

#ifndef VSHARE_SHIM_PATH
#define VSHARE_SHIM_PATH "/usr/lib/vshare/libvshare.so"
#endif

#define VC_CDI_MAX_GPUS 64

/* Nodes every CUDA process opens besides its GPU's, when the host has
 * them. */
static const char *const control_nodes[] = {
	"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
};

static const char *const fw_defaults[] = {
#define VS_FW_DEFAULT(name, value, alias) #name "=" value,
#include "vshare/fw_defaults.def"
#undef VS_FW_DEFAULT
};

/* Bind mounts: read-only, and nothing in them may become a device or a
 * set-uid program. */
static const char *const mount_opts[] = { "ro", "nosuid", "nodev", "bind" };

void vc_cdi_usage(FILE *f)
{
	fprintf(f,
"usage: vsharectl cdi generate [OPTIONS]\n"
"Write a CDI spec (cdiVersion " VC_CDI_VERSION ") that gives a container its GPUs\n"
"under vshare: one device per /dev/nvidiaN (named N) and 'all'; each adds\n"
"the control nodes, libvshare.so (read-only, preloaded), the scheduler's\n"
"socket directory (read-only) and the framework defaults.\n"
"options:\n"
"  -o, --output FILE       write FILE (atomically), e.g. /etc/cdi/vshare.json;\n"
"                          default standard output\n"
"  --kind VENDOR/CLASS     default " VC_CDI_KIND "\n"
"  --lib PATH              libvshare.so on the host (default\n"
"                          " VSHARE_SHIM_PATH ")\n"
"  --socket PATH           scheduler socket; its directory is mounted at the\n"
"                          same path (default " VS_DEFAULT_SOCKET ")\n"
"  --dev-dir DIR           host directory with the nvidia* nodes (default\n"
"                          /dev); they appear in the container's /dev\n"
"  --env NAME=VALUE        one more variable for every container (repeat)\n"
"  --no-framework-defaults leave the JAX, PyTorch and TensorFlow variables out\n"
"  --mandatory             also mount the node's client configuration at\n"
"                          " VC_CDI_CLIENT_CONF " and a preload list at\n"
"                          /etc/ld.so.preload (read-only), so that no\n"
"                          program in the container skips the shim\n"
"  --client-conf FILE      with --mandatory: the host's client configuration\n"
"                          (default " VC_CDI_CLIENT_CONF ")\n"
"  --preload-list FILE     with --mandatory: a host file that names\n"
"                          " VC_CDI_CONTAINER_LIB "\n"
"                          (default " VC_CDI_PRELOAD_LIST ")\n"
"  -h, --help\n");
}

static int usage_err(const char *what, const char *arg)
{
	fprintf(stderr, "vsharectl: cdi: %s%s%s\n", what,
		arg ? ": " : "", arg ? arg : "");
	fprintf(stderr, "(see vsharectl cdi generate --help)\n");
	return VC_EXIT_USAGE;
}

/* vendor/class as CDI allows them: vendor a domain-like name, class a
 * word. */
static int kind_ok(const char *k)
{
	const char *slash = strchr(k, '/');

	if (slash == NULL || slash == k || slash[1] == '\0' ||
	    !isalnum((unsigned char)k[0]) || !isalnum((unsigned char)slash[1]))
		return 0;
	for (const char *p = k; *p; p++) {
		int c = (unsigned char)*p;

		if (p == slash)
			continue;
		if (!isalnum(c) && c != '-' && c != '_' && (c != '.' || p > slash))
			return 0;
	}
	return 1;
}

static int env_ok(const char *e)
{
	const char *eq = strchr(e, '=');

	if (eq == NULL || eq == e || isdigit((unsigned char)e[0]))
		return 0;
	for (const char *p = e; p < eq; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return 0;
	return 1;
}

static int check_opts(const struct vc_cdi_opts *o)
{
	if ((o->client_conf[0] != '/' || o->preload_list[0] != '/'))
		return usage_err("--client-conf and --preload-list take absolute "
				 "paths", NULL);
	if (!kind_ok(o->kind))
		return usage_err("--kind must be vendor/class (like "
				 VC_CDI_KIND ")", o->kind);
	if (o->lib[0] != '/' || o->socket[0] != '/' || o->dev_dir[0] != '/')
		return usage_err("--lib, --socket and --dev-dir take absolute "
				 "paths", NULL);
	for (size_t i = 0; i < o->nenv; i++)
		if (!env_ok(o->env[i]))
			return usage_err("--env wants NAME=VALUE", o->env[i]);
	return 0;
}

int vc_cdi_parse(int argc, char **argv, struct vc_cdi_opts *o)
{
	enum { O_KIND = 256, O_LIB, O_SOCKET, O_DEVDIR, O_ENV, O_NOFW,
	       O_MAND, O_CCONF, O_PLIST };
	static const struct option lo[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "kind", required_argument, NULL, O_KIND },
		{ "lib", required_argument, NULL, O_LIB },
		{ "socket", required_argument, NULL, O_SOCKET },
		{ "dev-dir", required_argument, NULL, O_DEVDIR },
		{ "env", required_argument, NULL, O_ENV },
		{ "no-framework-defaults", no_argument, NULL, O_NOFW },
		{ "mandatory", no_argument, NULL, O_MAND },
		{ "client-conf", required_argument, NULL, O_CCONF },
		{ "preload-list", required_argument, NULL, O_PLIST },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	*o = (struct vc_cdi_opts){ .kind = VC_CDI_KIND, .lib = VSHARE_SHIM_PATH,
		.socket = VS_DEFAULT_SOCKET, .dev_dir = "/dev", .fw = 1,
		.client_conf = VC_CDI_CLIENT_CONF,
		.preload_list = VC_CDI_PRELOAD_LIST };
	optind = 0;
	while ((ch = getopt_long(argc, argv, "+o:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'o': o->output = optarg; break;
		case O_KIND: o->kind = optarg; break;
		case O_LIB: o->lib = optarg; break;
		case O_SOCKET: o->socket = optarg; break;
		case O_DEVDIR: o->dev_dir = optarg; break;
		case O_NOFW: o->fw = 0; break;
		case O_MAND: o->mandatory = 1; break;
		case O_CCONF: o->client_conf = optarg; break;
		case O_PLIST: o->preload_list = optarg; break;
		case O_ENV:
			if (o->nenv == VC_CDI_MAX_ENV)
				return usage_err("too many --env", NULL);
			o->env[o->nenv++] = optarg;
			break;
		case 'h': vc_cdi_usage(stdout); return -1;
		default: return usage_err("bad option", NULL);
		}
	}
	if (optind < argc)
		return usage_err("unexpected argument", argv[optind]);
	return check_opts(o);
}

static int is_chardev(const char *dir, const char *name)
{
	char path[4096];
	struct stat st;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return 0;
	return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

/* The N of nvidiaN, or -1 for any other name. */
static int gpu_number(const char *name)
{
	char *end;
	long n;

	if (strncmp(name, "nvidia", 6) != 0 || !isdigit((unsigned char)name[6]))
		return -1;
	n = strtol(name + 6, &end, 10);
	return *end == '\0' && n < VC_CDI_MAX_GPUS ? (int)n : -1;
}

/* Which GPUs the host has: found[N] set for each /dev/nvidiaN. The count,
 * or -1 with a message printed. */
static int scan_gpus(const char *dir, unsigned char found[VC_CDI_MAX_GPUS])
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int count = 0, n;

	if (d == NULL) {
		fprintf(stderr, "vsharectl: cdi generate: %s: %s\n", dir,
			strerror(errno));
		return -1;
	}
	memset(found, 0, VC_CDI_MAX_GPUS);
	while ((e = readdir(d)) != NULL) {
		n = gpu_number(e->d_name);
		if (n >= 0 && is_chardev(dir, e->d_name)) {
			found[n] = 1;
			count++;
		}
	}
	closedir(d);
	if (count == 0)
		fprintf(stderr, "vsharectl: cdi generate: no GPU device nodes "
			"(nvidia0, nvidia1, ...) in %s\n", dir);
	return count > 0 ? count : -1;
}

static cJSON *device_node(const char *dev_dir, const char *name)
{
	cJSON *n = cJSON_CreateObject();
	char path[512];

	snprintf(path, sizeof(path), "/dev/%s", name);
	cJSON_AddStringToObject(n, "path", path);
	if (strcmp(dev_dir, "/dev") != 0) {
		snprintf(path, sizeof(path), "%s/%s", dev_dir, name);
		cJSON_AddStringToObject(n, "hostPath", path);
	}
	return n;
}

static cJSON *bind_mount(const char *host, const char *ctr)
{
	cJSON *m = cJSON_CreateObject();

	cJSON_AddStringToObject(m, "hostPath", host);
	cJSON_AddStringToObject(m, "containerPath", ctr);
	cJSON_AddItemToObject(m, "options", cJSON_CreateStringArray(mount_opts,
		sizeof(mount_opts) / sizeof(mount_opts[0])));
	return m;
}

static void add_env(cJSON *env, const char *name, const char *value)
{
	size_t n = strlen(name) + strlen(value) + 2;
	char *s = malloc(n);

	if (s == NULL)
		return;
	snprintf(s, n, "%s=%s", name, value);
	cJSON_AddItemToArray(env, cJSON_CreateString(s));
	free(s);
}

/* What every vshare device brings: control nodes, the shim, the socket's
 * directory (a mounted socket file would keep the old inode when the
 * daemon restarts) and the environment. */
static cJSON *common_edits(const struct vc_cdi_opts *o)
{
	cJSON *ed = cJSON_CreateObject();
	cJSON *nodes = cJSON_AddArrayToObject(ed, "deviceNodes");
	cJSON *mounts = cJSON_AddArrayToObject(ed, "mounts");
	cJSON *env = cJSON_AddArrayToObject(ed, "env");
	char *sockdir = strdup(o->socket);

	for (size_t i = 0; i < sizeof(control_nodes) / sizeof(control_nodes[0]); i++)
		if (is_chardev(o->dev_dir, control_nodes[i]))
			cJSON_AddItemToArray(nodes,
				device_node(o->dev_dir, control_nodes[i]));
	if (cJSON_GetArraySize(nodes) == 0)
		cJSON_DeleteItemFromObject(ed, "deviceNodes");
	cJSON_AddItemToArray(mounts, bind_mount(o->lib, VC_CDI_CONTAINER_LIB));
	if (sockdir != NULL) {
		const char *dir = dirname(sockdir);

		cJSON_AddItemToArray(mounts, bind_mount(dir, dir));
	}
	free(sockdir);
	/* Mandatory: the image's own loader preloads the shim into every
	 * program, and the node's settings hold over the container's
	 * environment (docs/operations.md, "Mandatory sharing"). */
	if (o->mandatory) {
		cJSON_AddItemToArray(mounts, bind_mount(o->client_conf,
							VC_CDI_CLIENT_CONF));
		cJSON_AddItemToArray(mounts, bind_mount(o->preload_list,
							"/etc/ld.so.preload"));
	}
	add_env(env, "LD_PRELOAD", VC_CDI_CONTAINER_LIB);
	add_env(env, "VSHARE_SOCKET", o->socket);
	for (size_t i = 0; o->fw && i < sizeof(fw_defaults) / sizeof(fw_defaults[0]); i++)
		cJSON_AddItemToArray(env, cJSON_CreateString(fw_defaults[i]));
	for (size_t i = 0; i < o->nenv; i++)
		cJSON_AddItemToArray(env, cJSON_CreateString(o->env[i]));
	return ed;
}

static cJSON *device(const char *name, cJSON *nodes)
{
	cJSON *d = cJSON_CreateObject();
	cJSON *ed = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "name", name);
	cJSON_AddItemToObject(ed, "deviceNodes", nodes);
	cJSON_AddItemToObject(d, "containerEdits", ed);
	return d;
}

char *vc_cdi_spec(const struct vc_cdi_opts *o)
{
	unsigned char found[VC_CDI_MAX_GPUS];
	cJSON *spec, *devs, *all;
	char name[16], node[32];
	char *text;

	if (scan_gpus(o->dev_dir, found) < 0)
		return NULL;
	spec = cJSON_CreateObject();
	cJSON_AddStringToObject(spec, "cdiVersion", VC_CDI_VERSION);
	cJSON_AddStringToObject(spec, "kind", o->kind);
	devs = cJSON_AddArrayToObject(spec, "devices");
	all = cJSON_CreateArray();
	for (int n = 0; n < VC_CDI_MAX_GPUS; n++) {
		cJSON *one = cJSON_CreateArray();

		if (!found[n]) {
			cJSON_Delete(one);
			continue;
		}
		snprintf(name, sizeof(name), "%d", n);
		snprintf(node, sizeof(node), "nvidia%d", n);
		cJSON_AddItemToArray(one, device_node(o->dev_dir, node));
		cJSON_AddItemToArray(all, device_node(o->dev_dir, node));
		cJSON_AddItemToArray(devs, device(name, one));
	}
	cJSON_AddItemToArray(devs, device("all", all));
	cJSON_AddItemToObject(spec, "containerEdits", common_edits(o));
	text = cJSON_Print(spec);
	cJSON_Delete(spec);
	if (text == NULL)
		fprintf(stderr, "vsharectl: cdi generate: out of memory\n");
	return text;
}

/* A runtime that reads the spec directory while we write must see the old
 * spec or the new one, never half of one: a temporary file, then
 * rename. */
static int write_spec(const char *text, const char *path)
{
	size_t n = strlen(path) + 16;
	char *tmp = malloc(n);
	FILE *f;
	int fd, ok;

	if (tmp == NULL)
		return VC_EXIT_ERROR;
	snprintf(tmp, n, "%s.XXXXXX", path);
	fd = mkstemp(tmp);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	ok = f != NULL && fchmod(fd, 0644) == 0 && fputs(text, f) >= 0 &&
	     fputc('\n', f) != EOF && fflush(f) == 0 && fsync(fd) == 0;
	if (f != NULL)
		ok = (fclose(f) == 0) && ok;
	else if (fd >= 0)
		close(fd);
	if (ok && rename(tmp, path) == 0) {
		free(tmp);
		return VC_EXIT_OK;
	}
	fprintf(stderr, "vsharectl: cdi generate: cannot write %s: %s\n",
		path, strerror(errno));
	if (fd >= 0)
		unlink(tmp);
	free(tmp);
	return VC_EXIT_ERROR;
}

/* --mandatory binds only with a client.conf the shim will trust (the
 * shim's own reader says) naming the socket the spec mounts: a spec that
 * mounts another socket would leave every container unscheduled, or
 * waiting for good. */
static int check_mandatory(const struct vc_cdi_opts *o)
{
	struct shim_node n;
	const char *sock;
	int rc = shim_node_load(o->client_conf, 0, &n);

	if (rc != 0) {
		fprintf(stderr, "vsharectl: cdi generate: --mandatory needs %s "
			"to be a regular file that root owns, in a folder root "
			"owns, that neither group nor others may write%s\n",
			o->client_conf, rc > 0 ? " (it is not there)" : "");
		return VC_EXIT_USAGE;
	}
	sock = n.socket[0] != '\0' ? n.socket : VS_DEFAULT_SOCKET;
	if (strcmp(sock, o->socket) != 0) {
		fprintf(stderr, "vsharectl: cdi generate: --socket %s is not "
			"the socket %s names (%s): the containers' programs "
			"would use that one\n", o->socket, o->client_conf,
			sock);
		return VC_EXIT_USAGE;
	}
	return 0;
}

static int vc_cdi_generate(int argc, char **argv)
{
	struct vc_cdi_opts o;
	char *text;
	int rc = vc_cdi_parse(argc, argv, &o);

	if (rc != 0)
		return rc < 0 ? VC_EXIT_OK : rc;
	if (o.mandatory && (rc = check_mandatory(&o)) != 0)
		return rc;
	for (int i = 0; i < (o.mandatory ? 2 : 1); i++) {
		const char *f = i == 0 ? o.lib : o.preload_list;

		if (access(f, R_OK) != 0)
			fprintf(stderr, "vsharectl: cdi generate: warning: %s: "
				"%s (the spec names it; containers will fail to "
				"start until it is there)\n", f, strerror(errno));
	}
	text = vc_cdi_spec(&o);
	if (text == NULL)
		return VC_EXIT_ERROR;
	if (o.output != NULL)
		rc = write_spec(text, o.output);
	else
		rc = printf("%s\n", text) < 0 ? VC_EXIT_ERROR : VC_EXIT_OK;
	cJSON_free(text);
	return rc;
}

int vc_cdi_cmd(const struct vc_args *a, int argc, char **argv)
{
	(void)a;
	if (argc >= 2 && strcmp(argv[1], "generate") == 0)
		return vc_cdi_generate(argc - 1, argv + 1);
	if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
			  strcmp(argv[1], "--help") == 0)) {
		vc_cdi_usage(stdout);
		return VC_EXIT_OK;
	}
	return usage_err(argc < 2 ? "which one? (generate)" : "unknown",
			 argc < 2 ? NULL : argv[1]);
}
