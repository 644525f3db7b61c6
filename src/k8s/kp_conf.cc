/*
 * The plugin's options. Every one has a default that matches a kubelet's
 * own paths and vsharectl cdi generate's spec, so a DaemonSet usually
 * passes only --shard-mem (and --mode env for a runtime without CDI).
 */
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "k8s_cli.h"
#include "kp.h"

extern "C" {
extern const char kp_default_socket[];  /* kp_defaults.c */
}

#ifndef KP_VSHARECTL
#define KP_VSHARECTL "/usr/bin/vsharectl"
#endif

static void usage(FILE *f)
{
	fprintf(f,
"usage: vshare-device-plugin [OPTIONS]\n"
"The kubelet's device plugin for vshare: each GPU is --shares shares of\n"
"--resource; a container gets its shares' GPU through CDI (or as mounts,\n"
"device nodes and environment), with a memory limit of shares x --shard-mem.\n"
"Without --shares and --shard-mem, a GPU whose memory NVML reports has a\n"
"share per GiB; with one of them, the other follows from its memory.\n"
"options:\n"
"  --plugin-dir DIR        the kubelet's device plugin directory\n"
"                          (default /var/lib/kubelet/device-plugins)\n"
"  --kubelet-socket NAME   the kubelet's socket in it (default kubelet.sock)\n"
"  --endpoint NAME         this plugin's socket in it (default vshare.sock)\n"
"  --resource NAME         the resource advertised (default vshare.dev/gpu)\n"
"  --shares N              shares per GPU, 1 to 1000 (default: from its\n"
"                          memory, else 10)\n"
"  --shard-mem SIZE        GPU memory per share (e.g. 4G): a container's\n"
"                          VSHARE_MEM_LIMIT is its shares x SIZE (default:\n"
"                          from its memory, else no limit)\n"
"  --class NAME            VSHARE_CLASS for every container (default none)\n"
"  --mode cdi|env          cdi: answer with CDI device names (containerd 1.7\n"
"                          with enable_cdi, containerd 2, CRI-O); env: the\n"
"                          CDI spec's content as mounts, device nodes and\n"
"                          environment (default cdi)\n"
"  --cdi-kind VENDOR/CLASS the CDI spec's kind (default vshare.dev/gpu)\n"
"  --cdi-spec FILE         the spec vsharectl cdi generate wrote (default\n"
"                          /var/run/cdi/vshare.json)\n"
"  --gpus LIST             GPU indexes (\"0,1\") when there is no NVML\n"
"                          (default: NVML, else the spec's devices)\n"
"  --pod-resources PATH    the kubelet's PodResources socket (default\n"
"                          /var/lib/kubelet/pod-resources/kubelet.sock)\n"
"  --socket PATH           the scheduler's socket (default %s)\n"
"  --vsharectl PATH        vsharectl, which names pods to the scheduler\n"
"                          (default " KP_VSHARECTL ")\n"
"  --no-pod-names          do not name pods to the scheduler\n"
"  --health-interval MS    how often GPU health is read (default 5000)\n"
"  --pods-interval MS      how often PodResources is read (default 10000)\n"
"  --feature-file PATH     the node's labels as a Node Feature Discovery\n"
"                          local feature file, \"\" for none (default\n"
"                          /etc/kubernetes/node-feature-discovery/\n"
"                          features.d/vshare)\n"
"  --host-root DIR         where the host's /sys is seen (default /)\n"
"  --log-level LEVEL       error, warn, info (default) or debug\n"
"  -h, --help, --version\n", kp_default_socket);
}

#define PROG "vshare-device-plugin"

static int bad(const char *what, const char *arg)
{
	return k8s_bad(PROG, what, arg);
}

static bool number(const char *s, unsigned long min, unsigned long max,
		   unsigned *out)
{
	char *end;
	unsigned long v;

	if (!isdigit((unsigned char)s[0]))
		return false;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return false;
	*out = (unsigned)v;
	return true;
}

/* A class as the scheduler's configuration names one: a short word. */
static bool word(const std::string &s)
{
	if (s.empty() || s.size() > 31)
		return false;
	for (char ch : s)
		if (!isalnum((unsigned char)ch) && ch != '-' && ch != '_' &&
		    ch != '.')
			return false;
	return true;
}

/* A file name in the plugin directory: no slash, not "." or "..". */
static bool file_name(const std::string &s)
{
	return !s.empty() && s.find('/') == std::string::npos && s != "." &&
	       s != "..";
}

