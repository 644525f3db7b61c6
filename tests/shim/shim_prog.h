/* Shared by the parts of shim_prog. */
#ifndef VSHARE_SHIM_PROG_H
#define VSHARE_SHIM_PROG_H

#include <cuda.h>
#include <pthread.h>

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

/* A stream held still until the test lets it go (cuStreamWaitValue32 on
 * a word of the test's): what is queued behind the hold cannot have run,
 * however slow the machine, so "the call returned while the stream was
 * still held" says that the call did not wait for its stream. A watchdog
 * lets the stream go after HOLD_WATCHDOG_S, so a call that waits for the
 * stream fails the test instead of hanging it. */
#ifndef HOLD_WATCHDOG_S
#define HOLD_WATCHDOG_S 60
#endif
struct hold {
	CUdeviceptr word;
	pthread_t watchdog;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int released;           /* by the test */
	int fired;              /* by the watchdog */
	int held_at_release;    /* the test let it go before the watchdog */
};
void hold_stream(struct hold *h, CUstream s);
/* Let the stream go (from any thread, no CUDA call); 1 when it was
 * still held (the watchdog had not fired). */
int hold_let_go(struct hold *h);
/* Let the stream go if not yet, wait for it and free the word (on the
 * thread whose stream it is); 1 when the first let-go found it held. */
int hold_release(struct hold *h, CUstream s);

int check_dlsym(void);
int check_procaddr(void);
int check_procaddr_legacy(void);
int check_async_free(void);
int check_capture(void);
int check_gated(void);
int check_async_cache(void);
int check_async_cache_limit(void);
int check_async_cache_threads(void);
int check_async_chain(void);
int check_async_capture(void);
int check_stage(void);
int check_stage_off(void);
int check_stage_fork(void);
int check_start_fail(void);

#endif
