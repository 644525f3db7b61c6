/*
 * The scheduler client that cannot start (src/libvshare/client/client.c:
 * client_start): with no descriptor left for its wake-up socket pair the
 * program runs unshared, and its allocations do not wait for a policy
 * that no thread will ever hear (client_policy_wait would otherwise wait
 * its whole 4.1 s at every allocation). A fork child then settles on its
 * own.
 */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shim_prog.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every descriptor up to a low limit taken; the lowest few returned by
 * give_back. */
static int fds[64], n_fds;

static void exhaust_fds(void)
{
	struct rlimit rl = { 64, 64 };
	int fd;

	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		fail_at(__FILE__, __LINE__, "setrlimit", errno);
	while (n_fds < 64 && (fd = dup(2)) >= 0)
		fds[n_fds++] = fd;
}

static void give_back(void)
{
	while (n_fds > 0)
		close(fds[--n_fds]);
}

/* The child's driver refuses CUDA (as the real one does): there only the
 * answer's time counts. */
static int alloc_fast(const char *who, int child)
{
	CUdeviceptr p;
	double t0 = now_s(), dt;
	CUresult r = cuMemAlloc(&p, 1 << 20);

	dt = now_s() - t0;
	if (!child) {
		CK(r);
		CK(cuMemFree(p));
	}
	if (dt > 1.0) {
		fprintf(stderr, "%s: the allocation waited %.1f s\n", who, dt);
		return 1;
	}
	return 0;
}

int check_start_fail(void)
{
	CUdevice d;
	CUcontext c;
	pid_t pid;
	int st;

	CK(cuInit(0));
	CK(cuDeviceGet(&d, 0));
	/* One descriptor left: enough for the files the shim's init reads
	 * one at a time, not for the socket pair. Opening the context
	 * starts the client thread, which fails. */
	exhaust_fds();
	close(fds[--n_fds]);
	CK(cuDevicePrimaryCtxRetain(&c, d));
	give_back();
	CK(cuCtxSetCurrent(c));
	for (int i = 0; i < 3; i++)
		if (alloc_fast("parent", 0) != 0)
			return 1;
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		_exit(alloc_fast("child", 1));
	CHECK(waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return 0;
}
