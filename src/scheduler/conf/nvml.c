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
#include <stdlib.h>
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
/* nvmlProcessInfo_t of the _v2 and _v3 process lists. */
struct nvml_proc {
	unsigned int pid;
	unsigned long long mem;       /* NVML_VALUE_NOT_AVAILABLE: unknown */
	unsigned int gi, ci;
};
/* nvmlProcessUtilizationSample_t. */
struct nvml_sample {
	unsigned int pid;
	unsigned long long ts;        /* us */
	unsigned int sm, mem, enc, dec;
};
/* nvmlProcessUtilizationInfo_v1_t and nvmlProcessesUtilizationInfo_v1_t
 * (nvml.h's version word: the struct's size, version 1 in the top byte). */
struct nvml_sample1 {
	unsigned long long ts;
	unsigned int pid, sm, mem, enc, dec, jpg, ofa;
};
struct nvml_samples1 {
	unsigned int version, n;
	unsigned long long last;
	struct nvml_sample1 *v;
};
#define NVML_SAMPLES1_VERSION (sizeof(struct nvml_samples1) | (1u << 24))
#define NVML_OK              0
#define NVML_NOT_SUPPORTED   3
#define NVML_NOT_FOUND       6
#define NVML_INSUFFICIENT    7
#define NVML_NOT_AVAILABLE   (~0ull)
_Static_assert(sizeof(struct nvml_proc) == 24, "nvmlProcessInfo_t");
_Static_assert(sizeof(struct nvml_sample) == 32,
	       "nvmlProcessUtilizationSample_t");
_Static_assert(sizeof(struct nvml_sample1) == 40,
	       "nvmlProcessUtilizationInfo_v1_t");
_Static_assert(sizeof(struct nvml_samples1) == 24,
	       "nvmlProcessesUtilizationInfo_v1_t");

/* Per GPU, the newest sample seen, so that each call averages what came
 * since the one before. */
#define NVML_SEEN_MAX 64
struct nvml_seen {
	uint8_t uuid[VS_UUID_LEN];
	unsigned long long last;
};

static struct {
	void *lib;
	nvml_ret (*by_uuid)(const char *uuid, nvml_dev *dev);
	nvml_ret (*mem)(nvml_dev dev, struct nvml_mem *m);
	nvml_ret (*index)(nvml_dev dev, unsigned int *index);
	nvml_ret (*shutdown)(void);
	/* Optional: process lists and samples (older drivers lack some). */
	nvml_ret (*procs)(nvml_dev dev, unsigned int *n, struct nvml_proc *p);
	nvml_ret (*samples)(nvml_dev dev, struct nvml_sample *s,
			    unsigned int *n, unsigned long long last);
	nvml_ret (*samples1)(nvml_dev dev, struct nvml_samples1 *s);
	struct nvml_seen seen[NVML_SEEN_MAX];
	size_t n_seen;
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
	nv.procs = (nvml_ret (*)(nvml_dev, unsigned int *, struct nvml_proc *))
		dlsym(nv.lib, "nvmlDeviceGetComputeRunningProcesses_v3");
	if (nv.procs == NULL)
		nv.procs = (nvml_ret (*)(nvml_dev, unsigned int *,
					 struct nvml_proc *))
			dlsym(nv.lib, "nvmlDeviceGetComputeRunningProcesses_v2");
	nv.samples = (nvml_ret (*)(nvml_dev, struct nvml_sample *,
				   unsigned int *, unsigned long long))
		dlsym(nv.lib, "nvmlDeviceGetProcessUtilization");
	nv.samples1 = (nvml_ret (*)(nvml_dev, struct nvml_samples1 *))
		dlsym(nv.lib, "nvmlDeviceGetProcessesUtilizationInfo");
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

static unsigned long long *seen_of(const uint8_t uuid[VS_UUID_LEN])
{
	for (size_t i = 0; i < nv.n_seen; i++)
		if (memcmp(nv.seen[i].uuid, uuid, VS_UUID_LEN) == 0)
			return &nv.seen[i].last;
	if (nv.n_seen == NVML_SEEN_MAX)
		return NULL;
	memcpy(nv.seen[nv.n_seen].uuid, uuid, VS_UUID_LEN);
	nv.seen[nv.n_seen].last = 0;
	return &nv.seen[nv.n_seen++].last;
}

/* nvmlDeviceGetProcessesUtilizationInfo's samples since last, as
 * nvmlProcessUtilizationSample_t: as samples() below. */
static long samples_v1(nvml_dev dev, unsigned long long last,
		       struct nvml_sample **out)
{
	struct nvml_samples1 q = { NVML_SAMPLES1_VERSION, 0, last, NULL };
	nvml_ret r = nv.samples1(dev, &q);
	unsigned int n;

