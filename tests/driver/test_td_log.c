/*
 * The execution log shared by several processes, and execlog.py reading
 * it: concurrent processes' kernels overlap, sequential ones do not;
 * prefetches are logged with their bytes and destination.
 * Usage: test_td_log /path/to/execlog.py
 */
#include "tdt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *execlog_py;
static char dir[] = "/tmp/vs-td-log-XXXXXX";
static char log_path[256];

/* Child body: kernels, a copy and prefetches, then exit. */
static void child_work(int go_fd)
{
	CUstream s;
	CUdeviceptr m;
	char b;
	static char host[1 << 16];
	CUmemLocation loc = { .type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0 };
	int i, ok = 1;

	ok &= cuInit(0) == CUDA_SUCCESS;
	tdt_ctx(0);
	ok &= cuStreamCreate(&s, CU_STREAM_NON_BLOCKING) == CUDA_SUCCESS;
	ok &= cuMemAllocManaged(&m, sizeof(host), CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS;
	if (go_fd >= 0 && read(go_fd, &b, 1) != 1)
		ok = 0;
	for (i = 0; i < 3; i++)
		ok &= tdt_sleep(s, 60000) == CUDA_SUCCESS;
	ok &= cuMemcpyHtoDAsync_v2(m, host, sizeof(host), s) == CUDA_SUCCESS;
	ok &= cuMemPrefetchAsync_v2(m, sizeof(host), loc, 0, s) == CUDA_SUCCESS;
	ok &= cuMemPrefetchAsync(m, 4096, CU_DEVICE_CPU, s) == CUDA_SUCCESS;
	ok &= cuStreamSynchronize(s) == CUDA_SUCCESS;
	_exit(ok ? 0 : 1);
}

static pid_t spawn(int go_fd)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		child_work(go_fd);
	return pid;
}

static void reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static int run_execlog(const char *args)
{
	char cmd[1024];
	int st;

	snprintf(cmd, sizeof(cmd), "python3 %s %s >/dev/null", execlog_py, args);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int setup(void **state)
{
	(void)state;
	snprintf(log_path, sizeof(log_path), "%s/exec.log", dir);
	unlink(log_path);
	setenv("VSHARE_TD_LOG", log_path, 1);
	return 0;
}

static void test_concurrent_processes_overlap(void **state)
{
	int go[2];
	pid_t a, b;
	char args[512];
	FILE *f;
	char line[512];
	int lines = 0, prefetch = 0;

	(void)state;
	assert_int_equal(pipe(go), 0);
	a = spawn(go[0]);
	b = spawn(go[0]);
	assert_int_equal(write(go[1], "xx", 2), 2);	/* start both at once */
	reap(a);
	reap(b);
	close(go[0]);
	close(go[1]);
	f = fopen(log_path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long t0, t1, bytes, sid;
		int pid, dev;
		char kind[32], name[64];

		assert_int_equal(sscanf(line, "%llu %llu %d %d %llu %31s %63s %llu",
					&t0, &t1, &pid, &dev, &sid, kind, name,
					&bytes), 8);
		assert_true(t0 <= t1);
		assert_true(pid == a || pid == b);
		if (strcmp(kind, "prefetch") == 0) {
			prefetch++;
			assert_true((strcmp(name, "device0") == 0 && bytes == 65536) ||
				    (strcmp(name, "host") == 0 && bytes == 4096));
		}
		lines++;
	}
	fclose(f);
	assert_int_equal(lines, 2 * (3 + 1 + 2));
	assert_int_equal(prefetch, 4);
	snprintf(args, sizeof(args), "overlaps %s --pids %d %d", log_path, a, b);
	assert_int_equal(run_execlog(args), 0);
	snprintf(args, sizeof(args), "serialized %s", log_path);
	assert_int_equal(run_execlog(args), 1);
	snprintf(args, sizeof(args), "count %s --kind prefetch --min 4", log_path);
	assert_int_equal(run_execlog(args), 0);
	snprintf(args, sizeof(args), "count %s --kind prefetch --min 5", log_path);
	assert_int_equal(run_execlog(args), 1);
}

static void test_sequential_processes_serialized(void **state)
{
	pid_t a, b;
	char args[512];

	(void)state;
	a = spawn(-1);
	reap(a);
	b = spawn(-1);
	reap(b);
	snprintf(args, sizeof(args), "serialized %s --kind all", log_path);
	assert_int_equal(run_execlog(args), 0);
	snprintf(args, sizeof(args), "overlaps %s --pids %d %d", log_path, a, b);
	assert_int_equal(run_execlog(args), 1);
	snprintf(args, sizeof(args), "summary %s", log_path);
	assert_int_equal(run_execlog(args), 0);
}

static void test_fork_after_init(void **state)
{
	pid_t pid;
	int st;

	(void)state;
	tdt_ctx(0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)	/* the child of an initialised process cannot use CUDA */
		_exit(cuInit(0) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CK(cuCtxSynchronize());	/* the parent is unaffected */
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_concurrent_processes_overlap, setup),
		cmocka_unit_test_setup(test_sequential_processes_serialized, setup),
		cmocka_unit_test(test_fork_after_init),
	};
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: %s EXECLOG_PY\n", argv[0]);
		return 2;
	}
	execlog_py = argv[1];
	if (!mkdtemp(dir))
		return 2;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(log_path);
	rmdir(dir);
	return rc;
}
