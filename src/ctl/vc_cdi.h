/*
 * `vsharectl cdi generate`: a Container Device Interface spec that gives a
 * container the GPU device nodes plus vshare (the shim, the scheduler's
 * socket directory and the environment), for Podman, containerd and the
 * Kubernetes pieces that hand out CDI device names (docs/cluster.md).
 */
#ifndef VSHARE_VC_CDI_H
#define VSHARE_VC_CDI_H

#include <stdio.h>

/* The spec version written: the newest that Podman 4.3 (Debian 12) reads,
 * and the first with a device node's hostPath. */
#define VC_CDI_VERSION "0.5.0"
#define VC_CDI_KIND "vshare.dev/gpu"
/* Where the shim appears inside every container, whatever the host's
 * layout: a path the image's own libraries never use. */
#define VC_CDI_CONTAINER_LIB "/usr/lib/vshare/libvshare.so"
#define VC_CDI_MAX_ENV 32
/* --mandatory: the node's client configuration, at the same path inside,
 * and the host file mounted as the container's /etc/ld.so.preload. */
#ifndef VC_CDI_CLIENT_CONF /* the CMake cache variable VSHARE_CLIENT_CONF */
#define VC_CDI_CLIENT_CONF "/etc/vshare/client.conf"
#endif
#define VC_CDI_PRELOAD_LIST "/etc/vshare/container.preload"

struct vc_cdi_opts {
	const char *kind;      /* vendor/class */
	const char *lib;       /* libvshare.so on the host */
	const char *socket;    /* scheduler socket, same path inside */
	const char *dev_dir;   /* where the nvidia* nodes are on the host */
	const char *output;    /* file, or NULL for stdout */
	int fw;                /* add the framework defaults */
	int mandatory;         /* mount client_conf and preload_list */
	const char *client_conf;
	const char *preload_list;
	size_t nenv;
	const char *env[VC_CDI_MAX_ENV]; /* extra NAME=VALUE */
};

/* The options of `cdi generate` (argv[0] is the command's name): 0, an
 * exit code (message printed), or -1 after --help. */
int vc_cdi_parse(int argc, char **argv, struct vc_cdi_opts *o);

/* The spec as JSON text (malloc'd), or NULL with a message printed. */
char *vc_cdi_spec(const struct vc_cdi_opts *o);

/* `vsharectl cdi generate [OPTIONS]`, the row of vsharectl's command
 * table (a local one: argv[0] is "cdi"). Returns a vsharectl exit code. */
struct vc_args;
int vc_cdi_cmd(const struct vc_args *a, int argc, char **argv);

void vc_cdi_usage(FILE *f);

#endif
