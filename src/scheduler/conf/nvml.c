/*
 * The driver's own report of a GPU's memory, through NVML, so that the
 * capacity clients are scheduled against does not rest on what a client
 * says; and the GPU's index as nvidia-smi shows it, so that status,
 * --gpu and the metrics name GPUs as every other tool does. NVML is
 * loaded with dlopen: the daemon must run (and its tests pass) on
 * machines without a GPU or driver, where every lookup says 0 (no
 * index), the policy falls back to each client's own report and GPUs
 * are numbered in the order of first attach.
 */
#include <dlfcn.h>
#include <string.h>

#include "log.h"
#include "nvml.h"

/* The few NVML entry points used, with their ABI (nvml.h, stable since
 * the v2 functions of CUDA 5.5). */
typedef int nvml_ret;
typedef void *nvml_dev;
struct nvml_mem {
	unsigned long long total, free, used;
};

static struct {
	void *lib;
	nvml_ret (*by_uuid)(const char *uuid, nvml_dev *dev);
	nvml_ret (*mem)(nvml_dev dev, struct nvml_mem *m);
	nvml_ret (*index)(nvml_dev dev, unsigned int *index);
	nvml_ret (*shutdown)(void);
} nv;

int nvml_open(void)
{
	nvml_ret (*init)(void);

	nv.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (nv.lib == NULL) {
		log_info("NVML not available (%s): a GPU's capacity comes "
			 "from the configuration or each client's report, its "
			 "index from the order of first attach", dlerror());
		return -1;
	}
	init = (nvml_ret (*)(void))dlsym(nv.lib, "nvmlInit_v2");
	nv.by_uuid = (nvml_ret (*)(const char *, nvml_dev *))
		dlsym(nv.lib, "nvmlDeviceGetHandleByUUID");
	nv.mem = (nvml_ret (*)(nvml_dev, struct nvml_mem *))
		dlsym(nv.lib, "nvmlDeviceGetMemoryInfo");
	nv.index = (nvml_ret (*)(nvml_dev, unsigned int *))
		dlsym(nv.lib, "nvmlDeviceGetIndex");
	nv.shutdown = (nvml_ret (*)(void))dlsym(nv.lib, "nvmlShutdown");
	if (init == NULL || nv.by_uuid == NULL || nv.mem == NULL ||
	    nv.index == NULL || nv.shutdown == NULL || init() != 0) {
		log_warn("NVML found but not usable: a GPU's capacity comes "
			 "from the configuration or each client's report");
		dlclose(nv.lib);
		memset(&nv, 0, sizeof(nv));
		return -1;
	}
	log_info("NVML: a GPU's capacity is the memory the driver reports, "
		 "its index the one nvidia-smi shows");
	return 0;
}

void nvml_close(void)
{
	if (nv.lib == NULL)
		return;
	nv.shutdown();
	dlclose(nv.lib);
	memset(&nv, 0, sizeof(nv));
}

uint64_t nvml_total(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	char s[VS_UUID_STR_LEN];
	struct nvml_mem m;
	nvml_dev dev;

	(void)arg;
	if (nv.lib == NULL)
		return 0;
	vs_uuid_format(uuid, s);
	if (nv.by_uuid(s, &dev) != 0 || nv.mem(dev, &m) != 0)
		return 0;
	return m.total;
}

int64_t nvml_index(void *arg, const uint8_t uuid[VS_UUID_LEN])
{
	char s[VS_UUID_STR_LEN];
	unsigned int index;
	nvml_dev dev;

	(void)arg;
	if (nv.lib == NULL)
		return -1;
	vs_uuid_format(uuid, s);
	if (nv.by_uuid(s, &dev) != 0 || nv.index(dev, &index) != 0)
		return -1;
	return index;
}
