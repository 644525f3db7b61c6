/*
 * The top of the shim: the one-time init that loads the real driver and
 * wires the layers together (the gate gets the CUDA operations and the
 * client's `wanted` event, the client gets the memory layer's callbacks),
 * and the exit and fork handlers that call each layer's own.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "client.h"
#include "gate.h"
#include "gate_ctl.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "mem_cache.h"
#include "mem_stage.h"
#include "mem_state.h"
#include "pcopy.h"
#include "shim.h"
#include "shim_env.h"
#include "shim_guard.h"
#include "shim_libc.h"
#include "shim_node.h"
#include "shim_ops.h"

/* VSHARE_LIBCUDA, default libcuda.so.1. */
static const char *shim_libcuda = "libcuda.so.1";

static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
static int shim_ready;

/* How the gate tells the client that a thread waits (gate_ctl.h). */
static const struct gate_events shim_gate_events = {
	.wanted = client_wanted,
};

/* Logging is set up before anything else can log: it reads one variable
 * and writes nothing, so a program that never uses CUDA is unaffected (a
 * bad value is reported by the init). */
__attribute__((constructor)) static void shim_log_setup(void)
{
	log_init("vshare", (enum log_level)
		 shim_setting_quiet(SET_LOG_LEVEL).u);
}

static void shim_read_conf(void)
{
	/* The level applies from load (above); it is read again only to
	 * report a bad value, which waits until the program uses CUDA. */
	(void)shim_setting(SET_LOG_LEVEL);
	/* The node's settings first: the environment may only make them
	 * stricter. */
	shim_node_read();
	mem_conf_read();
	shim_libcuda = shim_setting(SET_LIBCUDA).s;
}

static void *shim_lookup(void *handle, const char *name)
{
	return shim_dlsym_real(handle, name);
}

/* The child of a fork starts with no shim state that refers to the
 * parent's CUDA objects: CUDA itself is not usable in it until it
 * initializes again, and it must not inherit the scheduler connection.
 * No CUDA call here. */
static void shim_atfork_child(void)
{
	mem_atfork_child();     /* every store of the memory layer */
	gate_atfork_child();
	client_atfork_child();
}

/* Exit: the atexit handler registered at init runs before the
 * destructors and before every handler registered earlier; the
 * destructor covers an unload by dlclose. The gate opens for good first,
 * so no thread stays blocked on a gate that the stopping client would
 * never open; each runs once. */
/* What the memory half did, at info level: enough to see whether a
 * program's stream-ordered memory is reused and its copies staged. */
static void log_mem_summary(void)
{
	static int said;
	struct mem_cache_stats c;
	struct mem_stage_stats st;

	if (log_get_level() < LOG_LVL_INFO || __atomic_exchange_n(&said, 1,
							      __ATOMIC_RELAXED))
		return;
	mem_cache_stats(&c);
	mem_stage_stats(&st);
	log_info("stream-ordered memory: %llu allocations served again on "
		 "the same stream, %llu on another, %llu new; %llu frees "
		 "kept, %llu not kept",
		 (unsigned long long)c.hits_same, (unsigned long long)c.hits_other,
		 (unsigned long long)c.misses, (unsigned long long)c.puts,
		 (unsigned long long)c.refused);
	log_info("copies staged through pinned buffers: %llu to the GPU, "
		 "%llu from it, %llu MiB; %d copy helper threads",
		 (unsigned long long)st.htod, (unsigned long long)st.dtoh,
		 (unsigned long long)(st.bytes >> 20), pcopy_helpers());
}

static void shim_atexit(void)
{
	int outer = shim_guard_enter();

	log_mem_summary();
	gate_shutdown();
	client_stop();
	if (outer)
		shim_guard_leave();
}

__attribute__((destructor)) static void shim_fini(void)
{
	if (__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE))
		shim_atexit();
}

static void shim_init(void)
{
	void *handle;
	int found;

	shim_guard_init_begin();
	shim_read_conf();
	handle = dlopen(shim_libcuda, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		/* The program may have loaded a driver under another name:
		 * take whatever the global scope after the shim provides. */
		log_debug("dlopen(%s): %s", shim_libcuda, dlerror());
		handle = RTLD_NEXT;
	}
	found = hook_resolve_all(shim_lookup, handle);
	if (found == 0 || hook_real_load(HK_cuGetProcAddress_v2) == NULL)
		log_error("cannot load the CUDA driver (%s): CUDA calls fail "
			  "with CUDA_ERROR_NOT_INITIALIZED", shim_libcuda);
	pthread_atfork(NULL, NULL, shim_atfork_child);
	gate_init(&shim_gate_ops, &shim_gate_events);
	client_init(&shim_client_cbs);
	atexit(shim_atexit);
	log_debug("initialized: %d driver symbols, convert=%d", found,
		  mem_conf.convert);
	__atomic_store_n(&shim_ready, 1, __ATOMIC_RELEASE);
	shim_guard_init_end();
}

void shim_ensure_init(void)
{
	if (__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE) ||
	    shim_guard_initializing())
		return;
	shim_guard_depth_add(1);
	pthread_once(&shim_once, shim_init);
	shim_guard_depth_add(-1);
}

void *shim_real(int id)
{
	shim_ensure_init();
	return hook_real_load((enum hook_id)id);
}

CUresult shim_missing(const char *sym)
{
	log_once(LOG_LVL_ERROR, "%s: the real CUDA driver function is not "
		 "available (driver %s not loaded?)", sym, shim_libcuda);
	return CUDA_ERROR_NOT_INITIALIZED;
}
