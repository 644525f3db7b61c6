#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "ctx_track.h"
#include "gate.h"
#include "hooks.h"
#include "log.h"
#include "mem_alloc.h"
#include "shim.h"
#include "shim_env.h"
#include "shim_libc.h"
#include "shim_ops.h"

struct shim_conf shim_conf = { .convert = 1, .libcuda = "libcuda.so.1" };

static pthread_once_t shim_once = PTHREAD_ONCE_INIT;
static int shim_ready;
/* Initial-exec TLS: the shim is preloaded, so its few bytes come from the
 * static TLS block and each access is a plain load, not a call. */
#define SHIM_TLS __thread __attribute__((tls_model("initial-exec")))

static SHIM_TLS int shim_depth;
static SHIM_TLS int shim_initializing;

/* Logging is set up before anything else can log: it reads one variable
 * and writes nothing, so a program that never uses CUDA is unaffected (a
 * bad value is reported by the init). */
__attribute__((constructor)) static void shim_log_setup(void)
{
	const char *s = getenv("VSHARE_LOG_LEVEL");
	int lvl = s != NULL && *s != '\0' ? log_level_parse(s) : -1;

	log_init("vshare", lvl >= 0 ? (enum log_level)lvl : LOG_LVL_WARN);
}

static void shim_read_conf(void)
{
	const char *lvl = getenv("VSHARE_LOG_LEVEL");

	if (lvl != NULL && *lvl != '\0' && log_level_parse(lvl) < 0)
		log_warn("VSHARE_LOG_LEVEL=\"%s\" is not error, warn, info or "
			 "debug; using warn", lvl);
	shim_conf.convert = shim_env_bool("VSHARE_CONVERT", 1);
	shim_conf.allow_single_oversub =
		shim_env_bool("VSHARE_ALLOW_SINGLE_OVERSUB", 0);
	shim_conf.mem_limit = shim_env_size("VSHARE_MEM_LIMIT", 0);
	shim_conf.capacity = shim_env_size("VSHARE_CAPACITY", 0);
	shim_conf.libcuda = shim_env_str("VSHARE_LIBCUDA", "libcuda.so.1");
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
	mem_atfork_child();
	ctx_atfork_child();
	shim_ops_atfork_child();
	gate_atfork_child();
}

/* Exit: the atexit handler registered at init runs before the
 * destructors and before every handler registered earlier; the
 * destructor covers an unload by dlclose. gate_shutdown runs once. */
static void shim_atexit(void)
{
	int outer = shim_guard_enter();

	gate_shutdown();
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

	shim_initializing = 1;
	shim_read_conf();
	handle = dlopen(shim_conf.libcuda, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		/* The program may have loaded a driver under another name:
		 * take whatever the global scope after the shim provides. */
		log_debug("dlopen(%s): %s", shim_conf.libcuda, dlerror());
		handle = RTLD_NEXT;
	}
	found = hook_resolve_all(shim_lookup, handle);
	if (found == 0 || hook_real_load(HK_cuGetProcAddress_v2) == NULL)
		log_error("cannot load the CUDA driver (%s): CUDA calls fail "
			  "with CUDA_ERROR_NOT_INITIALIZED", shim_conf.libcuda);
	pthread_atfork(NULL, NULL, shim_atfork_child);
	gate_init(&shim_gate_ops);
	atexit(shim_atexit);
	log_debug("initialized: %d driver symbols, convert=%d", found,
		  shim_conf.convert);
	__atomic_store_n(&shim_ready, 1, __ATOMIC_RELEASE);
	shim_initializing = 0;
}

void shim_ensure_init(void)
{
	if (__atomic_load_n(&shim_ready, __ATOMIC_ACQUIRE) || shim_initializing)
		return;
	shim_depth++;
	pthread_once(&shim_once, shim_init);
	shim_depth--;
}

void *shim_real(int id)
{
	shim_ensure_init();
	return hook_real_load((enum hook_id)id);
}

int shim_guard_enter(void)
{
	if (shim_depth != 0 || shim_initializing)
		return 0;
	shim_depth = 1;
	return 1;
}

void shim_guard_leave(void)
{
	shim_depth = 0;
}

int shim_guard_active(void)
{
	return shim_depth > 0 || shim_initializing;
}

CUresult shim_missing(const char *sym)
{
	log_once(LOG_LVL_ERROR, "%s: the real CUDA driver function is not "
		 "available (driver %s not loaded?)", sym, shim_conf.libcuda);
	return CUDA_ERROR_NOT_INITIALIZED;
}
