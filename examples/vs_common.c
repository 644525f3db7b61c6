/*
 * Helpers shared by the examples (see vs_common.h).
 */
#include "vs_common.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *vs_prog = "vs-example";

void vs_check(CUresult rc, const char *what, const char *file, int line)
{
	const char *name = NULL, *text = NULL;

	if (rc == CUDA_SUCCESS)
		return;
	cuGetErrorName(rc, &name);
	cuGetErrorString(rc, &text);
	fprintf(stderr, "%s: %s failed: %s (%s) at %s:%d\n", vs_prog, what,
		name ? name : "unknown error", text ? text : "?", file, line);
	exit(VS_EXIT_FAIL);
}

void vs_usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", vs_prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (try --help)\n");
	exit(VS_EXIT_FAIL);
}

static void uuid_string(const CUuuid *u, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(buf, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Loads the PTX; on a real GPU a JIT error is printed with its log. */
static void load_module(struct vs_gpu *g)
{
	char log[4096] = "";
	CUjit_option opts[] = { CU_JIT_ERROR_LOG_BUFFER,
				CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES };
	void *vals[] = { log, (void *)(uintptr_t)sizeof(log) };
	CUresult rc = cuModuleLoadDataEx(&g->mod, vs_ptx, 2, opts, vals);

	if (rc != CUDA_SUCCESS && log[0])
		fprintf(stderr, "%s: PTX JIT log:\n%s\n", vs_prog, log);
	VS_CK(rc);
}

void vs_setup(struct vs_gpu *g, int ordinal, int quiet)
{
	char name[256], uuid[64];
	CUuuid u;
	size_t total;
	int count, version;

	memset(g, 0, sizeof(*g));
	VS_CK(cuInit(0));
	VS_CK(cuDeviceGetCount(&count));
	if (ordinal < 0 || ordinal >= count)
		vs_usage_error("device %d does not exist (%d visible)", ordinal, count);
	VS_CK(cuDeviceGet(&g->dev, ordinal));
	VS_CK(cuDeviceGetName(name, sizeof(name), g->dev));
	VS_CK(cuDeviceGetUuid(&u, g->dev));
	VS_CK(cuDeviceTotalMem(&total, g->dev));
	VS_CK(cuDriverGetVersion(&version));
	VS_CK(cuDevicePrimaryCtxRetain(&g->ctx, g->dev));
	VS_CK(cuCtxSetCurrent(g->ctx));
	load_module(g);
	/* The test driver's UUIDs start with the bytes "vstd". */
	g->test_driver = memcmp(u.bytes, "vstd", 4) == 0;
	uuid_string(&u, uuid, sizeof(uuid));
	if (!quiet)
		printf("%s: device %d \"%s\" %s, %.1f GiB, driver %d.%d%s\n",
		       vs_prog, ordinal, name, uuid,
		       (double)total / (1024.0 * 1024 * 1024), version / 1000,
		       version % 1000 / 10,
		       g->test_driver ? " (vshare CUDA test driver)" : "");
	fflush(stdout);
}

void vs_teardown(struct vs_gpu *g)
{
	VS_CK(cuModuleUnload(g->mod));
	VS_CK(cuDevicePrimaryCtxRelease(g->dev));
}

CUfunction vs_kernel(const struct vs_gpu *g, const char *name)
{
	CUfunction f;

	VS_CK(cuModuleGetFunction(&f, g->mod, name));
	return f;
}

int vs_is_managed(CUdeviceptr p)
{
	unsigned int managed = 0;

	VS_CK(cuPointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, p));
	return managed != 0;
}

double vs_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The value of option name at argv[*i], or NULL if argv[*i] is not it. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 >= argc)
		vs_usage_error("%s needs a value", name);
	return argv[++*i];
}

unsigned long long vs_parse_size(const char *name, const char *s)
{
	char *end;
	double v = strtod(s, &end);
	double mult = 1;

	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (end == s || *end || v < 0)
		vs_usage_error("%s: bad size '%s'", name, s);
	return (unsigned long long)(v * mult);
}

int vs_opt_ull(int argc, char **argv, int *i, const char *name,
	       unsigned long long *out)
{
	const char *v = opt_value(argc, argv, i, name);

	if (!v)
		return 0;
	*out = vs_parse_size(name, v);
	return 1;
}

int vs_opt_double(int argc, char **argv, int *i, const char *name, double *out)
{
	const char *v = opt_value(argc, argv, i, name);
	char *end;

	if (!v)
		return 0;
	*out = strtod(v, &end);
	if (end == v || *end || *out < 0)
		vs_usage_error("%s: bad number '%s'", name, v);
	return 1;
}

int vs_opt_str(int argc, char **argv, int *i, const char *name, const char **out)
{
	const char *v = opt_value(argc, argv, i, name);

	if (!v)
		return 0;
	*out = v;
	return 1;
}

int vs_opt_flag(char **argv, int i, const char *name)
{
	return strcmp(argv[i], name) == 0;
}
