/*
 * A stand-in for the driver's libnvidia-ml.so.1, for the scheduler's
 * tests on machines without a GPU: the daemon loads it by its soname, so
 * a test puts its directory in LD_LIBRARY_PATH. It knows the GPUs that
 * VSHARE_FAKE_NVML lists (UUIDs separated by commas); a GPU's NVML index
 * is its place in that list, and each has 16 GiB. Only the entry points
 * the daemon and the device plugin use are here.
 *
 * A GPU can be made to fall off the bus while a program runs: when
 * VSHARE_FAKE_NVML_LOST names a file, every GPU whose index is a line of
 * that file answers GPU_IS_LOST to a memory query, as a lost GPU does.
 * A GPU's device node number (/dev/nvidiaN) is its index, or the entry
 * of VSHARE_FAKE_NVML_MINORS (numbers separated by commas) at its index.
 * A GPU's memory is 16 GiB, or the entry of VSHARE_FAKE_NVML_GIB at its
 * index; its name is "Fake GPU"; its PCI bus id is 0000:1N:00.0 for
 * index N (NVML writes it with an eight-digit domain, in capitals); the
 * driver's version is 550.54.15.
 *
 * Processes: VSHARE_FAKE_NVML_PROCS names a file of lines "INDEX PID
 * BYTES SM": the process PID runs on the GPU of that index with BYTES
 * of device memory, and each utilisation query (since a time older
 * than now) gives one sample of SM percent for it, none where SM is -1.
 * VSHARE_FAKE_NVML_UTIL=new: the older utilisation call answers
 * NOT_SUPPORTED and the newer one serves (drivers that have only that);
 * =none: neither gives samples.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NVML_SUCCESS         0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INVALID   2
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7

struct nvml_mem {
	unsigned long long total, free, used;
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev);
int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_mem *m);
int nvmlDeviceGetIndex(void *dev, unsigned int *index);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
int nvmlDeviceGetMinorNumber(void *dev, unsigned int *minor);
int nvmlDeviceGetName(void *dev, char *name, unsigned int len);
int nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len);
int nvmlSystemGetDriverVersion(char *version, unsigned int len);

/* nvml.h's nvmlPciInfo_t, as nvmlDeviceGetPciInfo_v3 fills it. */
struct nvml_pci {
	char bus_id_legacy[16];
	unsigned int domain, bus, device, device_id, subsystem_id;
	char bus_id[32];
};
int nvmlDeviceGetPciInfo_v3(void *dev, struct nvml_pci *pci);

/* nvml.h's nvmlProcessInfo_t, nvmlProcessUtilizationSample_t,
 * nvmlProcessUtilizationInfo_v1_t, nvmlProcessesUtilizationInfo_v1_t. */
struct nvml_proc {
	unsigned int pid;
	unsigned long long mem;
	unsigned int gi, ci;
};
struct nvml_sample {
	unsigned int pid;
	unsigned long long ts;
	unsigned int sm, mem, enc, dec;
};
struct nvml_sample1 {
	unsigned long long ts;
	unsigned int pid, sm, mem, enc, dec, jpg, ofa;
};
struct nvml_samples1 {
	unsigned int version, n;
	unsigned long long last;
	struct nvml_sample1 *v;
};
int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n,
					    struct nvml_proc *p);
int nvmlDeviceGetProcessUtilization(void *dev, struct nvml_sample *s,
				    unsigned int *n, unsigned long long last);
int nvmlDeviceGetProcessesUtilizationInfo(void *dev, struct nvml_samples1 *q);

int nvmlInit_v2(void)
{
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	return NVML_SUCCESS;
}

/* A handle is the GPU's index plus one, so that none is NULL. */
int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev)
{
	const char *list = getenv("VSHARE_FAKE_NVML");
	size_t n = strlen(uuid);
	uintptr_t i = 0;

	if (list == NULL || n == 0 || dev == NULL)
		return NVML_ERROR_INVALID;
	for (const char *p = list; *p != '\0'; i++) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		if (len == n && strncmp(p, uuid, n) == 0) {
			*dev = (void *)(i + 1);
			return NVML_SUCCESS;
		}
		p += len + (end != NULL);
	}
	return NVML_ERROR_NOT_FOUND;
}

