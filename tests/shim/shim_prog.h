/* Shared by the parts of shim_prog. */
#ifndef VSHARE_SHIM_PROG_H
#define VSHARE_SHIM_PROG_H

#include <cuda.h>

struct hooked {
	const char *name, *base, *kind;
	int since, per_thread;
};

extern const struct hooked hooked[];
extern const int n_hooked;

void fail_at(const char *file, int line, const char *what, int code)
	__attribute__((noreturn));

#define CK(call) do {                                           \
	CUresult ck_ = (call);                                  \
	if (ck_ != CUDA_SUCCESS)                                \
		fail_at(__FILE__, __LINE__, #call, (int)ck_);             \
} while (0)
#define CHECK(cond) do {                                        \
	if (!(cond))                                            \
		fail_at(__FILE__, __LINE__, #cond, 0);                    \
} while (0)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned,
			      unsigned, unsigned, unsigned, unsigned,
			      CUstream, void **, void **);

int in_shim(const void *p, const char **name);
CUcontext setup_ctx(void);
CUfunction kernel(const char *name);
int is_managed(CUdeviceptr p);
int alive(CUdeviceptr p);
void fill_and_check(launch_fn launch, CUstream s, float v);

int check_dlsym(void);
int check_procaddr(void);
int check_async_free(void);
int check_capture(void);
int check_gated(void);
int check_async_cache(void);
int check_async_cache_limit(void);
int check_async_cache_threads(void);
int check_async_chain(void);
int check_stage(void);
int check_stage_off(void);
int check_stage_fork(void);
int check_start_fail(void);

#endif
