/*
 * The lock page (include/vshare/proto.h, "The lock page"): a GPU that
 * nobody holds or waits for is taken with one compare-and-swap in memory
 * the scheduler shares, instead of a REQUEST and the GRANT that answers
 * it. Each of those costs a wake-up of another process, tens of
 * microseconds on an idle machine; the swap costs well under one.
 *
 * The page arrives as a descriptor beside the scheduler's
 * VS_MSG_LOCK_PAGE, right after its WELCOME, and lives as long as the
 * connection. The client thread maps and unmaps it; a waiting thread
 * swaps a word only while it holds the right to send the GPU's REQUEST
 * (client_work.c, CLIENT_FAST_CLAIMED), and the client thread takes that
 * right back before it closes the connection or unmaps the page.
 *
 * Any client of the scheduler can write the page, so it is read with
 * care: a slot is used only if it names the GPU, and a descriptor is
 * mapped only if it is a sealed memfd of the size announced, so that
 * nobody can shrink it under this process and make a store fault.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomics.h"
#include "client_int.h"
#include "log.h"

static int pending_fd = -1;        /* received, not yet mapped */

void client_lock_fd(int fd)
{
	/* One page per connection: a second descriptor, or one that comes
	 * after the page, is not ours to keep. */
	if (pending_fd >= 0 || A_LOAD(&client_c.lock) != NULL) {
		close(fd);
		return;
	}
	pending_fd = fd;
}

static int page_ok(int fd, uint32_t size)
{
	struct stat st;
	int seals;

	if (client_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size)
		return 0;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_SHRINK);
}

void client_lock_map(const struct vs_lock_info *m)
{
	int fd = pending_fd;
	void *p;

	pending_fd = -1;
	if (fd < 0 || A_LOAD(&client_c.lock) != NULL) {
		log_debug("lock page announced without a descriptor: every "
			  "grant goes through the scheduler");
		if (fd >= 0)
			close(fd);
		return;
	}
	if (!page_ok(fd, m->size)) {
		log_warn("the scheduler's lock page is not a sealed memory "
			 "file of %u bytes: not used", m->size);
		close(fd);
		return;
	}
	p = mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		log_warn("cannot map the scheduler's lock page (%s): every grant "
			 "goes through the scheduler", strerror(errno));
		return;
	}
	if (((struct vs_lock_page *)p)->magic != VS_LOCK_PAGE_MAGIC) {
		munmap(p, m->size);
		return;
	}
	client_c.lock_token = m->token;
	A_STORE(&client_c.lock, (struct vs_lock_page *)p);
	log_debug("lock page mapped: free GPUs are taken without a round trip");
}

void client_lock_drop(void)
{
	struct vs_lock_page *pg;

	if (pending_fd >= 0)
		close(pending_fd);
	pending_fd = -1;
	pg = A_XCHG(&client_c.lock, NULL);
	if (pg != NULL)
		munmap(pg, sizeof(struct vs_lock_page));
	client_c.lock_token = 0;
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		client_g.gpu[i].lock_slot = 0;
		A_STORE(&client_g.gpu[i].lock_ok, 0);
	}
}

void client_lock_atfork_child(void)
{
	/* The child's copy of the mapping is its own: unmap it, and never
	 * write the parent's token. The descriptor is the child's copy. */
	client_lock_drop();
}

/* The slot that names g's GPU, checked each time (the scheduler may give
 * a slot to another GPU when its table is full); NULL if none. */
static struct vs_lock_slot *slot_of(struct vs_lock_page *pg,
				    struct client_gpu *g)
{
	uint32_t i;

	if (g->lock_slot > 0) {
		i = (uint32_t)g->lock_slot - 1;
		if (memcmp(pg->slot[i].uuid, g->uuid, VS_UUID_LEN) == 0)
			return &pg->slot[i];
	}
	for (i = 0; i < VS_LOCK_SLOTS; i++)
		if (memcmp(pg->slot[i].uuid, g->uuid, VS_UUID_LEN) == 0) {
			g->lock_slot = (int)i + 1;
			return &pg->slot[i];
		}
	return NULL;
}

int client_lock_take(int dev, struct client_gpu *g)
{
	struct vs_lock_page *pg = A_LOAD(&client_c.lock);
	struct vs_lock_slot *sl;
	uint64_t expect = VS_LOCK_FREE;

	if (pg == NULL || !A_LOAD(&g->lock_ok) || client_g.conf.no_lock_page)
		return 0;
	sl = slot_of(pg, g);
	if (sl == NULL ||
	    !__atomic_compare_exchange_n(&sl->word, &expect, client_c.lock_token,
					 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return 0;
	gate_grant(dev);
	__atomic_add_fetch(&client_g.fast_took, 1, __ATOMIC_RELAXED);
	log_debug("GPU %d taken through the lock page", dev);
	return 1;
}
