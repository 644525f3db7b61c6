#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static const char *log_prog = "vshare";
static int log_level = LOG_LVL_INFO;

static const char *const level_names[] = { "error", "warn", "info", "debug" };
/* sd-daemon(3) priority prefixes, by level: err, warning, info, debug. */
static const char *const level_prio[] = { "<3>", "<4>", "<6>", "<7>" };
#define LOG_PRIO_NOTICE "<5>"

/*
 * systemd sets JOURNAL_STREAM to "device:inode" of the stream it connects
 * to stdout and stderr. The variable is inherited by every child, whose
 * stderr may have been redirected since (a job's log file, a pipe, a
 * notebook's capture of its kernel's stderr), so only a stderr that is
 * still that very stream counts. The variable is read once, at log_init
 * (getenv beside a program's own setenv on another thread is not safe);
 * stderr is looked at for each line: a program may move it after the
 * shim's constructor ran (ipykernel does). fstat through the system call:
 * the shim links this file, and glibc's fstat symbol (2.33) is newer than
 * the containers it loads into (src/libvshare/interpose/glibc_compat.h).
 */
static int journal_set;
static unsigned long long journal_dev, journal_ino;

static void journal_read(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	int used = 0;

	journal_set = js != NULL &&
		      sscanf(js, "%llu:%llu%n", &journal_dev, &journal_ino,
			     &used) == 2 && js[used] == '\0';
}

void log_init(const char *progname, enum log_level level)
{
	log_prog = progname;
	journal_read();
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

int log_to_journal(void)
{
	struct stat st;

	if (!journal_set || syscall(SYS_fstat, STDERR_FILENO, &st) != 0)
		return 0;
	return (unsigned long long)st.st_dev == journal_dev &&
	       (unsigned long long)st.st_ino == journal_ino;
}

/* The start of every line: a priority for the journal, or the program's
 * name and pid for a terminal or a file. The journal records the sender's
 * name and pid itself; only a name other than the process's own (the
 * shim, "vshare", inside somebody's program) is worth repeating there. */
static int line_prefix(char *buf, size_t n, const char *prio)
{
	if (!log_to_journal())
		return snprintf(buf, n, "%s[%d]: ", log_prog, (int)getpid());
	if (strcmp(log_prog, program_invocation_short_name) == 0)
		return snprintf(buf, n, "%s", prio);
	return snprintf(buf, n, "%s%s: ", prio, log_prog);
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

/* One write per line, so lines of concurrent threads and processes
 * sharing stderr do not interleave. `head` (may be NULL) comes after the
 * prefix, before the text. */
static void emit(const char *prio, const char *head, const char *fmt,
		 va_list ap)
{
	char buf[1024];
	int n, k, saved = errno;

	n = line_prefix(buf, sizeof(buf), prio);
	if (n < 0)
		n = 0;
	if (head != NULL && (size_t)n < sizeof(buf)) {
		k = snprintf(buf + n, sizeof(buf) - (size_t)n, "%s", head);
		n += k > 0 ? k : 0;
	}
	if ((size_t)n < sizeof(buf)) {
		k = vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
		n += k > 0 ? k : 0;
	}
	if ((size_t)n >= sizeof(buf) - 1)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	write_stderr(buf, (size_t)n);
	errno = saved;
}

void log_vmsg(enum log_level level, const char *func, const char *fmt,
	      va_list ap)
{
	char head[128];

	if ((int)level > __atomic_load_n(&log_level, __ATOMIC_RELAXED))
		return;
	snprintf(head, sizeof(head), "%s: %s: ", level_names[level], func);
	emit(level_prio[level], head, fmt, ap);
}

void log_notice(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(LOG_PRIO_NOTICE, NULL, fmt, ap);
	va_end(ap);
}

void log_msg(enum log_level level, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, func, fmt, ap);
	va_end(ap);
}
