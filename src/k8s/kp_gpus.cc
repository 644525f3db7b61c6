/*
 * The node's GPUs and their health. NVML is loaded with dlopen, as the
 * scheduler does: the plugin must start on a node whose driver is not
 * installed yet (and its tests run without one). A GPU is healthy while
 * NVML answers for it (its handle and its memory report); a GPU that fell
 * off the bus or hit a fatal error answers GPU_IS_LOST or UNKNOWN, and
 * the kubelet stops placing pods on its shares. Without NVML the GPUs
 * come from --gpus or the CDI spec and are taken as healthy.
 *
 * A GPU is named by its device node's number (N of /dev/nvidiaN, NVML's
 * "minor number"), as the CDI spec names its devices; NVML's own index
 * (nvidia-smi's, in PCI order) may differ from it.
 */
#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "kp.h"

namespace {

/* The few NVML entry points used, with their ABI (nvml.h, stable since
 * the v2 functions of CUDA 5.5). */
typedef int nvml_ret;
typedef void *nvml_dev;
struct nvml_mem {
	unsigned long long total, free, used;
};

struct {
	void *lib;
	nvml_ret (*count)(unsigned int *n);
	nvml_ret (*by_index)(unsigned int i, nvml_dev *dev);
	nvml_ret (*mem)(nvml_dev dev, nvml_mem *m);
	nvml_ret (*minor)(nvml_dev dev, unsigned int *n);
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

/* The GPUs NVML knows, each by its node's number; false when NVML
 * cannot say. */
bool nvml_gpus(std::vector<kp_gpu> &out)
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
		out.push_back(kp_gpu{ minor, i, true });
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
		if (!nvml_gpus(out))
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
		out.push_back(kp_gpu{ i, 0, true });
	log_info("%zu GPU(s) from %s", out.size(), !c.gpus.empty() ? "--gpus" :
		 nv.lib != nullptr ? "NVML" : c.cdi_spec.c_str());
	return 0;
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
