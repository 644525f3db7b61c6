/*
 * Shared by the example programs: error checks, device and context set-up,
 * the kernels' module, option parsing, time. The examples use the CUDA
 * driver API only, so they run unchanged on a real GPU and on vshare's
 * CUDA test driver (whose built-in kernels match the PTX in vs_ptx.c).
 */
#ifndef VS_COMMON_H
#define VS_COMMON_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

extern const char vs_ptx[];
extern const char *vs_prog;	/* program name for messages */

/* Exit status: 0 success, 1 a check failed, 2 usage or CUDA error. */
#define VS_EXIT_FAIL 2

void vs_check(CUresult rc, const char *what, const char *file, int line);
#define VS_CK(call) vs_check((call), #call, __FILE__, __LINE__)

struct vs_gpu {
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	int test_driver;	/* the device is vshare's test driver's */
};

/* cuInit, the primary context of device ordinal made current, the
 * kernels loaded; prints one line describing the device. */
void vs_setup(struct vs_gpu *g, int ordinal, int quiet);
void vs_teardown(struct vs_gpu *g);
CUfunction vs_kernel(const struct vs_gpu *g, const char *name);

/* 1 if p is managed (Unified) memory, 0 if not. */
int vs_is_managed(CUdeviceptr p);

double vs_now_ms(void);

/* Option parsing: "--name value" or "--name=value". Each returns 1 and
 * advances *i when argv[*i] is that option; exits on a bad value. */
int vs_opt_ull(int argc, char **argv, int *i, const char *name,
	       unsigned long long *out);
int vs_opt_double(int argc, char **argv, int *i, const char *name, double *out);
int vs_opt_str(int argc, char **argv, int *i, const char *name, const char **out);
int vs_opt_flag(char **argv, int i, const char *name);
/* "64M", "1G", "4096" -> bytes, or exits. */
unsigned long long vs_parse_size(const char *name, const char *s);
void vs_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
