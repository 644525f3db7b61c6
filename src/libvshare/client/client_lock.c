/*
 * The lock page (include/vshare/proto.h, "The lock page"): a GPU that
 * nobody holds or waits for is taken with one compare-and-swap in memory
 * the scheduler shares, instead of a REQUEST and the GRANT that answers
 * it. Each of those costs a wake-up of another process, tens of
 * microseconds on an idle machine; the swap costs well under one.
 *
 * Two pages arrive as descriptors beside the scheduler's
 * VS_MSG_LOCK_PAGE, right after its WELCOME, and live as long as the
 * connection: the state page, which says whether each GPU is open and
 * which only the scheduler can write (this process maps it read-only),
 * and the words, where the clients race for an opening. The client
 * thread maps and unmaps them; a waiting thread swaps a word only while
 * it holds the right to send the GPU's REQUEST (client_work.c,
 * CLIENT_FAST_CLAIMED), and the client thread takes that right back
 * before it closes the connection or unmaps the pages.
 *
 * Any client of the scheduler can write the words, so nothing here
 * trusts them: a GPU is open only if the state page says so, and a
 * descriptor is mapped only if it is a memfd of the size announced,
 * sealed against shrinking (so that nobody can make an access fault
 * under this process) and, for the state page, against writing.
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

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* Received with the connection's LOCK_PAGE, not yet mapped: the state
 * page's descriptor, then the words'. */
static int pending[2] = { -1, -1 };
static int page_seen;              /* the LOCK_PAGE frame was handled */

static void close_pending(void)
{
	for (int i = 0; i < 2; i++) {
		if (pending[i] >= 0)
			close(pending[i]);
		pending[i] = -1;
	}
}

void client_lock_fd(int fd)
{
	/* Two descriptors per connection, in the order they came: any more,
	 * or one after the LOCK_PAGE frame, is not ours to keep. */
	if (!page_seen && A_LOAD(&client_c.lock) == NULL)
		for (int i = 0; i < 2; i++)
			if (pending[i] < 0) {
				pending[i] = fd;
				return;
			}
	close(fd);
}

/* A memfd (no other file has seals) of `size` bytes with every seal of
 * `all` and, if `any` is not 0, one of those. */
static int memfd_ok(int fd, uint32_t size, int all, int any)
{
	struct stat st;
	int seals;

	if (fd < 0 || client_fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size != size)
		return 0;
	seals = fcntl(fd, F_GET_SEALS);
	return seals >= 0 && (seals & all) == all && (any == 0 || (seals & any));
}

static void unmap(void *p, size_t n)
{
	if (p != NULL && p != MAP_FAILED)
		munmap(p, n);
}

/* Map both pages (the descriptors are closed either way); 0 if both are
 * good. */
static int map_pages(const struct vs_lock_info *m, struct vs_lock_page **sp,
		     struct vs_lock_words **wp)
{
	void *s = MAP_FAILED, *w = MAP_FAILED;

	if (!memfd_ok(pending[0], m->size, F_SEAL_SHRINK,
		      F_SEAL_WRITE | F_SEAL_FUTURE_WRITE) ||
	    !memfd_ok(pending[1], m->words, F_SEAL_SHRINK, 0)) {
		log_warn("the scheduler's lock pages are not sealed memory "
			 "files of %u and %u bytes: not used", m->size, m->words);
		close_pending();
		return -1;
	}
	s = mmap(NULL, m->size, PROT_READ, MAP_SHARED, pending[0], 0);
	w = mmap(NULL, m->words, PROT_READ | PROT_WRITE, MAP_SHARED,
		 pending[1], 0);
	close_pending();
	if (s == MAP_FAILED || w == MAP_FAILED) {
		log_warn("cannot map the scheduler's lock pages (%s): every "
			 "grant goes through the scheduler", strerror(errno));
		unmap(s, m->size);
		unmap(w, m->words);
		return -1;
	}
	if (((struct vs_lock_page *)s)->magic != VS_LOCK_PAGE_MAGIC) {
		log_warn("the scheduler's lock page has a bad magic: not used");
		munmap(s, m->size);
		munmap(w, m->words);
		return -1;
	}
	*sp = s;
	*wp = w;
	return 0;
}

void client_lock_map(const struct vs_lock_info *m)
{
	struct vs_lock_page *s;
	struct vs_lock_words *w;

	if (page_seen || A_LOAD(&client_c.lock) != NULL) {
		close_pending();
		return;
	}
	page_seen = 1;
	/* An older scheduler's page (version 4) has its words beside the
	 * state, where any client could write a free word over a held one:
	 * not used. */
	if (m->words == 0) {
		log_debug("the scheduler's lock page is of protocol version 4: "
			  "every grant goes through the scheduler");
		close_pending();
		return;
	}
	if (pending[0] < 0 || pending[1] < 0) {
		log_debug("lock pages announced without their descriptors: "
			  "every grant goes through the scheduler");
		close_pending();
		return;
	}
	if (map_pages(m, &s, &w) != 0)
		return;
	client_c.lock_token = m->token;
	A_STORE(&client_c.lock_words, w);
	A_STORE(&client_c.lock, s);
	log_debug("lock pages mapped: free GPUs are taken without a round trip");
}

int client_lock_expected(void)
{
	return A_LOAD(&client_c.lock) != NULL ||
	       (!page_seen && client_version() >= 5);
}

