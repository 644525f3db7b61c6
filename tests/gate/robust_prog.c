/*
 * Robustness checks of the shim inside a host program, run as
 * `robust_prog <check>` with libvshare.so preloaded on the CUDA test
 * driver (tests/gate/robust.py sets up the scheduler side). Each check
 * does something a real program may do to the shim's resources or
 * threads and asserts that the program is unaffected.
 * Exit status 0 = pass; a failure prints the line.
 */
#include <cuda.h>
#include <fcntl.h>
#include <pthread.h>
#include <dlfcn.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FAIL(...) do {                                                  \
	fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);            \
	fprintf(stderr, __VA_ARGS__);                                   \
	fputc('\n', stderr);                                            \
	exit(1);                                                        \
} while (0)
#define CK(call) do {                                                   \
	CUresult ck_ = (call);                                          \
	if (ck_ != CUDA_SUCCESS)                                        \
		FAIL("%s: CUDA error %d", #call, (int)ck_);             \
} while (0)
#define CHECK(cond) do { if (!(cond)) FAIL("%s", #cond); } while (0)

static CUfunction sleep_fn;
static CUcontext ctx;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static double cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3 +
	       ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3;
}

static void setup(void)
{
	CUdevice d;
	CUmodule m;

	CK(cuInit(0));
	CK(cuDeviceGet(&d, 0));
	CK(cuDevicePrimaryCtxRetain(&ctx, d));
	CK(cuCtxSetCurrent(ctx));
	CK(cuModuleLoadData(&m, "// any image"));
	CK(cuModuleGetFunction(&sleep_fn, m, "vs_sleep"));
}