static int check(const kp_conf &c)
{
	if (c.plugin_dir[0] != '/' || c.pod_resources[0] != '/' ||
	    c.cdi_spec[0] != '/' || c.sched_socket[0] != '/' ||
	    c.host_root[0] != '/' ||
	    (!c.feature_file.empty() && c.feature_file[0] != '/'))
		return bad("--plugin-dir, --pod-resources, --cdi-spec, "
			   "--socket, --feature-file and --host-root take "
			   "absolute paths", nullptr);
	if (!c.feature_file.empty() && c.feature_file.back() == '/')
		return bad("--feature-file names a file", c.feature_file.c_str());
	if (!file_name(c.kubelet_sock) || !file_name(c.endpoint))
		return bad("--kubelet-socket and --endpoint are names in "
			   "--plugin-dir, without a slash", nullptr);
	if (c.plugin_dir.size() + c.endpoint.size() + 2 > 108 ||
	    c.plugin_dir.size() + c.kubelet_sock.size() + 2 > 108)
		return bad("socket path too long (108 bytes at most)",
			   c.plugin_dir.c_str());
	if (c.resource.find('/') == std::string::npos)
		return bad("--resource must be domain/name", c.resource.c_str());
	if (c.cdi_kind.find('/') == std::string::npos)
		return bad("--cdi-kind must be vendor/class", c.cdi_kind.c_str());
	return 0;
}

static int take(int ch, const char *arg, kp_conf &c)
{
	switch (ch) {
	case 'D': c.plugin_dir = arg; break;
	case 'K': c.kubelet_sock = arg; break;
	case 'E': c.endpoint = arg; break;
	case 'R': c.resource = arg; break;
	case 'N':
		if (!number(arg, 1, 1000, &c.shares))
			return bad("--shares takes 1 to 1000", arg);
		break;
	case 'M':
		return k8s_size_opt(PROG, "--shard-mem", arg, &c.shard_mem);
	case 'C':
		c.cls = arg;
		if (!word(c.cls))
			return bad("--class takes a word of letters, digits, "
				   "'-', '_' and '.' (31 at most)", arg);
		break;
	case 'm':
		if (strcmp(arg, "cdi") != 0 && strcmp(arg, "env") != 0)
			return bad("--mode takes cdi or env", arg);
		c.cdi = strcmp(arg, "cdi") == 0;
		break;
	case 'k': c.cdi_kind = arg; break;
	case 's': c.cdi_spec = arg; break;
	case 'g': c.gpus = arg; break;
	case 'P': c.pod_resources = arg; break;
	case 'S': c.sched_socket = arg; break;
	case 'V': c.vsharectl = arg; break;
	case 'n': c.names = false; break;
	case 'F': c.feature_file = arg; break;
	case 'r': c.host_root = arg; break;
	case 'H':
		if (!number(arg, 10, 3600000, &c.health_ms))
			return bad("--health-interval takes 10 to 3600000 ms", arg);
		break;
	case 'p':
		if (!number(arg, 10, 3600000, &c.pods_ms))
			return bad("--pods-interval takes 10 to 3600000 ms", arg);
		break;
	case 'L':
		return k8s_log_level_opt(PROG, arg);
	default:
		return bad("bad option", nullptr);
	}
	return 0;
}

int kp_conf_parse(int argc, char **argv, kp_conf &c)
{
	static const struct option lo[] = {
		{ "plugin-dir", required_argument, nullptr, 'D' },
		{ "kubelet-socket", required_argument, nullptr, 'K' },
		{ "endpoint", required_argument, nullptr, 'E' },
		{ "resource", required_argument, nullptr, 'R' },
		{ "shares", required_argument, nullptr, 'N' },
		{ "shard-mem", required_argument, nullptr, 'M' },
		{ "class", required_argument, nullptr, 'C' },
		{ "mode", required_argument, nullptr, 'm' },
		{ "cdi-kind", required_argument, nullptr, 'k' },
		{ "cdi-spec", required_argument, nullptr, 's' },
		{ "gpus", required_argument, nullptr, 'g' },
		{ "pod-resources", required_argument, nullptr, 'P' },
		{ "socket", required_argument, nullptr, 'S' },
		{ "vsharectl", required_argument, nullptr, 'V' },
		{ "no-pod-names", no_argument, nullptr, 'n' },
		{ "health-interval", required_argument, nullptr, 'H' },
		{ "pods-interval", required_argument, nullptr, 'p' },
		{ "log-level", required_argument, nullptr, 'L' },
		{ "feature-file", required_argument, nullptr, 'F' },
		{ "host-root", required_argument, nullptr, 'r' },
		{ "help", no_argument, nullptr, 'h' },
		{ "version", no_argument, nullptr, 'v' },
		{ nullptr, 0, nullptr, 0 },
	};
	int rc;

	c.sched_socket = kp_default_socket;
	c.vsharectl = KP_VSHARECTL;
	rc = k8s_parse(PROG, VSHARE_VERSION, usage, argc, argv, lo,
		       [&c](int ch, const char *arg) {
			       return take(ch, arg, c);
		       });
	return rc != 0 ? rc : check(c);
}
