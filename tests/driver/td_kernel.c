/*
 * Built-in kernels. A module image is never compiled: cuModuleGetFunction
 * looks the function's name up here, so the PTX the examples embed for a
 * real GPU selects the C version of the same kernel on the test driver.
 * Parameters are laid out as the CUDA ABI does (each at its natural
 * alignment), which is what a CU_LAUNCH_PARAM_BUFFER_POINTER caller passes.
 */
#include "td.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#define P 8	/* a pointer parameter */

static void sleep_us(unsigned long long us)
{
	struct timespec ts = {
		.tv_sec = (time_t)(us / 1000000ull),
		.tv_nsec = (long)((us % 1000000ull) * 1000ull),
	};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* vs_sleep(unsigned long long us) */
static void k_sleep(const unsigned char *a)
{
	unsigned long long us;

	memcpy(&us, a, sizeof(us));
	sleep_us(us);
}

/* vs_sleep_ts(unsigned long long us, unsigned long long *out):
 * out[0] = start ns, out[1] = end ns. */
static void k_sleep_ts(const unsigned char *a)
{
	unsigned long long us, *out, t0;

	memcpy(&us, a, sizeof(us));
	memcpy(&out, a + 8, sizeof(out));
	t0 = td_now_ns();
	sleep_us(us);
	if (out) {
		out[0] = t0;
		out[1] = td_now_ns();
	}
}

/* vs_add(const float *a, const float *b, float *c, int n) */
static void k_add(const unsigned char *a)
{
	const float *x, *y;
	float *z;
	int n, i;

	memcpy(&x, a, P);
	memcpy(&y, a + 8, P);
	memcpy(&z, a + 16, P);
	memcpy(&n, a + 24, sizeof(n));
	for (i = 0; i < n; i++)
		z[i] = x[i] + y[i];
}

/* vs_fill(float *p, float v, int n) */
static void k_fill(const unsigned char *a)
{
	float *p, v;
	int n, i;

	memcpy(&p, a, P);
	memcpy(&v, a + 8, sizeof(v));
	memcpy(&n, a + 12, sizeof(n));
	for (i = 0; i < n; i++)
		p[i] = v;
}

/* vs_timestamp(unsigned long long *out): out[0] = start ns. */
static void k_timestamp(const unsigned char *a)
{
	unsigned long long *out;

	memcpy(&out, a, P);
	if (out)
		out[0] = td_now_ns();
}

static const struct td_kernel kernels[] = {
	{ "vs_sleep", 1, { 8 }, k_sleep },
	{ "vs_spin", 1, { 8 }, k_sleep },
	{ "vs_sleep_ts", 2, { 8, P }, k_sleep_ts },
	{ "vs_add", 4, { P, P, P, 4 }, k_add },
	{ "vs_fill", 3, { P, 4, 4 }, k_fill },
	{ "vs_timestamp", 1, { P }, k_timestamp },
};

const struct td_kernel *td_kernel_find(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (strcmp(kernels[i].name, name) == 0)
			return &kernels[i];
	return NULL;
}

/* Offset of parameter i: each parameter at its natural alignment. */
size_t td_kernel_offset(const struct td_kernel *k, int i)
{
	size_t off = 0;
	int j;

	for (j = 0; j <= i; j++) {
		size_t sz = k->sizes[j];

		off = (off + sz - 1) & ~(sz - 1);
		if (j < i)
			off += sz;
	}
	return off;
}

size_t td_kernel_args_size(const struct td_kernel *k)
{
	return k->nparams ? td_kernel_offset(k, k->nparams - 1) +
		k->sizes[k->nparams - 1] : 0;
}
