/*
 * The node's GPUs and their health. NVML is loaded with dlopen, as the
 * scheduler does: the plugin must start on a node whose driver is not
 * installed yet (and its tests run without one). A GPU is healthy while
 * NVML answers for it (its handle and its memory report); a GPU that fell
 * off the bus or hit a fatal error answers GPU_IS_LOST or UNKNOWN, and
 * the kubelet stops placing pods on its shares. Without NVML the GPUs
 * come from --gpus or the CDI spec and are taken as healthy.
 *
 * NVML also says each GPU's memory (from which its shares follow, see
 * kp_gpu_shares), its name (the model label) and its PCI bus id, whose
 * device in sysfs names its NUMA node for the kubelet's Topology Manager.
 *
 * A GPU is named by its device node's number (N of /dev/nvidiaN, NVML's
 * "minor number"), as the CDI spec names its devices; NVML's own index
 * (nvidia-smi's, in PCI order) may differ from it.
 */
#include <dlfcn.h>

#include <cctype>
#include <cinttypes>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "kp.h"

namespace {

/* The few NVML entry points used, with their ABI (nvml.h, stable since
 * the v2 functions of CUDA 5.5). */
typedef int nvml_ret;
typedef void *nvml_dev;
struct nvml_mem {
	unsigned long long total, free, used;
};
/* nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it. */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned domain, bus, device, device_id, subsystem_id;
	char bus_id[32];
};

struct {
	void *lib;
	nvml_ret (*count)(unsigned int *n);
	nvml_ret (*by_index)(unsigned int i, nvml_dev *dev);
	nvml_ret (*mem)(nvml_dev dev, nvml_mem *m);
	nvml_ret (*minor)(nvml_dev dev, unsigned int *n);
	nvml_ret (*name)(nvml_dev dev, char *name, unsigned int len);
	nvml_ret (*pci)(nvml_dev dev, nvml_pci *pci);
	nvml_ret (*uuid)(nvml_dev dev, char *uuid, unsigned int len);
	nvml_ret (*driver)(char *version, unsigned int len);
	nvml_ret (*shutdown)();
} nv;

template <typename F> void sym(F &f, const char *name)
{
	f = reinterpret_cast<F>(dlsym(nv.lib, name));
}

bool nvml_open()
{
	nvml_ret (*init)() = nullptr;

	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (nv.lib == nullptr) {
		log_info("NVML not available (%s): the GPUs come from --gpus "
			 "or the CDI spec, and are taken as healthy", dlerror());
		return false;
	}
	sym(init, "nvmlInit_v2");
	sym(nv.count, "nvmlDeviceGetCount_v2");
	sym(nv.by_index, "nvmlDeviceGetHandleByIndex_v2");
	sym(nv.mem, "nvmlDeviceGetMemoryInfo");
	sym(nv.minor, "nvmlDeviceGetMinorNumber");
	sym(nv.shutdown, "nvmlShutdown");
	/* Optional: without them a GPU has no model label and no NUMA
	 * node. */
	sym(nv.name, "nvmlDeviceGetName");
	sym(nv.pci, "nvmlDeviceGetPciInfo_v3");
	sym(nv.uuid, "nvmlDeviceGetUUID");
	sym(nv.driver, "nvmlSystemGetDriverVersion");
	if (init == nullptr || nv.count == nullptr || nv.by_index == nullptr ||
	    nv.mem == nullptr || nv.minor == nullptr || nv.shutdown == nullptr ||
	    init() != 0) {
		log_warn("NVML found but not usable: the GPUs come from --gpus "
			 "or the CDI spec, and are taken as healthy");
		dlclose(nv.lib);
		memset(&nv, 0, sizeof(nv));
		return false;
	}
	return true;
}

kp_gpu a_gpu(unsigned index, unsigned nvml)
{
	kp_gpu g;

	g.index = index;
	g.nvml = nvml;
	g.healthy = true;
	return g;
}

/* What NVML says of a GPU besides its health: memory, name, NUMA
 * node. Each is left unknown when NVML does not answer. */
void nvml_describe(const kp_conf &c, nvml_dev dev, kp_gpu &g)
{
	char name[96];
	nvml_mem m;
	nvml_pci pci;

	if (nv.mem(dev, &m) == 0)
		g.memory = m.total;
	if (nv.name != nullptr && nv.name(dev, name, sizeof(name)) == 0) {
		name[sizeof(name) - 1] = '\0';
		g.model = name;
	}
	if (nv.uuid != nullptr && nv.uuid(dev, name, sizeof(name)) == 0) {
		name[sizeof(name) - 1] = '\0';
		g.uuid = name;
	}
	if (nv.pci != nullptr && nv.pci(dev, &pci) == 0) {
		pci.bus_id[sizeof(pci.bus_id) - 1] = '\0';
		g.numa = kp_numa_node(c.host_root, pci.bus_id);
	}
}

/* The GPUs NVML knows, each by its node's number; false when NVML
 * cannot say. */