int nvmlDeviceGetCount_v2(unsigned int *n)
{
	const char *list = getenv("VSHARE_FAKE_NVML");

	if (n == NULL)
		return NVML_ERROR_INVALID;
	*n = 0;
	if (list != NULL && *list != '\0')
		for (*n = 1; *list != '\0'; list++)
			*n += *list == ',';
	return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev)
{
	unsigned int n;

	if (dev == NULL || nvmlDeviceGetCount_v2(&n) != 0 || i >= n)
		return NVML_ERROR_INVALID;
	*dev = (void *)((uintptr_t)i + 1);
	return NVML_SUCCESS;
}

/* The entry at `index` of the list in variable `var` (numbers separated
 * by commas), or `dflt`. */
static unsigned long long entry(const char *var, uintptr_t index,
				unsigned long long dflt)
{
	const char *list = getenv(var);

	for (uintptr_t i = 0; list != NULL && *list != '\0'; i++) {
		if (i == index)
			return strtoull(list, NULL, 10);
		list = strchr(list, ',');
		list = list ? list + 1 : "";
	}
	return dflt;
}

int nvmlDeviceGetMinorNumber(void *dev, unsigned int *minor)
{
	if (dev == NULL || minor == NULL)
		return NVML_ERROR_INVALID;
	*minor = (unsigned int)entry("VSHARE_FAKE_NVML_MINORS",
				     (uintptr_t)dev - 1, (uintptr_t)dev - 1);
	return NVML_SUCCESS;
}

int nvmlDeviceGetName(void *dev, char *name, unsigned int len)
{
	if (dev == NULL || name == NULL || len < sizeof("Fake GPU"))
		return NVML_ERROR_INVALID;
	strcpy(name, "Fake GPU");
	return NVML_SUCCESS;
}

/* The UUID of VSHARE_FAKE_NVML at the handle's index. */
int nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len)
{
	const char *p = getenv("VSHARE_FAKE_NVML");

	if (dev == NULL || uuid == NULL || p == NULL)
		return NVML_ERROR_INVALID;
	for (uintptr_t i = 1; i < (uintptr_t)dev && p != NULL; i++)
		if ((p = strchr(p, ',')) != NULL)
			p++;
	if (p == NULL)
		return NVML_ERROR_INVALID;
	size_t n = strchr(p, ',') ? (size_t)(strchr(p, ',') - p) : strlen(p);
	if (n + 1 > len)
		return NVML_ERROR_INVALID;
	memcpy(uuid, p, n);
	uuid[n] = '\0';
	return NVML_SUCCESS;
}

int nvmlSystemGetDriverVersion(char *version, unsigned int len)
{
	if (version == NULL || len < sizeof("550.54.15"))
		return NVML_ERROR_INVALID;
	strcpy(version, "550.54.15");
	return NVML_SUCCESS;
}

int nvmlDeviceGetPciInfo_v3(void *dev, struct nvml_pci *pci)
{
	unsigned int bus;

	if (dev == NULL || pci == NULL)
		return NVML_ERROR_INVALID;
	bus = 0x10 + (unsigned int)((uintptr_t)dev - 1);
	memset(pci, 0, sizeof(*pci));
	pci->bus = bus;
	snprintf(pci->bus_id_legacy, sizeof(pci->bus_id_legacy),
		 "0000:%02X:00.0", bus);
	snprintf(pci->bus_id, sizeof(pci->bus_id), "00000000:%02X:00.0", bus);
	return NVML_SUCCESS;
}

/* Whether the GPU of handle dev is listed in VSHARE_FAKE_NVML_LOST's
 * file. */
static int lost(void *dev)
{
	const char *path = getenv("VSHARE_FAKE_NVML_LOST");
	unsigned int index;
	FILE *f;
	int hit = 0;

	if (path == NULL || (f = fopen(path, "r")) == NULL)
		return 0;
	while (!hit && fscanf(f, "%u", &index) == 1)
		hit = index + 1 == (uintptr_t)dev;
	fclose(f);
	return hit;
}

