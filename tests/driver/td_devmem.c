/*
 * Device memory accounting. By default each process has a device of its
 * own. With VSHARE_TD_SHARED_MEM=dir, the processes that name the same
 * directory share each device's memory as on a real GPU: a file per device
 * (vstd-dev<index>.mem) holds one slot per process with the bytes it uses,
 * under flock(); slots of dead processes are reclaimed. Managed memory is
 * never counted here (the driver would evict it), so this is what makes
 * plain allocations of several processes fail where managed ones fit.
 */
#include "td.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#define TD_SLOTS 256

struct td_slot {
	int32_t pid;
	uint32_t pad;
	uint64_t used;
};

static struct td_slot *shared[TD_MAX_DEVICES];
static int shared_fd[TD_MAX_DEVICES] = { -1, -1, -1, -1, -1, -1, -1, -1,
					 -1, -1, -1, -1, -1, -1, -1, -1 };

/* Lock held (cuInit). Maps the accounting file of each visible device. */
void td_devmem_open(void)
{
	const char *dir = getenv("VSHARE_TD_SHARED_MEM");
	const size_t size = TD_SLOTS * sizeof(struct td_slot);
	char path[4096];
	int i;

	if (!dir || !*dir)
		return;
	for (i = 0; i < td.ndev; i++) {
		void *p;
		int fd;

		snprintf(path, sizeof(path), "%s/vstd-dev%d.mem", dir,
			 td.dev[i].phys);
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || ftruncate(fd, (off_t)size) != 0 ||
		    (p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED,
			      fd, 0)) == MAP_FAILED) {
			fprintf(stderr, "vshare CUDA test driver: cannot share "
				"device memory through %s: %s\n", path,
				strerror(errno));
			if (fd >= 0)
				close(fd);
			continue;
		}
		shared_fd[i] = fd;
		shared[i] = p;
	}
}

static int alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH);
}

/* flock held. Bytes used by other live processes; frees dead slots. */
static uint64_t others_used(struct td_slot *s)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < TD_SLOTS; i++) {
		if (s[i].pid == getpid())
			continue;
		if (!alive(s[i].pid)) {
			s[i].pid = 0;
			s[i].used = 0;
		}
		sum += s[i].used;
	}
	return sum;
}

/* flock held. This process's slot (claimed if need be), or NULL. */
static struct td_slot *own_slot(struct td_slot *s)
{
	int i;

	for (i = 0; i < TD_SLOTS; i++)
		if (s[i].pid == getpid())
			return &s[i];
	for (i = 0; i < TD_SLOTS; i++)
		if (s[i].pid == 0) {
			s[i].pid = getpid();
			s[i].used = 0;
			return &s[i];
		}
	return NULL;
}

/* Lock held. Counts bytes against device dev; -1 when they do not fit. */
int td_devmem_reserve(int dev, size_t bytes)
{
	struct td_device *d = &td.dev[dev];
	struct td_slot *mine;
	uint64_t others;
	int rc = -1;

	if (!shared[dev]) {
		if (bytes > d->total - d->used)
			return -1;
		d->used += bytes;
		return 0;
	}
	flock(shared_fd[dev], LOCK_EX);
	others = others_used(shared[dev]);
	mine = own_slot(shared[dev]);
	if (mine && others + d->used <= d->total &&
	    bytes <= d->total - d->used - others) {
		d->used += bytes;
		mine->used = d->used;
		rc = 0;
	}
	flock(shared_fd[dev], LOCK_UN);
	return rc;
}

/* Lock held. */
void td_devmem_release(int dev, size_t bytes)
{
	struct td_device *d = &td.dev[dev];
	struct td_slot *mine;

	d->used -= bytes;
	if (!shared[dev])
		return;
	flock(shared_fd[dev], LOCK_EX);
	mine = own_slot(shared[dev]);
	if (mine)
		mine->used = d->used;
	flock(shared_fd[dev], LOCK_UN);
}

/* Lock held. Free bytes of device dev, as cuMemGetInfo reports them. */
size_t td_devmem_free(int dev)
{
	struct td_device *d = &td.dev[dev];
	uint64_t used = d->used;

	if (shared[dev]) {
		flock(shared_fd[dev], LOCK_EX);
		used += others_used(shared[dev]);
		flock(shared_fd[dev], LOCK_UN);
	}
	return used >= d->total ? 0 : d->total - used;
}
