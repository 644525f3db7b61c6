/*
 * The execution log (VSHARE_TD_LOG=path): one line per finished kernel,
 * copy, memset, prefetch or advice, written with a single write() to a file
 * opened O_APPEND, so several processes can share one log. Columns:
 *   start_ns end_ns pid device stream kind name bytes
 * Times are CLOCK_MONOTONIC nanoseconds (comparable across processes on
 * one machine); device is the configured (physical) index, not the index
 * after CUDA_VISIBLE_DEVICES; stream is a per-process stream id.
 */
#include "td.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Lock held (called from cuInit). */
void td_log_open(void)
{
	const char *path = getenv("VSHARE_TD_LOG");

	if (td.log_fd >= 0 || !path || !*path)
		return;
	td.log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void td_log_line(uint64_t start, uint64_t end, int dev, uint64_t stream,
		 const char *kind, const char *name, size_t bytes)
{
	char line[256];
	int n;

	if (td.log_fd < 0)
		return;
	n = snprintf(line, sizeof(line), "%llu %llu %d %d %llu %s %s %zu\n",
		     (unsigned long long)start, (unsigned long long)end,
		     (int)getpid(), dev, (unsigned long long)stream, kind,
		     name, bytes);
	if (n > 0 && (size_t)n < sizeof(line))
		(void)!write(td.log_fd, line, (size_t)n);
}