int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_mem *m)
{
	if (dev == NULL || m == NULL)
		return NVML_ERROR_INVALID;
	if (lost(dev))
		return NVML_ERROR_GPU_IS_LOST;
	m->total = entry("VSHARE_FAKE_NVML_GIB", (uintptr_t)dev - 1, 16) << 30;
	m->used = 0;
	m->free = m->total;
	return NVML_SUCCESS;
}

int nvmlDeviceGetIndex(void *dev, unsigned int *index)
{
	if (dev == NULL || index == NULL)
		return NVML_ERROR_INVALID;
	*index = (unsigned int)((uintptr_t)dev - 1);
	return NVML_SUCCESS;
}

/* A line of VSHARE_FAKE_NVML_PROCS's file for the GPU of handle dev. */
struct line {
	unsigned int pid;
	unsigned long long bytes;
	int sm;
};

/* The GPU's processes, at most max of them; their count. */
static unsigned int lines(void *dev, struct line *out, unsigned int max)
{
	const char *path = getenv("VSHARE_FAKE_NVML_PROCS");
	unsigned int index, n = 0;
	struct line l;
	FILE *f;

	if (path == NULL || (f = fopen(path, "r")) == NULL)
		return 0;
	while (n < max && fscanf(f, "%u %u %llu %d", &index, &l.pid, &l.bytes,
				 &l.sm) == 4)
		if (index + 1 == (uintptr_t)dev)
			out[n++] = l;
	fclose(f);
	return n;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n,
					    struct nvml_proc *p)
{
	struct line l[64];
	unsigned int k;

	if (dev == NULL || n == NULL)
		return NVML_ERROR_INVALID;
	k = lines(dev, l, 64);
	if (*n < k || (p == NULL && k > 0)) {
		*n = k;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < k; i++)
		p[i] = (struct nvml_proc){ l[i].pid, l[i].bytes, 0, 0 };
	*n = k;
	return NVML_SUCCESS;
}

static unsigned long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (unsigned long long)ts.tv_sec * 1000000u +
	       (unsigned long long)ts.tv_nsec / 1000u;
}

/* One sample per process with an SM figure, stamped now, when last is
 * older than now. */
static unsigned int fake_samples(void *dev, unsigned long long last,
				 struct nvml_sample *out, unsigned int max)
{
	struct line l[64];
	unsigned long long t = now_us();
	unsigned int k = lines(dev, l, 64), n = 0;

	for (unsigned int i = 0; i < k && n < max && last < t; i++)
		if (l[i].sm >= 0)
			out[n++] = (struct nvml_sample){ l[i].pid, t,
				(unsigned int)l[i].sm, 0, 0, 0 };
	return n;
}

static const char *util_mode(void)
{
	const char *m = getenv("VSHARE_FAKE_NVML_UTIL");

	return m ? m : "old";
}

int nvmlDeviceGetProcessUtilization(void *dev, struct nvml_sample *s,
				    unsigned int *n, unsigned long long last)
{
	struct nvml_sample v[64];
	unsigned int k;

	if (dev == NULL || n == NULL)
		return NVML_ERROR_INVALID;
	if (strcmp(util_mode(), "old") != 0)
		return NVML_ERROR_NOT_SUPPORTED;
	k = fake_samples(dev, last, v, 64);
	if (k == 0)
		return NVML_ERROR_NOT_FOUND;
	if (s == NULL || *n < k) {
		*n = k;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(s, v, k * sizeof(*v));
	*n = k;
	return NVML_SUCCESS;
}

int nvmlDeviceGetProcessesUtilizationInfo(void *dev, struct nvml_samples1 *q)
{
	struct nvml_sample v[64];
	unsigned int k;

	if (dev == NULL || q == NULL ||
	    q->version != (sizeof(*q) | (1u << 24)))
		return NVML_ERROR_INVALID;
	if (strcmp(util_mode(), "new") != 0)
		return NVML_ERROR_NOT_SUPPORTED;
	k = fake_samples(dev, q->last, v, 64);
	if (k == 0)
		return NVML_ERROR_NOT_FOUND;
	if (q->v == NULL || q->n < k) {
		q->n = k;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned int i = 0; i < k; i++)
		q->v[i] = (struct nvml_sample1){ v[i].ts, v[i].pid, v[i].sm,
						 0, 0, 0, 0, 0 };
	q->n = k;
	return NVML_SUCCESS;
}
