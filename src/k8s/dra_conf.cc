/*
 * vshare-dra-driver's options. The defaults are a kubelet's own paths and
 * the pod's service account, so that the DaemonSet passes only the node's
 * name (from the downward API, NODE_NAME).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "dra.h"
#include "k8s_cli.h"

static void usage(FILE *f)
{
	fputs(
"usage: vshare-dra-driver [OPTIONS]\n"
"vshare's Dynamic Resource Allocation driver: publishes the node's GPUs in a\n"
"ResourceSlice (each GPU's memory a consumable capacity that many claims\n"
"share) and prepares the node's claims for the kubelet as CDI devices, with\n"
"the claim's memory as VSHARE_MEM_LIMIT and its class as VSHARE_CLASS.\n"
"options:\n"
"  --driver NAME           the driver's name (default vshare.dev)\n"
"  --node-name NAME        this node (default: $NODE_NAME)\n"
"  --registry DIR          the kubelet's plugin registry (default\n"
"                          /var/lib/kubelet/plugins_registry)\n"
"  --plugin-dir DIR        this driver's sockets (default\n"
"                          /var/lib/kubelet/plugins/DRIVER)\n"
"  --checkpoint FILE       the prepared claims (default\n"
"                          PLUGIN_DIR/checkpoint.json)\n"
"  --cdi-dir DIR           where the claims' CDI specs go (default\n"
"                          /var/run/cdi)\n"
"  --cdi-spec FILE         vsharectl cdi generate's spec, for the GPU list\n"
"                          without NVML (default /var/run/cdi/vshare.json)\n"
"  --gpu-kind VENDOR/CLASS its kind (default vshare.dev/gpu)\n"
"  --api-server URL        the API server (default: the in-cluster one,\n"
"                          $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT)\n"
"  --token-file FILE       the service account's token (default\n"
"                          /var/run/secrets/kubernetes.io/serviceaccount/token)\n"
"  --ca-file FILE          the API server's CA (default\n"
"                          /var/run/secrets/kubernetes.io/serviceaccount/ca.crt)\n"
"  --default-mem SIZE      a request's memory when it names none (default 1G)\n"
"  --mem-step SIZE         requests round up to a multiple of it (default 256M)\n"
"  --gpus LIST             GPU indexes (\"0,1\") when there is no NVML\n"
"  --host-root DIR         where the host's /sys is seen (default /)\n"
"  --log-level LEVEL       error, warn, info (default) or debug\n"
"  -h, --help, --version\n", f);
}

#define PROG "vshare-dra-driver"

static int bad(const char *what, const char *arg)
{
	return k8s_bad(PROG, what, arg);
}

/* A DNS subdomain, as Kubernetes names drivers and nodes. */
static bool subdomain(const std::string &s)
{
	if (s.empty() || s.size() > 253)
		return false;
	for (size_t i = 0; i < s.size(); i++) {
		char ch = s[i];
		bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!alnum && !((ch == '-' || ch == '.') && i > 0 &&
				i + 1 < s.size()))
			return false;
	}
	return true;
}

static int take(int ch, const char *arg, dra_conf &c)
{
	switch (ch) {
	case 'd': c.driver = arg; break;
	case 'n': c.node = arg; break;
	case 'r': c.registry = arg; break;
	case 'p': c.plugin_dir = arg; break;
	case 'c': c.checkpoint = arg; break;
	case 'C': c.cdi_dir = arg; break;
	case 's': c.cdi_spec = arg; break;
	case 'k': c.gpu_kind = arg; break;
	case 'a': c.api_server = arg; break;
	case 't': c.token_file = arg; break;
	case 'A': c.ca_file = arg; break;
	case 'g': c.gpus = arg; break;
	case 'H': c.host_root = arg; break;
	case 'm':
		return k8s_size_opt(PROG, "--default-mem", arg, &c.default_mem);
	case 'S':
		return k8s_size_opt(PROG, "--mem-step", arg, &c.mem_step);
	case 'L':
		return k8s_log_level_opt(PROG, arg);
	default:
		return bad("bad option", nullptr);
	}
	return 0;
}

static int check(dra_conf &c)
{
	if (c.node.empty() && getenv("NODE_NAME") != nullptr)
		c.node = getenv("NODE_NAME");
	if (!subdomain(c.node))
		return bad("--node-name (or NODE_NAME) must name this node, a "
			   "DNS subdomain", c.node.c_str());
	if (!subdomain(c.driver) || c.driver.find('.') == std::string::npos)
		return bad("--driver takes a DNS subdomain of a domain of yours",
			   c.driver.c_str());
	if (c.plugin_dir.empty())
		c.plugin_dir = "/var/lib/kubelet/plugins/" + c.driver;
	if (c.checkpoint.empty())
		c.checkpoint = c.plugin_dir + "/checkpoint.json";
	for (const std::string *p : { &c.registry, &c.plugin_dir, &c.checkpoint,
				      &c.cdi_dir, &c.cdi_spec, &c.host_root })
		if ((*p)[0] != '/')
			return bad("paths must be absolute", p->c_str());
	if (c.plugin_dir.size() + 10 > 108 ||
	    c.registry.size() + c.driver.size() + 11 > 108)
		return bad("socket path too long (108 bytes at most)",
			   c.plugin_dir.c_str());
	if (c.gpu_kind.find('/') == std::string::npos)
		return bad("--gpu-kind must be vendor/class", c.gpu_kind.c_str());
	if (c.mem_step > c.default_mem || c.default_mem % c.mem_step != 0)
		return bad("--default-mem must be a multiple of --mem-step",
			   nullptr);
	return 0;
}

int dra_conf_parse(int argc, char **argv, dra_conf &c)
{
	static const struct option lo[] = {
		{ "driver", required_argument, nullptr, 'd' },
		{ "node-name", required_argument, nullptr, 'n' },
		{ "registry", required_argument, nullptr, 'r' },
		{ "plugin-dir", required_argument, nullptr, 'p' },
		{ "checkpoint", required_argument, nullptr, 'c' },
		{ "cdi-dir", required_argument, nullptr, 'C' },
		{ "cdi-spec", required_argument, nullptr, 's' },
		{ "gpu-kind", required_argument, nullptr, 'k' },
		{ "api-server", required_argument, nullptr, 'a' },
		{ "token-file", required_argument, nullptr, 't' },
		{ "ca-file", required_argument, nullptr, 'A' },
		{ "default-mem", required_argument, nullptr, 'm' },
		{ "mem-step", required_argument, nullptr, 'S' },
		{ "gpus", required_argument, nullptr, 'g' },
		{ "host-root", required_argument, nullptr, 'H' },
		{ "log-level", required_argument, nullptr, 'L' },
		{ "help", no_argument, nullptr, 'h' },
		{ "version", no_argument, nullptr, 'v' },
		{ nullptr, 0, nullptr, 0 },
	};
	int rc = k8s_parse(PROG, VSHARE_VERSION, usage, argc, argv, lo,
			   [&c](int ch, const char *arg) {
				   return take(ch, arg, c);
			   });

	return rc != 0 ? rc : check(c);
}
