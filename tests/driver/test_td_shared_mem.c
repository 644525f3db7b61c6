/*
 * VSHARE_TD_SHARED_MEM: processes share each device's memory as on a real
 * GPU. Plain allocations of two processes that do not fit together fail;
 * managed ones do not count; a dead process's memory comes back.
 * CTest sets VSHARE_TD_MEM=1G; the test sets VSHARE_TD_SHARED_MEM itself.
 */
#include "tdt.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MB (1ull << 20)

static char dir[] = "/tmp/vs-td-shm-XXXXXX";

/* Runs fn(arg) in a child process (the parent never initialises the
 * driver); returns the child's exit status. */
static int in_child(int (*fn)(int), int arg)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		tdt_ctx(0);
		_exit(fn(arg));
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 102;
}

/* Holds 700 MB of device memory until told to go, then frees it. */
static int holder(int release_fd)
{
	CUdeviceptr p;
	char b;

	if (cuMemAlloc_v2(&p, 700 * MB) != CUDA_SUCCESS)
		return 1;
	if (write(release_fd, "h", 1) != 1)	/* "I hold it" */
		return 2;
	if (read(release_fd, &b, 1) != 1)
		return 3;
	return cuMemFree_v2(p) == CUDA_SUCCESS ? 0 : 4;
}

/* What a second process sees while the holder holds its memory. */
static int second(int unused)
{
	CUdeviceptr p, m;
	size_t free_b, total;

	(void)unused;
	if (cuMemGetInfo_v2(&free_b, &total) != CUDA_SUCCESS ||
	    free_b != total - 700 * MB)
		return 1;
	if (cuMemAlloc_v2(&p, 700 * MB) != CUDA_ERROR_OUT_OF_MEMORY)
		return 2;	/* does not fit beside the holder's */
	if (cuMemAllocManaged(&m, 700 * MB, CU_MEM_ATTACH_GLOBAL) != CUDA_SUCCESS)
		return 3;	/* managed memory is not limited */
	if (cuMemAlloc_v2(&p, 300 * MB) != CUDA_SUCCESS)
		return 4;	/* what is left is usable */
	return 0;
}

static int after(int expect_mb)
{
	CUdeviceptr p;
	size_t free_b, total;

	if (cuMemGetInfo_v2(&free_b, &total) != CUDA_SUCCESS ||
	    free_b != total)
		return 1;
	return cuMemAlloc_v2(&p, (size_t)expect_mb * MB) == CUDA_SUCCESS ? 0 : 2;
}

static int leaker(int unused)
{
	CUdeviceptr p;

	(void)unused;
	return cuMemAlloc_v2(&p, 900 * MB) == CUDA_SUCCESS ? 0 : 1;	/* exits holding it */
}

static void test_two_processes_share_memory(void **state)
{
	int sv[2];
	pid_t h;
	int st;
	char b;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	h = fork();
	assert_true(h >= 0);
	if (h == 0) {
		close(sv[0]);
		tdt_ctx(0);
		_exit(holder(sv[1]));
	}
	close(sv[1]);
	assert_int_equal(read(sv[0], &b, 1), 1);	/* the holder holds */
	assert_int_equal(in_child(second, 0), 0);
	assert_int_equal(write(sv[0], "r", 1), 1);	/* release */
	assert_int_equal(waitpid(h, &st, 0), h);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(sv[0]);
	assert_int_equal(in_child(after, 1000), 0);
}

static void test_dead_process_memory_returns(void **state)
{
	(void)state;
	assert_int_equal(in_child(leaker, 0), 0);
	assert_int_equal(in_child(after, 1000), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_processes_share_memory),
		cmocka_unit_test(test_dead_process_memory_returns),
	};
	char cmd[128];
	int rc;

	if (!mkdtemp(dir))
		return 2;
	setenv("VSHARE_TD_SHARED_MEM", dir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		rc = rc ? rc : 2;
	return rc;
}