static void launch_sleep(unsigned long long us)
{
	void *params[] = { &us };

	CK(cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
}

/* A few allocations: each changes the footprint and wakes the client
 * thread. */
static void churn_alloc(int n)
{
	for (int i = 0; i < n; i++) {
		CUdeviceptr p;

		CK(cuMemAlloc(&p, (size_t)(i + 1) << 20));
		launch_sleep(10);
		CK(cuCtxSynchronize());
		CK(cuMemFree(p));
	}
}

/*
 * The host program closes every descriptor above 2 behind the shim's
 * back (as daemons and some launchers do), then opens files of its own,
 * which get the numbers the shim's socket and eventfd had. The shim must
 * neither write into nor read from those files, nor spin on the closed
 * descriptors, and CUDA keeps working.
 */
#define NFILES 16

static int check_closefds(void)
{
	char path[NFILES][64];
	int fd[NFILES];
	double c0, used;
	struct stat st;

	setup();
	launch_sleep(10);
	CK(cuCtxSynchronize());
	sleep_ms(200);        /* the client thread connected (or gave up) */
	for (int i = 3; i < 1024; i++)
		close(i);
	for (int i = 0; i < NFILES; i++) {
		snprintf(path[i], sizeof(path[i]), "/tmp/vs-robust-%d-%d",
			 (int)getpid(), i);
		fd[i] = open(path[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		CHECK(fd[i] >= 0);
		unlink(path[i]);
		/* Something to read: a shim that reads from the file moves
		 * its offset. */
		CHECK(write(fd[i], "0123456789abcdef", 16) == 16);
		CHECK(lseek(fd[i], 0, SEEK_SET) == 0);
	}
	churn_alloc(8);
	c0 = cpu_ms();
	sleep_ms(500);
	used = cpu_ms() - c0;
	churn_alloc(8);
	for (int i = 0; i < NFILES; i++) {
		CHECK(fstat(fd[i], &st) == 0);
		if (st.st_size != 16)
			FAIL("file on fd %d has %lld bytes, not 16", fd[i],
			     (long long)st.st_size);
		if (lseek(fd[i], 0, SEEK_CUR) != 0)
			FAIL("file on fd %d was read from", fd[i]);
	}
	if (used > 200)
		FAIL("%.0f ms of CPU in 500 ms of idle: the shim spins", used);
	return 0;
}

/* A thread whose launch waits at the gate. */
static int launched;

static void *launcher(void *arg)
{
	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	launch_sleep(10);
	__atomic_store_n(&launched, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *exiter(void *arg)
{
	sleep_ms((long)(size_t)arg);
	exit(0);
}

/* The program exits while another thread waits at the gate for a grant
 * that does not come: exit must not hang (the caller checks the time). */
static int check_exit_waiting(void)
{
	pthread_t t;

	setup();
	CHECK(pthread_create(&t, NULL, launcher, NULL) == 0);
	sleep_ms(300);
	exit(0);
}

/* The same, with exit called from another thread while the main thread
 * waits at the gate. */
static int check_exit_thread(void)
{
	pthread_t t;

	setup();
	CHECK(pthread_create(&t, NULL, exiter, (void *)(size_t)300) == 0);
	launch_sleep(10);
	return 0;
}

/* Plain work; the caller sets the scheduler up (or not) and the limits. */
static int check_work(void)
{
	setup();
	for (int i = 0; i < 5; i++)
		launch_sleep(1000);
	CK(cuCtxSynchronize());
	churn_alloc(2);
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Work, then small steps of work for a few seconds, none of which may
 * wait long: the client's attempts to reach a scheduler that does not
 * answer must not stop the program each time. */
static int check_steady(void)
{
	double worst = 0;

	check_work();
	for (int i = 0; i < 30; i++) {
		double t0 = now_ms(), dt;

		launch_sleep(1000);
		CK(cuCtxSynchronize());
		dt = now_ms() - t0;
		worst = dt > worst ? dt : worst;
		sleep_ms(100);
	}
	if (worst > 500)
		FAIL("a step of work waited %.0f ms", worst);
	return 0;
}

static int stop;

/* Launches and allocations until stop: the gate's slow and fast paths,
 * the client's locks, the registry's. */
static void *busy(void *arg)
{
	(void)arg;
	CK(cuCtxSetCurrent(ctx));
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		CUdeviceptr p;

		launch_sleep(100);
		CK(cuMemAlloc(&p, 1 << 16));
		CK(cuMemFree(p));
	}
	return NULL;
}

static void start_busy(pthread_t *t, int n)
{
	for (int i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, busy, NULL) == 0);
}

static void stop_busy(pthread_t *t, int n)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	CK(cuCtxSynchronize());
}

static int wait_child(pid_t pid, int timeout_ms)
{
	int st;

	for (int waited = 0; waited < timeout_ms; waited += 5) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		sleep_ms(5);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

/* fork while other threads are inside the gate, wait at it, or hold the
 * client's and the registry's locks (drops arrive: the caller runs two of
 * these under a short quantum). The child makes CUDA calls (which the
 * driver refuses there) and leaves through exit: it must not hang. */
static int check_fork_busy(void)
{
	pthread_t t[8];

	setup();
	start_busy(t, 8);
	for (int i = 0; i < 30; i++) {
		pid_t pid = fork();
		int rc;

		CHECK(pid >= 0);
		if (pid == 0) {
			CUdeviceptr p;
			unsigned long long us = 10;
			void *params[] = { &us };

			(void)cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, NULL,
					     params, NULL);
			if (cuMemAlloc(&p, 4096) == CUDA_SUCCESS)
				(void)cuMemFree(p);
			exit(0);
		}
		rc = wait_child(pid, 5000);
		if (rc != 0)
			FAIL("child %d %s (%d)", i, rc < 0 ? "hung" : "failed", rc);
		sleep_ms(20);
	}
	stop_busy(t, 8);
	return 0;
}

/* posix_spawn (vfork and exec, no fork handlers) from a process whose
 * client is connected: the child inherits none of the shim's
 * descriptors. */
static int check_spawn_fds(void)
{
	char *argv[] = { "/bin/sh", "-c", "ls -l /proc/$$/fd", NULL };
	posix_spawn_file_actions_t fa;
	char out[8192];
	size_t len = 0;
	ssize_t r;
	int pfd[2], st;
	pid_t pid;

	setup();
	launch_sleep(10);
	CK(cuCtxSynchronize());
	sleep_ms(100);
	CHECK(pipe(pfd) == 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	CHECK(posix_spawn(&pid, argv[0], &fa, NULL, argv, NULL) == 0);
	close(pfd[1]);
	while (len < sizeof(out) - 1 &&
	       (r = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)r;
	out[len] = '\0';
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	      WEXITSTATUS(st) == 0);
	if (strstr(out, "socket:") != NULL || strstr(out, "eventfd") != NULL)
		FAIL("the spawned child inherited the shim's descriptors:\n%s", out);
	launch_sleep(10);
	CK(cuCtxSynchronize());
	return 0;
}

/* CUDA from an atexit handler that runs after the shim's (registered
 * before CUDA was first used) and from a destructor. */

static int late_on;

static void late_work(const char *where)
{
	unsigned long long us = 10;
	void *params[] = { &us };
	CUdeviceptr p;

	if (!late_on)
		return;
	if (cuCtxSetCurrent(ctx) != CUDA_SUCCESS ||
	    cuLaunchKernel(sleep_fn, 1, 1, 1, 1, 1, 1, 0, NULL, params,
			   NULL) != CUDA_SUCCESS ||
	    cuCtxSynchronize() != CUDA_SUCCESS ||
	    cuMemAlloc(&p, 4096) != CUDA_SUCCESS || cuMemFree(p) != CUDA_SUCCESS) {
		fprintf(stderr, "FAIL: CUDA in %s\n", where);
		_exit(1);
	}
}

static void late_atexit(void)
{
	late_work("an atexit handler");
}

__attribute__((destructor)) static void late_dtor(void)
{
	late_work("a destructor");
}

static int check_atexit_cuda(void)
{
	atexit(late_atexit);
	setup();
	late_on = 1;
	launch_sleep(10);
	CK(cuCtxSynchronize());
	return 0;
}

/* Signals keep arriving at a thread that waits at the gate (no
 * SA_RESTART): the wait goes on, the launch succeeds, nothing dies. */
static int sigs;

static void on_alarm(int sig)
{
	(void)sig;
	__atomic_add_fetch(&sigs, 1, __ATOMIC_RELAXED);
}

static int check_signals(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 5000 }, { 0, 5000 } };

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
	check_steady();
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	CHECK(__atomic_load_n(&sigs, __ATOMIC_RELAXED) > 10);
	return 0;
}

/* The program closes its own handle of the driver and opens it again. */
static int check_dlclose(void)
{
	for (int i = 0; i < 3; i++) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		CUresult (*init)(unsigned int);

		CHECK(h != NULL);
		*(void **)&init = dlsym(h, "cuInit");
		CHECK(init != NULL && init(0) == CUDA_SUCCESS);
		CHECK(dlclose(h) == 0);
	}
	check_work();
	return 0;
}

/* A long kernel, then exit while the client thread, asked to release
 * (someone waits), synchronizes with that kernel. */
static int check_exit_releasing(void)
{
	setup();
	launch_sleep(3000000);
	sleep_ms(600);
	exit(0);
}

/* CUDA from a constructor, before main (and, for a library loaded early,
 * before the shim was used at all), through dlopen and dlsym. */
static int ctor_rc = -1;

__attribute__((constructor)) static void early_cuda(void)
{
	CUresult (*init)(unsigned int);
	CUresult (*get)(CUdevice *, int);
	void *h;
	CUdevice d;

	if (getenv("ROBUST_CTOR") == NULL)
		return;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return;
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&get = dlsym(h, "cuDeviceGet");
	if (init != NULL && get != NULL && init(0) == CUDA_SUCCESS &&
	    get(&d, 0) == CUDA_SUCCESS)
		ctor_rc = 0;
}

static int check_ctor(void)
{
	CHECK(ctor_rc == 0);
	return check_work();
}

/* The program cancels a thread that waits at the gate (deferred
 * cancellation, where a condition wait is a cancellation point): the
 * others, and the shim's own thread, must not find the gate's lock held
 * by a thread that is gone. */
static int check_cancel(void)
{
	pthread_t t;
	double t0;

	setup();
	CHECK(pthread_create(&t, NULL, launcher, NULL) == 0);
	sleep_ms(300);
	CHECK(pthread_cancel(t) == 0);
	t0 = now_ms();
	launch_sleep(10);
	CK(cuCtxSynchronize());
	CHECK(pthread_join(t, NULL) == 0);
	if (now_ms() - t0 > 5000)
		FAIL("work after the cancel waited %.0f ms", now_ms() - t0);
	check_work();
	return 0;
}

static const struct {
	const char *name;
	int (*fn)(void);
} checks[] = {
	{ "cancel", check_cancel },
	{ "ctor", check_ctor },
	{ "exit_releasing", check_exit_releasing },
	{ "fork_busy", check_fork_busy },
	{ "spawn_fds", check_spawn_fds },
	{ "atexit_cuda", check_atexit_cuda },
	{ "signals", check_signals },
	{ "dlclose", check_dlclose },
	{ "steady", check_steady },
	{ "closefds", check_closefds },
	{ "exit_waiting", check_exit_waiting },
	{ "exit_thread", check_exit_thread },
	{ "work", check_work },
};

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CHECK\n", argv[0]);
		return 2;
	}
	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (strcmp(argv[1], checks[i].name) == 0)
			return checks[i].fn();
	fprintf(stderr, "unknown check %s\n", argv[1]);
	return 2;
}
