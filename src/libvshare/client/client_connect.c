/*
 * The scheduler client's connect, on the client thread: it never blocks
 * the thread for long, and it tells a busy scheduler from an absent one.
 * On a Unix socket, connect says EAGAIN when the scheduler's listen queue
 * is full: a scheduler is there but behind (a burst of programs starting,
 * or a flood of connections by another user). ECONNREFUSED (nobody listens
 * on the file) and ENOENT mean no scheduler.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client_int.h"

/*
 * A socket for the next try. The first try does not wait at all. While
 * the scheduler is busy, a try waits in the kernel's queue of connectors
 * for CLIENT_BUSY_WAIT_MS at most (SO_SNDTIMEO bounds a Unix connect),
 * woken as soon as the scheduler takes a connection off its full queue:
 * a try that only looked now and then would nearly always find the queue
 * full again during a flood, since the flooders' connects take each
 * place the moment it frees. Reads and sends never depend on the
 * blocking mode (client_msg.c passes MSG_DONTWAIT).
 */
static int new_socket(int wait)
{
	struct timeval tv = { 0, (suseconds_t)CLIENT_BUSY_WAIT_MS * 1000 };
	int fd;

	if (wait) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0)
			return fd;
		close(fd); /* no bound on the wait: no wait at all */
	}
	return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

int client_connect(int *err)
{
	struct sockaddr_un sa;
	int fd;

	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, client_g.conf.socket_path,
	       strlen(client_g.conf.socket_path));
	fd = new_socket(client_c.busy);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		client_c.busy = 0;
		return fd;
	}
	/* The thread blocks every signal: an interrupted wait is a wait
	 * that ended early. */
	*err = errno == EINTR ? EAGAIN : errno;
	if (fd >= 0)
		close(fd);
	if (*err != EAGAIN)
		client_c.busy = 0;
	return -1;
}

int client_connect_busy(void)
{
	uint64_t now = gate_now_ms();

	if (!client_c.busy) {
		client_c.busy = 1;
		client_c.busy_since_ms = now;
	}
	if (now - client_c.busy_since_ms >= CLIENT_BUSY_FOR_MS)
		return 0;
	/* The next try waits in the queue itself; the millisecond only
	 * keeps a try that could not wait from spinning. */
	client_c.next_try_ms = now + 1;
	return 1;
}
