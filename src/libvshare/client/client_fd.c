/*
 * The client's descriptors as the host program may leave them: a program
 * can close every descriptor it does not know (daemons, launchers, some
 * test harnesses do), and the numbers then come back for its own files and
 * sockets. Each descriptor of the client is remembered with the identity of
 * what it was opened on and checked before use, so the shim never reads,
 * writes or closes what has become the program's.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client_int.h"

/* fstat through the system call: glibc's fstat symbol is from 2.33, newer
 * than the containers the shim must load into (glibc_compat.h). On x86-64
 * and aarch64 the kernel's struct stat is the C library's. */
int client_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

void own_fd_take(struct own_fd *o, int fd)
{
	struct stat st;

	o->fd = -1;
	if (fd < 0 || client_fstat(fd, &st) != 0)
		return;
	o->dev = st.st_dev;
	o->ino = st.st_ino;
	o->fd = fd;
}

/* Sockets have an inode each, so a number reused for anything else,
 * another socket included, does not match. */
int own_fd_valid(const struct own_fd *o)
{
	struct stat st;

	return o->fd >= 0 && client_fstat(o->fd, &st) == 0 && st.st_dev == o->dev &&
	       st.st_ino == o->ino;
}

void own_fd_close(struct own_fd *o)
{
	if (own_fd_valid(o))
		close(o->fd);
	o->fd = -1;
}