/* Unbound from the gate's priority: the pages may go, unless the gate
 * was bound to them, in which case a submission may still be reading
 * them, and they stay mapped (32 KiB per connection that had them; a
 * fork child's gate was unbound by its own fork handler first). */
static void drop_pages(int unmap)
{
	struct vs_lock_page *pg;
	struct vs_lock_words *w;
	int bound = A_XCHG(&client_c.lock_bound, 0);

	for (int i = 0; bound && i < GATE_MAX_GPUS; i++)
		gate_prio_bind(i, NULL, NULL);
	close_pending();
	page_seen = 0;
	pg = A_XCHG(&client_c.lock, NULL);
	w = A_XCHG(&client_c.lock_words, NULL);
	if (bound && !unmap)
		log_debug("the lock pages of the connection that ended stay "
			  "mapped: a submission may still read them");
	else if (pg != NULL)
		munmap(pg, sizeof(struct vs_lock_page));
	if ((!bound || unmap) && w != NULL)
		munmap(w, sizeof(struct vs_lock_words));
	client_c.lock_token = 0;
	for (int i = 0; i < GATE_MAX_GPUS; i++) {
		client_g.gpu[i].lock_slot = 0;
		A_STORE(&client_g.gpu[i].lock_ok, 0);
	}
}

void client_lock_drop(void)
{
	drop_pages(0);
}

void client_lock_atfork_child(void)
{
	/* The child's copy of the mappings is its own: unmap them, and never
	 * write the parent's token. The descriptors are the child's copies. */
	drop_pages(1);
}

void client_lock_bind(int dev, struct client_gpu *g)
{
	struct vs_lock_page *pg = A_LOAD(&client_c.lock);
	struct vs_lock_words *w = A_LOAD(&client_c.lock_words);

	if (pg == NULL || w == NULL)
		return;
	/* Looked up afresh, not through lock_slot, which the waiting
	 * thread that takes the word owns meanwhile. */
	for (uint32_t i = 0; i < VS_LOCK_SLOTS; i++)
		if (memcmp(pg->slot[i].uuid, g->uuid, VS_UUID_LEN) == 0) {
			A_STORE(&client_c.lock_bound, 1);
			gate_prio_bind(dev, &pg->slot[i], &w->w[i]);
			return;
		}
}

/* The slot that names g's GPU in the state page, checked each time (the
 * scheduler may give a slot to another GPU when its table is full); -1
 * if none. */
static int slot_of(const struct vs_lock_page *pg, struct client_gpu *g)
{
	uint32_t i;

	if (g->lock_slot > 0) {
		i = (uint32_t)g->lock_slot - 1;
		if (memcmp(pg->slot[i].uuid, g->uuid, VS_UUID_LEN) == 0)
			return (int)i;
	}
	for (i = 0; i < VS_LOCK_SLOTS; i++)
		if (memcmp(pg->slot[i].uuid, g->uuid, VS_UUID_LEN) == 0) {
			g->lock_slot = (int)i + 1;
			return (int)i;
		}
	return -1;
}

static int cas(uint64_t *p, uint64_t from, uint64_t to)
{
	return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_SEQ_CST,
					   __ATOMIC_SEQ_CST);
}

/*
 * The take of the contract: the opening's number n from the state page,
 * the word swapped from n to our token, then the state read again. Still
 * n: the opening is ours. Changed: the scheduler closed the GPU under
 * the swap and either has not looked at the word yet (our token swaps
 * back to closed: nothing was taken, the waiter asks) or exchanged it
 * with our token in it (the swap back fails: the scheduler adopted us,
 * the GPU is ours). A number written into a word by another client
 * takes nothing while the state says closed.
 */
static int take_word(const struct vs_lock_page *pg, struct vs_lock_words *w,
		     int i, int dev)
{
	uint64_t n = A_LOAD(&pg->slot[i].open), tok;

	if (!(n & VS_LOCK_OPEN_BIT))
		return 0;
	/* The mark for this opening, not the token itself: everyone can
	 * read the words, and a mark is worth nothing for another opening
	 * (proto.h). */
	tok = vs_lock_mark(client_c.lock_token, n);
	if (!cas(&w->w[i].word, n, tok))
		return 0;
	if (client_lock_test_swapped != NULL)
		client_lock_test_swapped(dev);
	if (A_LOAD(&pg->slot[i].open) == n)
		return 1;
	if (cas(&w->w[i].word, tok, VS_LOCK_CLOSED)) {
		log_debug("GPU %d: the scheduler closed it under the take: "
			  "asking for it", dev);
		return 0;
	}
	return 1;
}

int client_lock_take(int dev, struct client_gpu *g)
{
	struct vs_lock_page *pg = A_LOAD(&client_c.lock);
	struct vs_lock_words *w = A_LOAD(&client_c.lock_words);
	int i;

	if (pg == NULL || w == NULL || !A_LOAD(&g->lock_ok) ||
	    A_LOAD(&g->page_skip) || client_g.conf.no_lock_page)
		return 0;
	i = slot_of(pg, g);
	if (i < 0 || !take_word(pg, w, i, dev))
		return 0;
	/* The scheduler opens the page only where no interactive program
	 * shares the GPU: nothing to pace. */
	gate_pace(dev, 0);
	gate_grant(dev);
	__atomic_add_fetch(&client_g.fast_took, 1, __ATOMIC_RELAXED);
	log_debug("GPU %d taken through the lock page", dev);
	return 1;
}
