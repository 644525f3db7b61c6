/*
 * Shared helpers of the GPU suite's driver-API programs: error checks that
 * name the failing call, a monotonic clock that all processes of the node
 * share, context and module set-up, and small file handshakes between
 * processes. The programs print one JSON object on stdout for the suite.
 */
#ifndef VSG_UTIL_H
#define VSG_UTIL_H

#include <cuda.h>
#include <stdint.h>

/* Abort the test program (never a host program: these are our own tests)
 * with the CUDA error's name and the call that failed. */
#define VSG_CK(call) vsg_check((call), #call, __FILE__, __LINE__)
void vsg_check(CUresult r, const char *what, const char *file, int line);

/* CLOCK_MONOTONIC in nanoseconds: comparable between processes. */
uint64_t vsg_now_ns(void);
void vsg_sleep_ms(unsigned ms);

/* cuInit, primary context of device 0 made current. */
CUcontext vsg_ctx_open(void);
void vsg_ctx_close(void);

/* Load the suite's fatbin: $VSG_FATBIN, else vsg_kernels.fatbin beside
 * the executable. */
CUmodule vsg_module_load(void);
CUfunction vsg_function(CUmodule mod, const char *name);

/* Nonzero if the driver reports ptr as managed memory. */
int vsg_is_managed(CUdeviceptr ptr);

/* Handshakes: create an empty file; wait until a file exists (polling
 * every 200 us), 0 on success, -1 after timeout_ms. */
void vsg_touch_file(const char *path);
int vsg_wait_file(const char *path, unsigned timeout_ms);
/* Write "text\n" to a file (replacing it). */
void vsg_write_text(const char *path, const char *text);

/* Value of "--name" in argv, or dflt. */
const char *vsg_arg(int argc, char **argv, const char *name, const char *dflt);
uint64_t vsg_arg_u64(int argc, char **argv, const char *name, uint64_t dflt);

int vsg_cmp_u64(const void *a, const void *b);
int vsg_cmp_double(const void *a, const void *b);

#endif