	if (r == NVML_OK || r == NVML_NOT_FOUND)
		return 0;
	if (r != NVML_INSUFFICIENT || q.n == 0)
		return -1;
	q.v = calloc(q.n, sizeof(*q.v));
	*out = calloc(q.n, sizeof(**out));
	q.last = last;
	if (q.v == NULL || *out == NULL || nv.samples1(dev, &q) != NVML_OK) {
		free(q.v);
		free(*out);
		*out = NULL;
		return -1;
	}
	for (n = 0; n < q.n; n++)
		(*out)[n] = (struct nvml_sample){ q.v[n].pid, q.v[n].ts,
			q.v[n].sm, q.v[n].mem, q.v[n].enc, q.v[n].dec };
	free(q.v);
	return (long)n;
}

/* The driver's samples since last: a malloc'd array and its count (0
 * with none since last), or -1 when the driver gives none at all.
 * Drivers where the older call is not supported have the newer. */
static long samples(nvml_dev dev, unsigned long long last,
		    struct nvml_sample **out)
{
	unsigned int n = 0;
	nvml_ret r = NVML_NOT_SUPPORTED;

	*out = NULL;
	if (nv.samples != NULL)
		r = nv.samples(dev, NULL, &n, last);
	if (r == NVML_INSUFFICIENT && n > 0) {
		*out = calloc(n, sizeof(**out));
		if (*out != NULL && nv.samples(dev, *out, &n, last) == NVML_OK)
			return (long)n;
		free(*out);
		*out = NULL;
		return -1;
	}
	if (r == NVML_OK || r == NVML_NOT_FOUND)
		return 0;
	if (r == NVML_NOT_SUPPORTED && nv.samples1 != NULL)
		return samples_v1(dev, last, out);
	return -1;
}

/* Each entry's SM utilisation: the mean of its pid's samples, 0 with
 * none; the newest sample's time moves *last. */
static void fill_util(struct sched_proc_use *out, size_t n,
		      const struct nvml_sample *sm, long ns,
		      unsigned long long *last)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t sum = 0, k = 0;

		for (long j = 0; j < ns; j++)
			if ((int32_t)sm[j].pid == out[i].pid) {
				sum += sm[j].sm <= 100 ? sm[j].sm : 100;
				k++;
			}
		out[i].sm_pct = ns < 0 ? SCHED_UTIL_UNKNOWN :
				k ? (int32_t)((sum + k / 2) / k) : 0;
	}
	for (long j = 0; j < ns && last != NULL; j++)
		if (sm[j].ts > *last)
			*last = sm[j].ts;
}

long nvml_procs(const uint8_t uuid[VS_UUID_LEN], struct sched_proc_use *out,
		size_t max)
{
	char s[VS_UUID_STR_LEN];
	struct nvml_proc *p = NULL;
	struct nvml_sample *sm = NULL;
	unsigned long long *last;
	unsigned int n = 0;
	nvml_dev dev;
	nvml_ret r;
	long ns;
	size_t k = 0;

	if (nv.lib == NULL || nv.procs == NULL)
		return -1;
	vs_uuid_format(uuid, s);
	if (nv.by_uuid(s, &dev) != 0)
		return -1;
	r = nv.procs(dev, &n, NULL);
	if (r == NVML_INSUFFICIENT && n > 0) {
		/* Room for a few that start between the two calls. */
		n += 8;
		if ((p = calloc(n, sizeof(*p))) == NULL)
			return -1;
		r = nv.procs(dev, &n, p);
	}
	if (r != NVML_OK) {
		free(p);
		return -1;
	}
	for (unsigned int i = 0; i < n && k < max; i++) {
		out[k].pid = (int32_t)p[i].pid;
		out[k].mem = p[i].mem == NVML_NOT_AVAILABLE ? 0 : p[i].mem;
		out[k++].sm_pct = SCHED_UTIL_UNKNOWN;
	}
	free(p);
	last = seen_of(uuid);
	ns = samples(dev, last ? *last : 0, &sm);
	fill_util(out, k, sm, ns, last);
	free(sm);
	return (long)k;
}
