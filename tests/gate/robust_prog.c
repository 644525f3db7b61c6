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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

static const struct {
	const char *name;
	int (*fn)(void);
} checks[] = {
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
