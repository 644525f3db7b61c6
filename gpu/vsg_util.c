#include "vsg_util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static CUdevice vsg_dev;

void vsg_check(CUresult r, const char *what, const char *file, int line)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return;
	cuGetErrorName(r, &name);
	fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", file, line, what,
		name ? name : "?", (int)r);
	exit(2);
}

uint64_t vsg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void vsg_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

CUcontext vsg_ctx_open(void)
{
	CUcontext ctx;

	VSG_CK(cuInit(0));
	VSG_CK(cuDeviceGet(&vsg_dev, 0));
	VSG_CK(cuDevicePrimaryCtxRetain(&ctx, vsg_dev));
	VSG_CK(cuCtxSetCurrent(ctx));
	return ctx;
}

void vsg_ctx_close(void)
{
	VSG_CK(cuCtxSynchronize());
	VSG_CK(cuDevicePrimaryCtxRelease(vsg_dev));
}

CUmodule vsg_module_load(void)
{
	char path[PATH_MAX];
	const char *env = getenv("VSG_FATBIN");
	CUmodule mod;

	if (env && *env) {
		snprintf(path, sizeof(path), "%s", env);
	} else {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 32);
		char *slash;

		if (n <= 0) {
			fprintf(stderr, "cannot read /proc/self/exe\n");
			exit(2);
		}
		path[n] = '\0';
		slash = strrchr(path, '/');
		strcpy(slash ? slash + 1 : path, "vsg_kernels.fatbin");
	}
	VSG_CK(cuModuleLoad(&mod, path));
	return mod;
}

CUfunction vsg_function(CUmodule mod, const char *name)
{
	CUfunction f;

	VSG_CK(cuModuleGetFunction(&f, mod, name));
	return f;
}

int vsg_is_managed(CUdeviceptr ptr)
{
	unsigned int managed = 0;

	VSG_CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr));
	return managed != 0;
}

void vsg_touch_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0) {
		perror(path);
		exit(2);
	}
	close(fd);
}

int vsg_wait_file(const char *path, unsigned timeout_ms)
{
	uint64_t end = vsg_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec ts = { 0, 200000 };

	while (access(path, F_OK) != 0) {
		if (vsg_now_ns() > end)
			return -1;
		nanosleep(&ts, NULL);
	}
	return 0;
}

void vsg_write_text(const char *path, const char *text)
{
	char tmp[PATH_MAX];
	FILE *f;

	/* Write then rename, so a reader polling for the file never sees it
	 * half written. */
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%s\n", text) < 0 || fclose(f) != 0 ||
	    rename(tmp, path) != 0) {
		perror(path);
		exit(2);
	}
}

const char *vsg_arg(int argc, char **argv, const char *name, const char *dflt)
{
	for (int i = 1; i + 1 < argc; i++)
		if (strcmp(argv[i], name) == 0)
			return argv[i + 1];
	return dflt;
}

uint64_t vsg_arg_u64(int argc, char **argv, const char *name, uint64_t dflt)
{
	const char *s = vsg_arg(argc, argv, name, NULL);

	return s ? strtoull(s, NULL, 0) : dflt;
}

int vsg_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int vsg_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}
