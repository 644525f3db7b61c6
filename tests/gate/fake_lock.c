/*
 * The fake scheduler's lock pages (fake.h: fs_lock_page), made as the
 * scheduler's lockpage.c makes them, and a version-4 scheduler's page
 * beside them; fake_sched.c passes their descriptors.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fake.h"

static struct {
	int state_fd, words_fd, v4_fd;
	struct vs_lock_page *state;  /* writable here */
	struct vs_lock_words *words;
} lk = { -1, -1, -1, NULL, NULL };

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* A sealed memfd of size bytes, mapped writable here before `extra`
 * seals are added, as the scheduler's lockpage.c makes its pages. */
static void *sealed_page(const char *name, size_t size, int extra, int *fd)
{
	void *p;

	*fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (*fd < 0 || ftruncate(*fd, (off_t)size) != 0)
		abort();
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED ||
	    fcntl(*fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | extra) != 0)
		abort();
	return p;
}

/* The page a scheduler of version 4 shares: one page, writable by every
 * client, each slot's lock word where version 5 has `open`. Every GPU is
 * free in it (the word 1), for a client that wrongly uses it to take. */
static void v4_page(void)
{
	struct vs_lock_page *p = sealed_page("vshare-lock-page",
					     sizeof(*p), 0, &lk.v4_fd);

	p->magic = VS_LOCK_PAGE_MAGIC;
	p->n_slots = VS_LOCK_SLOTS;
	for (int d = 0; d < FAKE_GPUS; d++) {
		fake_uuid(d, p->slot[d].uuid);
		p->slot[d].open = 1;
	}
	munmap(p, sizeof(*p));
}

/* The lock pages of protocol version 5: the state page, whose slot d
 * names fake GPU d, sealed against writing (`seal`) after this mapping
 * was made, and the words. */
void fs_lock_page_sealed(int seal)
{
	lk.state = sealed_page("vshare-lock-state", sizeof(struct vs_lock_page),
			      seal, &lk.state_fd);
	lk.words = sealed_page("vshare-lock-words",
			       sizeof(struct vs_lock_words), 0, &lk.words_fd);
	lk.state->magic = VS_LOCK_PAGE_MAGIC;
	lk.state->n_slots = VS_LOCK_SLOTS;
	for (int d = 0; d < FAKE_GPUS; d++)
		fake_uuid(d, lk.state->slot[d].uuid);
	v4_page();
}

void fs_lock_page(void)
{
	fs_lock_page_sealed(F_SEAL_FUTURE_WRITE);
}

uint64_t *fs_lock_word(int dev)
{
	return &lk.words->w[dev].word;
}

uint64_t *fs_lock_state(int dev)
{
	return &lk.state->slot[dev].open;
}

static uint64_t last_open[VS_LOCK_SLOTS];

uint64_t fs_mark(int dev)
{
	return vs_lock_mark(FS_TOKEN, __atomic_load_n(&last_open[dev],
						      __ATOMIC_SEQ_CST));
}

void fs_lock_open(int dev, uint64_t n)
{
	__atomic_store_n(&last_open[dev], n, __ATOMIC_SEQ_CST);
	__atomic_store_n(&fk.released[dev], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_word(dev), n, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_state(dev), n, __ATOMIC_SEQ_CST);
}

uint64_t fs_lock_close(int dev)
{
	__atomic_store_n(fs_lock_state(dev), 0, __ATOMIC_SEQ_CST);
	return __atomic_exchange_n(fs_lock_word(dev), VS_LOCK_CLOSED,
				   __ATOMIC_SEQ_CST);
}

size_t fs_lock_fds(uint16_t version, int fds[2])
{
	if (lk.state == NULL || version < 4)
		return 0;
	if (fds != NULL) {
		fds[0] = version >= 5 ? lk.state_fd : lk.v4_fd;
		fds[1] = lk.words_fd;
	}
	return version >= 5 ? 2 : 1;
}
