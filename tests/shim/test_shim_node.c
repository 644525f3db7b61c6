/* Unit tests of the node's client configuration (util/shim_node.c): what
 * is trusted, how lines parse, and that every doubt binds as the
 * strictest setting. Files live in a mkdtemp folder the test removes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "shim_node.h"
#include "vshare/proto.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/vs-node-XXXXXX");
	if (mkdtemp(dir) == NULL || chmod(dir, 0755) != 0)
		return -1;
	snprintf(path, sizeof(path), "%s/client.conf", dir);
	return 0;
}

static int teardown(void **state)
{
	char link[160];

	(void)state;
	snprintf(link, sizeof(link), "%s/real.conf", dir);
	unlink(path);
	unlink(link);
	chmod(dir, 0755);
	return rmdir(dir);
}

static void write_file(const char *p, const char *text, mode_t mode)
{
	FILE *f;

	unlink(p);
	f = fopen(p, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(p, mode), 0);
}

static void assert_strict(const struct shim_node *n)
{
	assert_int_equal(n->loaded, 1);
	assert_int_equal(n->strict, 1);
	assert_int_equal(n->require, 1);
	assert_int_equal(n->mem_limit, SHIM_NODE_MEM_REFUSE);
	assert_string_equal(n->socket, "");
}

static void test_no_file(void **state)
{
	struct shim_node n;

	(void)state;
	assert_int_equal(shim_node_load(path, getuid(), &n), 1);
	assert_int_equal(n.loaded, 0);
	assert_int_equal(n.require, -1);
	assert_int_equal(n.mem_limit, 0);
}

static void test_parse(void **state)
{
	struct shim_node n;

	(void)state;
	write_file(path, "# the admin's node\r\n"
		   "  socket = /run/x/s.sock \r\n"
		   "\r\n"
		   "\t# indented comment\n"
		   "require_scheduler=yes\r\n"
		   "mem_limit = 8G", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.loaded, 1);
	assert_int_equal(n.strict, 0);
	assert_string_equal(n.socket, "/run/x/s.sock");
	assert_int_equal(n.require, 1);
	assert_int_equal(n.mem_limit, 8ull << 30);
}

/* A value that does not parse binds as the strictest; an unknown key or
 * a bad socket is only logged, and the other lines still apply. */
static void test_bad_values(void **state)
{
	struct shim_node n;

	(void)state;
	write_file(path, "require_scheduler = maybe\n"
		   "mem_limit = 8 gigs\n"
		   "socket = relative.sock\n"
		   "colour = blue\n"
		   "no equals sign\n", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.strict, 0);
	assert_int_equal(n.require, 1);
	assert_int_equal(n.mem_limit, SHIM_NODE_MEM_REFUSE);
	assert_string_equal(n.socket, "");
	write_file(path, "require_scheduler = no\nmem_limit = 0\n", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.require, 0);
	assert_int_equal(n.mem_limit, 0);
	/* VSHARE_MEM_LIMIT's grammar: no unit below 1 MiB is a unit left
	 * out, which binds as the strictest too; bytes said so, or 1 MiB
	 * and more, stay bytes. */
	write_file(path, "mem_limit = 8\n", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.mem_limit, SHIM_NODE_MEM_REFUSE);
	write_file(path, "mem_limit = 8B\n", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.mem_limit, 8);
	write_file(path, "mem_limit = 1048576\n", 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.mem_limit, 1048576);
}

static void test_untrusted_owner_mode(void **state)
{
	struct shim_node n;

	(void)state;
	write_file(path, "mem_limit = 8G\n", 0664);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
	write_file(path, "mem_limit = 8G\n", 0646);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
	write_file(path, "mem_limit = 8G\n", 0644);
	assert_int_equal(shim_node_load(path, getuid() + 1, &n), -1);
	assert_strict(&n);
	/* A folder others may write: the file could be replaced. */
	assert_int_equal(chmod(dir, 0777), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
	assert_int_equal(chmod(dir, 0755), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
}

static void test_symlink(void **state)
{
	char real[160];
	struct shim_node n;

	(void)state;
	snprintf(real, sizeof(real), "%s/real.conf", dir);
	write_file(real, "mem_limit = 8G\n", 0644);
	unlink(path);
	assert_int_equal(symlink(real, path), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
}

static void test_not_regular(void **state)
{
	struct shim_node n;

	(void)state;
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
	assert_int_equal(rmdir(path), 0);
}

/* 8 KiB is read whole; one byte more is refused, not cut. */
static void test_oversize(void **state)
{
	static char text[8192 + 2];
	struct shim_node n;

	(void)state;
	memset(text, '#', 8192);
	memcpy(text, "mem_limit = 1G\n", 15);
	text[8192] = '\0';
	write_file(path, text, 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), 0);
	assert_int_equal(n.mem_limit, 1ull << 30);
	text[8192] = '#';
	text[8193] = '\0';
	write_file(path, text, 0644);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
}

/* A NUL byte would end the text there, and the lines after it (a
 * mem_limit) would not bind: the file is refused whole, wherever the
 * byte is. */
static void test_nul_byte(void **state)
{
	static const char text[] = "socket = /run/x.sock\n\0mem_limit = 1G\n";
	static const char tail[] = "mem_limit = 1G\n\0";
	struct shim_node n;
	FILE *f;

	(void)state;
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(text, 1, sizeof(text) - 1, f), sizeof(text) - 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
	/* One at the very end: the file is still not text. */
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(tail, 1, sizeof(tail) - 1, f), sizeof(tail) - 1);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(shim_node_load(path, getuid(), &n), -1);
	assert_strict(&n);
}

/* In a new user namespace with no mapping, the file shows as the
 * overflow uid: its settings still apply (and an error says why they
 * cannot be trusted), rather than the file being ignored. */
static void test_user_namespace(void **state)
{
	struct shim_node n;
	int st;
	pid_t pid;

	(void)state;
	write_file(path, "require_scheduler = yes\nmem_limit = 2G\n", 0644);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWUSER) != 0)
			_exit(77);
		if (shim_node_load(path, getuid(), &n) != 0)
			_exit(1);
		_exit(n.require == 1 && n.mem_limit == 2ull << 30 &&
		      !n.strict ? 0 : 2);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_no_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_values, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_untrusted_owner_mode,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_symlink, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_regular, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_oversize, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nul_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(test_user_namespace, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
