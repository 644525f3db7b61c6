/*
 * The daemon's own process_* series, as Prometheus's client libraries
 * write them for their process (so that the usual dashboards and alerts
 * for a process work on this one): CPU time, resident and virtual
 * memory, open and allowed descriptors, start time. Read from
 * /proc/self at each render (at most one a second, metrics_cached); a
 * figure that cannot be read is left out rather than written as 0.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics.h"

struct proc_stat {
	unsigned long long utime, stime, start, vsize;
	long long rss;
};

/* /proc/self/stat's fields 14, 15, 22, 23 and 24, read after the
 * command's closing parenthesis (the name may hold spaces). */
static int read_stat(struct proc_stat *p)
{
	char buf[1024], *q;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	q = strrchr(buf, ')');
	if (q == NULL)
		return -1;
	/* After ")": state (3), then fields 4 to 13 skipped. */
	return sscanf(q + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
		      "%llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
		      &p->utime, &p->stime, &p->start, &p->vsize, &p->rss) == 5
	       ? 0 : -1;
}

/* The boot time, seconds since the epoch (/proc/stat's btime). */
static long long boot_time(void)
{
	char line[256];
	long long bt = -1;
	FILE *f = fopen("/proc/stat", "re");

	if (f == NULL)
		return -1;
	while (bt < 0 && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "btime %lld", &bt) != 1)
			bt = -1;
	fclose(f);
	return bt;
}

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	/* The directory's own descriptor is not one of the daemon's. */
	return n - 1;
}

static void head(struct metrics_buf *b, const char *name, const char *type,
		 const char *help)
{
	metrics_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name,
		       type);
}

void metrics_process(struct metrics_buf *b)
{
	struct proc_stat p;
	struct rlimit rl;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE), fds;
	long long bt = boot_time();

	if (read_stat(&p) == 0 && tck > 0) {
		unsigned long long cpu = p.utime + p.stime;

		head(b, "process_cpu_seconds_total", "counter",
		     "Total user and system CPU time spent in seconds.");
		metrics_printf(b, "process_cpu_seconds_total %llu.%02llu\n",
			       cpu / (unsigned long long)tck,
			       (cpu % (unsigned long long)tck) * 100 /
			       (unsigned long long)tck);
		head(b, "process_resident_memory_bytes", "gauge",
		     "Resident memory size in bytes.");
		metrics_printf(b, "process_resident_memory_bytes %lld\n",
			       p.rss * (page > 0 ? page : 4096));
		head(b, "process_virtual_memory_bytes", "gauge",
		     "Virtual memory size in bytes.");
		metrics_printf(b, "process_virtual_memory_bytes %llu\n",
			       p.vsize);
		if (bt >= 0) {
			head(b, "process_start_time_seconds", "gauge",
			     "Start time of the process since unix epoch in "
			     "seconds.");
			metrics_printf(b, "process_start_time_seconds "
				       "%llu.%02llu\n",
				       (unsigned long long)bt +
				       p.start / (unsigned long long)tck,
				       (p.start % (unsigned long long)tck) *
				       100 / (unsigned long long)tck);
		}
	}
	if ((fds = open_fds()) >= 0) {
		head(b, "process_open_fds", "gauge",
		     "Number of open file descriptors.");
		metrics_printf(b, "process_open_fds %ld\n", fds);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
		head(b, "process_max_fds", "gauge",
		     "Maximum number of open file descriptors.");
		metrics_printf(b, "process_max_fds %llu\n",
			       (unsigned long long)rl.rlim_cur);
	}
}
