/*
 * One logging API for every vshare program: printf-checked, with levels and
 * the calling function's name. Output goes to stderr, one write per line,
 * never raising SIGPIPE. Each program calls log_init() once with its name.
 *
 * A line starts with "name[pid]: ", unless stderr is the journal (systemd's
 * JOURNAL_STREAM names stderr's device and inode): there it starts with an
 * sd-daemon priority ("<3>" error, "<4>" warn, "<5>" notice, "<6>" info,
 * "<7>" debug), so that `journalctl -p` filters, and without the name and
 * pid, which the journal records itself (a name other than the process's
 * own, the shim's "vshare", stays). JOURNAL_STREAM is read by log_init.
 */
#ifndef VSHARE_LOG_H
#define VSHARE_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(const char *progname, enum log_level level);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int  log_level_parse(const char *s);

/* Whether stderr is the journal now (the rule above). */
int  log_to_journal(void);

/* A line for the person who runs the program, whatever the log level:
 * no level name or function, journald priority notice. Its callers limit
 * how often it is said. */
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

void log_msg(enum log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vmsg(enum log_level level, const char *func, const char *fmt,
	      va_list ap) __attribute__((format(printf, 3, 0)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __func__, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN,  __func__, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO,  __func__, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __func__, __VA_ARGS__)

/* Log at most once per call site for the life of the process (the shim
 * logs once per kind of problem, not once per call). */
#define log_once(level, ...) do {                                        \
	static int log_once_done_;                                       \
	if (!__atomic_exchange_n(&log_once_done_, 1, __ATOMIC_RELAXED))  \
		log_msg((level), __func__, __VA_ARGS__);                 \
} while (0)

#endif
