/* The log's line prefix (src/common/log.c): sd-daemon priorities when
 * stderr is the journal's stream (JOURNAL_STREAM names its device and
 * inode), "name[pid]: " otherwise, and one line per write either way. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "log.h"

struct cap {
	char path[64];
	int fd, saved;
};

/* stderr becomes a fresh temporary file. */
static int cap_setup(void **state)
{
	struct cap *c = calloc(1, sizeof(*c));

	assert_non_null(c);
	strcpy(c->path, "/tmp/vshare-test-log-XXXXXX");
	c->fd = mkstemp(c->path);
	assert_true(c->fd >= 0);
	c->saved = dup(STDERR_FILENO);
	assert_true(dup2(c->fd, STDERR_FILENO) >= 0);
	unsetenv("JOURNAL_STREAM");
	*state = c;
	return 0;
}

static int cap_teardown(void **state)
{
	struct cap *c = *state;

	dup2(c->saved, STDERR_FILENO);
	close(c->saved);
	close(c->fd);
	unlink(c->path);
	unsetenv("JOURNAL_STREAM");
	free(c);
	return 0;
}

/* What stderr received since the last call. */
static void cap_read(struct cap *c, char *out, size_t n)
{
	ssize_t r;

	r = pread(c->fd, out, n - 1, 0);
	assert_true(r >= 0);
	out[r] = '\0';
	assert_int_equal(ftruncate(c->fd, 0), 0);
	assert_true(lseek(STDERR_FILENO, 0, SEEK_SET) == 0);
}

/* JOURNAL_STREAM as systemd writes it for the file now on stderr, or
 * for another inode of the same device. */
static void journal_is_stderr(int match)
{
	struct stat st;
	char v[64];

	assert_int_equal(fstat(STDERR_FILENO, &st), 0);
	snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
		 (unsigned long long)st.st_ino + (match ? 0 : 1));
	setenv("JOURNAL_STREAM", v, 1);
}

static void test_plain(void **state)
{
	struct cap *c = *state;
	char buf[512], want[128];

	log_init("vshare-test", LOG_LVL_INFO);
	log_warn("disk %d", 7);
	log_debug("not shown");
	cap_read(c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "vshare-test[%d]: warn: test_plain: disk 7\n",
		 (int)getpid());
	assert_string_equal(buf, want);
	assert_false(log_to_journal());
}

static void test_stderr_moved(void **state)
{
	struct cap *c = *state;
	char buf[512], want[128];
	int pipefd[2], saved;
	ssize_t r;

	/* The journal's stream at start; then the program puts a pipe on
	 * stderr (as ipykernel does): the pipe gets plain lines. */
	journal_is_stderr(1);
	log_init("vshare", LOG_LVL_WARN);
	assert_true(log_to_journal());
	assert_int_equal(pipe(pipefd), 0);
	saved = dup(STDERR_FILENO);
	dup2(pipefd[1], STDERR_FILENO);
	log_warn("moved");
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(pipefd[1]);
	r = read(pipefd[0], buf, sizeof(buf) - 1);
	close(pipefd[0]);
	assert_true(r > 0);
	buf[r] = '\0';
	snprintf(want, sizeof(want), "vshare[%d]: warn: test_stderr_moved: moved\n",
		 (int)getpid());
	assert_string_equal(buf, want);
	(void)c;
}

static void test_journal_priorities(void **state)
{
	struct cap *c = *state;
	char buf[512];

	/* The process's own name: the journal records it, not repeated. */
	journal_is_stderr(1);
	log_init(program_invocation_short_name, LOG_LVL_DEBUG);
	assert_true(log_to_journal());
	log_error("e");
	log_warn("w");
	log_info("i");
	log_debug("d");
	log_notice("n %s", "x");
	cap_read(c, buf, sizeof(buf));
	assert_string_equal(buf,
		"<3>error: test_journal_priorities: e\n"
		"<4>warn: test_journal_priorities: w\n"
		"<6>info: test_journal_priorities: i\n"
		"<7>debug: test_journal_priorities: d\n"
		"<5>n x\n");
}

static void test_journal_other_name(void **state)
{
	struct cap *c = *state;
	char buf[512];

	/* The shim inside somebody's program: "vshare" is worth keeping,
	 * the pid is not. */
	journal_is_stderr(1);
	log_init("vshare", LOG_LVL_WARN);
	log_warn("lost the scheduler");
	log_info("filtered by level");
	cap_read(c, buf, sizeof(buf));
	assert_string_equal(buf,
		"<4>vshare: warn: test_journal_other_name: lost the scheduler\n");
}

static void test_journal_not_stderr(void **state)
{
	static const char *const bad[] = { "12", "1:2:3", "x:y", "1:2x", "" };
	struct cap *c = *state;
	char buf[512], want[128];

	/* Inherited from a service whose child moved its stderr: no
	 * prefixes in a file that is not the journal. */
	journal_is_stderr(0);
	log_init("vshare", LOG_LVL_WARN);
	assert_false(log_to_journal());
	log_notice("waiting");
	cap_read(c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "vshare[%d]: waiting\n", (int)getpid());
	assert_string_equal(buf, want);
	/* Malformed values count as no journal. */
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("JOURNAL_STREAM", bad[i], 1);
		log_init("vshare", LOG_LVL_WARN);
		assert_false(log_to_journal());
	}
}

static void test_long_line_is_one_line(void **state)
{
	struct cap *c = *state;
	char buf[4096], big[2000];

	journal_is_stderr(1);
	log_init("vshare", LOG_LVL_INFO);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	log_info("%s", big);
	cap_read(c, buf, sizeof(buf));
	assert_int_equal(strlen(buf), 1023);
	assert_memory_equal(buf, "<6>vshare: info: ", 17);
	assert_int_equal(buf[1022], '\n');
	assert_null(memchr(buf, '\n', 1022));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_journal_priorities, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_journal_other_name, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_journal_not_stderr, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_long_line_is_one_line, cap_setup, cap_teardown),
		cmocka_unit_test_setup_teardown(test_stderr_moved, cap_setup, cap_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
