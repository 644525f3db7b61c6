#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "vshare";
static int log_level = LOG_LVL_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };

void log_init(const char *progname, enum log_level level)
{
	log_prog = progname;
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

void log_set_level(enum log_level level)
{
	__atomic_store_n(&log_level, (int)level, __ATOMIC_RELAXED);
}

enum log_level log_get_level(void)
{
	return (enum log_level)__atomic_load_n(&log_level, __ATOMIC_RELAXED);
}

int log_level_parse(const char *s)
{
	for (int i = 0; i < (int)(sizeof(level_names) / sizeof(level_names[0])); i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	if (strcmp(s, "warning") == 0)
		return LOG_LVL_WARN;
	return -1;
}

/*
 * The shim logs from inside other people's programs, whose stderr may be a
 * pipe with nobody reading: a plain write would raise SIGPIPE and kill the
 * program over a log line. SIGPIPE is blocked around the write and one it
 * caused is consumed. sigprocmask acts on the calling thread on Linux and,
 * unlike pthread_sigmask, binds to a symbol version old enough for the
 * shim's oldest supported glibc.
 */
static void write_stderr(const char *buf, size_t n)
{
	sigset_t pipe_set, old, pending;
	int was_pending;
	struct timespec zero = { 0, 0 };

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (sigprocmask(SIG_BLOCK, &pipe_set, &old) != 0) {
		(void)!write(STDERR_FILENO, buf, n);
		return;
	}
	was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
	if (write(STDERR_FILENO, buf, n) < 0 && errno == EPIPE && !was_pending)
		(void)sigtimedwait(&pipe_set, NULL, &zero);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void log_vmsg(enum log_level level, const char *func, const char *fmt,
	      va_list ap)
{
	char buf[1024];
	int n, saved = errno;

	if ((int)level > __atomic_load_n(&log_level, __ATOMIC_RELAXED))
		return;
	/* One write per line, so lines of concurrent threads and processes
	 * sharing stderr do not interleave. */
	n = snprintf(buf, sizeof(buf), "%s[%d]: %s: %s: ", log_prog,
		     (int)getpid(), level_names[level], func);
	if (n < 0)
		n = 0;
	if ((size_t)n < sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	write_stderr(buf, (size_t)n);
	errno = saved;
}

void log_msg(enum log_level level, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, func, fmt, ap);
	va_end(ap);
}