bool nvml_gpus(const kp_conf &c, std::vector<kp_gpu> &out)
{
	unsigned n = 0, minor;
	nvml_dev dev;

	if (nv.count(&n) != 0 || n == 0) {
		log_error("NVML reports no GPU on this node");
		return false;
	}
	for (unsigned i = 0; i < n; i++) {
		if (nv.by_index(i, &dev) != 0 || nv.minor(dev, &minor) != 0) {
			log_error("NVML does not say which /dev/nvidiaN GPU %u "
				  "is", i);
			return false;
		}
		out.push_back(a_gpu(minor, i));
		nvml_describe(c, dev, out.back());
	}
	return true;
}

bool nvml_healthy(unsigned index)
{
	nvml_dev dev;
	nvml_mem m;

	return nv.by_index(index, &dev) == 0 && nv.mem(dev, &m) == 0;
}

/* "0,1,3": false for anything else. */
bool parse_list(const std::string &s, std::vector<unsigned> &out)
{
	const char *p = s.c_str();
	char *end;

	while (*p != '\0') {
		if (*p < '0' || *p > '9')
			return false;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		if (errno != 0 || v > 255 || (*end != ',' && *end != '\0'))
			return false;
		out.push_back((unsigned)v);
		p = *end == ',' ? end + 1 : end;
		if (*end == ',' && *p == '\0')
			return false;
	}
	return !out.empty();
}

} // namespace

int kp_gpus_open(const kp_conf &c, std::vector<kp_gpu> &out)
{
	std::vector<unsigned> idx;

	out.clear();
	if (!c.gpus.empty()) {
		if (!parse_list(c.gpus, idx)) {
			log_error("--gpus takes GPU indexes like 0,1: %s",
				  c.gpus.c_str());
			return -1;
		}
	} else if (nvml_open()) {
		if (!nvml_gpus(c, out))
			return -1;
		for (kp_gpu &g : out)
			g.healthy = nvml_healthy(g.nvml);
	} else {
		std::string why = kp_spec_gpus(c.cdi_spec, idx);
		if (!why.empty()) {
			log_error("no GPU list: no NVML, no --gpus, and %s",
				  why.c_str());
			return -1;
		}
	}
	for (unsigned i : idx)
		out.push_back(a_gpu(i, 0));
	log_info("%zu GPU(s) from %s", out.size(), !c.gpus.empty() ? "--gpus" :
		 nv.lib != nullptr ? "NVML" : c.cdi_spec.c_str());
	for (kp_gpu &g : out) {
		kp_gpu_shares(c, g);
		if (g.memory != 0)
			log_info("GPU %u: %s, %" PRIu64 " MiB, NUMA node %d",
				 g.index, g.model.empty() ? "model not known" :
				 g.model.c_str(), g.memory >> 20, g.numa);
	}
	return 0;
}

void kp_gpu_shares(const kp_conf &c, kp_gpu &g)
{
	const uint64_t gib = 1ull << 30, mib = 1ull << 20;
	uint64_t n;

	g.shares = c.shares != 0 ? c.shares : 10;
	g.shard_mem = c.shard_mem;
	if (g.memory == 0 || (c.shares != 0 && c.shard_mem != 0))
		return;
	if (c.shares != 0) {
		g.shard_mem = g.memory / c.shares / mib * mib;
		if (g.shard_mem == 0)
			g.shard_mem = mib;
		return;
	}
	g.shard_mem = c.shard_mem != 0 ? c.shard_mem : gib;
	n = g.memory / g.shard_mem;
	g.shares = n < 1 ? 1 : n > 1000 ? 1000 : (unsigned)n;
}

int kp_numa_node(const std::string &root, const std::string &bus_id)
{
	std::string bus;
	int node = -1;

	/* NVML writes an eight-digit domain in capitals; sysfs names the
	 * device with four, in lower case. */
	if (bus_id.size() == 16 && bus_id.compare(0, 4, "0000") == 0)
		bus = bus_id.substr(4);
	else if (bus_id.size() == 12)
		bus = bus_id;
	else
		return -1;
	for (char &ch : bus)
		ch = (char)tolower((unsigned char)ch);
	std::ifstream f(root + (root.back() == '/' ? "" : "/") +
			"sys/bus/pci/devices/" + bus + "/numa_node");
	/* -1 there means a machine without NUMA nodes. */
	if (!(f >> node) || node < 0)
		return -1;
	return node;
}

std::string kp_gpus_driver()
{
	char v[96];

	if (nv.lib == nullptr || nv.driver == nullptr ||
	    nv.driver(v, sizeof(v)) != 0)
		return "";
	v[sizeof(v) - 1] = '\0';
	return v;
}

bool kp_gpus_refresh(std::vector<kp_gpu> &gpus)
{
	bool changed = false;

	if (nv.lib == nullptr)
		return false;
	for (kp_gpu &g : gpus) {
		bool h = nvml_healthy(g.nvml);

		if (h != g.healthy) {
			g.healthy = h;
			changed = true;
			if (h)
				log_info("GPU %u is healthy again", g.index);
			else
				log_warn("GPU %u is unhealthy: NVML no longer "
					 "answers for it", g.index);
		}
	}
	return changed;
}

void kp_gpus_close()
{
	if (nv.lib == nullptr)
		return;
	nv.shutdown();
	dlclose(nv.lib);
	memset(&nv, 0, sizeof(nv));
}
