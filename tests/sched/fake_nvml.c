/*
 * A stand-in for the driver's libnvidia-ml.so.1, for the scheduler's
 * tests on machines without a GPU: the daemon loads it by its soname, so
 * a test puts its directory in LD_LIBRARY_PATH. It knows the GPUs that
 * VSHARE_FAKE_NVML lists (UUIDs separated by commas); a GPU's NVML index
 * is its place in that list, and each has 16 GiB. Only the entry points
 * the daemon uses are here.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS         0
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INVALID   2

struct nvml_mem {
	unsigned long long total, free, used;
};

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetHandleByUUID(const char *uuid, void **dev);
int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_mem *m);
int nvmlDeviceGetIndex(void *dev, unsigned int *index);

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

int nvmlDeviceGetMemoryInfo(void *dev, struct nvml_mem *m)
{
	if (dev == NULL || m == NULL)
		return NVML_ERROR_INVALID;
	m->total = 16ull << 30;
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
