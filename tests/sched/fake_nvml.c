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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS         0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INVALID   2
#define NVML_ERROR_GPU_IS_LOST 15

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
