/*
 * The lock page's memory and its passing to clients (include/vshare/
 * proto.h, "The lock page"). What the words mean is the policy's
 * (sched_lock.c); this file only makes the memory and hands it out.
 *
 * The page is a memfd sealed against growing and shrinking, so that no
 * client can truncate it under the daemon (or another client) and have a
 * store into it fault. A client receives the descriptor over its own
 * connection, so whoever may connect may use the page, and nobody else:
 * there is no file to set permissions on.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "srv.h"

int lockpage_create(struct srv *s)
{
	size_t size = sizeof(struct vs_lock_page);
	void *p;
	int fd, err;

	s->lock_fd = -1;
	s->lock = NULL;
	fd = memfd_create("vshare-lock-page", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	s->lock = p;
	s->lock->magic = VS_LOCK_PAGE_MAGIC;
	s->lock->n_slots = VS_LOCK_SLOTS;
	s->lock_fd = fd;
	return 0;
fail:
	err = errno;
	close(fd);
	return -err;
}

void lockpage_destroy(struct srv *s)
{
	if (s->lock != NULL)
		munmap(s->lock, sizeof(struct vs_lock_page));
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	s->lock = NULL;
	s->lock_fd = -1;
}

void lockpage_send(struct conn *c)
{
	struct vs_lock_info m;

	if (c->srv->lock == NULL || c->client == NULL || c->rx.version < 4)
		return;
	memset(&m, 0, sizeof(m));
	m.token = sched_client_token(c->client);
	m.size = sizeof(struct vs_lock_page);
	/* Without the page the client asks for every grant, as before. */
	if (conn_send_fd(c, VS_MSG_LOCK_PAGE, &m, sizeof(m), c->srv->lock_fd))
		log_debug("client %u: the lock page could not be passed",
			  sched_client_id(c->client));
}
