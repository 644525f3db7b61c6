/*
 * The lock's pages and their passing to clients (include/vshare/proto.h,
 * "The lock page"). What the values mean is the policy's (sched_lock.c);
 * this file only makes the memory, draws the tokens and hands them out.
 *
 * Both pages are memfds sealed against growing and shrinking, so that no
 * client can truncate one under the daemon (or another client) and have a
 * store into it fault. The state page is also sealed against writing
 * (F_SEAL_FUTURE_WRITE, after the daemon's own writable mapping is made):
 * a client can map it read-only only, and can neither write(2) it nor
 * punch a hole in it, so what it says (which GPU a slot names, whether
 * it is open) is the daemon's alone. The words page stays writable by
 * everyone: the clients race there. A client receives the descriptors
 * over its own connection, so whoever may connect may use the pages, and
 * nobody else: there is no file to set permissions on.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include "log.h"
#include "srv.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010 /* Linux 5.1; older libc headers lack it */
#endif

/* A sealed memfd of size bytes mapped writable here; extra seals are
 * added after the mapping (a future-write seal refuses later writable
 * mappings, this one's included). 0, or -errno. */
static int sealed_page(const char *name, size_t size, int extra, void **map,
		       int *fd_out)
{
	int fd, err;
	void *p;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) != 0)
		goto fail;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | extra |
		  F_SEAL_SEAL) != 0) {
		err = errno;
		munmap(p, size);
		close(fd);
		return -err;
	}
	*map = p;
	*fd_out = fd;
	return 0;
fail:
	err = errno;
	close(fd);
	return -err;
}

int lockpage_create(struct srv *s)
{
	void *state = NULL, *words = NULL;
	int rc;

	s->lock_fd = s->words_fd = -1;
	s->lock = NULL;
	s->words = NULL;
	rc = sealed_page("vshare-lock-state", sizeof(struct vs_lock_page),
			 F_SEAL_FUTURE_WRITE, &state, &s->lock_fd);
	if (rc != 0)
		return rc;
	rc = sealed_page("vshare-lock-words", sizeof(struct vs_lock_words), 0,
			 &words, &s->words_fd);
	if (rc != 0) {
		munmap(state, sizeof(struct vs_lock_page));
		close(s->lock_fd);
		s->lock_fd = -1;
		return rc;
	}
	s->lock = state;
	s->words = words;
	s->lock->magic = VS_LOCK_PAGE_MAGIC;
	s->lock->n_slots = VS_LOCK_SLOTS;
	return 0;
}

void lockpage_destroy(struct srv *s)
{
	if (s->lock != NULL)
		munmap(s->lock, sizeof(struct vs_lock_page));
	if (s->words != NULL)
		munmap(s->words, sizeof(struct vs_lock_words));
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	if (s->words_fd >= 0)
		close(s->words_fd);
	s->lock = NULL;
	s->words = NULL;
	s->lock_fd = s->words_fd = -1;
}

/* A token nobody can guess: 63 random bits (the kernel's generator)
 * with VS_LOCK_TOKEN_BIT set, unique among the clients; 0 if none could
 * be drawn. */
static uint64_t draw_token(struct sched *sc)
{
	uint64_t t;

	for (int tries = 0; tries < 4; tries++) {
		if (getrandom(&t, sizeof(t), GRND_NONBLOCK) != (ssize_t)sizeof(t))
			return 0;
		t |= VS_LOCK_TOKEN_BIT;
		if (!sched_token_in_use(sc, t))
			return t;
	}
	return 0;
}

void lockpage_send(struct conn *c)
{
	struct vs_lock_info m;
	int fds[2];

	/* Version 4's page had its free words beside the slots, where
	 * anyone could write one over a held GPU: such peers get no page. */
	if (c->srv->lock == NULL || c->client == NULL || c->rx.version < 5)
		return;
	memset(&m, 0, sizeof(m));
	m.token = draw_token(c->srv->sched);
	if (m.token == 0) {
		log_debug("client %u: no random token: no lock page",
			  sched_client_id(c->client));
		return;
	}
	m.size = sizeof(struct vs_lock_page);
	m.words = sizeof(struct vs_lock_words);
	fds[0] = c->srv->lock_fd;
	fds[1] = c->srv->words_fd;
	/* Without the pages the client asks for every grant, as before; its
	 * token is set only once they went, so that nothing it never heard
	 * of can be adopted. */
	if (conn_send_fds(c, VS_MSG_LOCK_PAGE, &m, sizeof(m), fds, 2)) {
		log_debug("client %u: the lock page could not be passed",
			  sched_client_id(c->client));
		return;
	}
	sched_client_set_token(c->client, m.token);
}
