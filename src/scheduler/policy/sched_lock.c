/*
 * The policy's side of the lock page (include/vshare/proto.h, "The lock
 * page"): the slots and words it opens and closes. Plain memory
 * operations, below the transitions in sched_grant.c, which decide when a GPU
 * is free to take and whom to adopt as the holder of an opening a client
 * took.
 *
 * The state page is the daemon's alone (clients map it read-only); the
 * words are shared with every client, so everything read back from them
 * is untrusted: sched_grant.c adopts a take only if the word holds the mark of
 * one of the GPU's idle members for the opening (vs_lock_mark), and
 * counts any other value.
 */
#include <string.h>

#include "sched_int.h"

/* g's slot in the pages, -1 if it has none. */
static int slot_of(const struct sched *s, const struct sched_gpu *g)
{
	if (s->lock == NULL || s->words == NULL || g->lslot == 0)
		return -1;
	return (int)g->lslot - 1;
}

static uint64_t *word_of(const struct sched *s, const struct sched_gpu *g)
{
	int i = slot_of(s, g);

	return i < 0 ? NULL : &s->words->w[i].word;
}

/* Give g a slot of the pages: a free one, else, for a GPU the
 * configuration names or NVML knows, one of a GPU that is neither (one
 * nobody is attached to first). So peers attaching made-up UUIDs can
 * fill every slot, but never keep a real GPU off the fast path. A slot
 * taken from another GPU is closed first; a take under way there loses
 * its mark, and its TOOK is refused (the client gives the GPU back). */
static void slot_take(struct sched *s, struct sched_gpu *g)
{
	uint8_t used[VS_LOCK_SLOTS] = { 0 };
	struct sched_gpu *from = NULL;
	uint64_t opening, w;

	if (g->lslot != 0)
		return;
	for (size_t i = 0; i < s->n_gpus; i++) {
		struct sched_gpu *h = s->gpus[i];

		if (h->lslot == 0)
			continue;
		used[h->lslot - 1] = 1;
		if (g->vouched && !h->vouched &&
		    (from == NULL || (from->n_members > 0 && h->n_members == 0)))
			from = h;
	}
	for (uint32_t i = 0; i < VS_LOCK_SLOTS; i++)
		if (!used[i]) {
			g->lslot = i + 1;
			return;
		}
	if (from == NULL)
		return;
	w = sched_lock_close(s, from, &opening);
	if (opening != 0 && w != opening)
		from->st.lock_resets++;
	g->lslot = from->lslot;
	from->lslot = 0;
}

void sched_lock_set(struct sched *s, struct vs_lock_page *page,
		    struct vs_lock_words *words)
{
	s->lock = page != NULL && words != NULL ? page : NULL;
	s->words = s->lock != NULL ? words : NULL;
	if (s->lock == NULL)
		return;
	for (size_t i = 0; i < s->n_gpus; i++)
		sched_lock_gpu_new(s, s->gpus[i]);
}

uint64_t sched_client_token(const struct sched_client *c)
{
	return c->token;
}

void sched_client_set_token(struct sched_client *c, uint64_t t)
{
	c->token = t;
}

int sched_token_in_use(const struct sched *s, uint64_t t)
{
	for (const struct dlink *it = s->clients.next; it != &s->clients;
	     it = it->next)
		if (dl_entry(it, struct sched_client, link)->token == t)
			return 1;
	return 0;
}

void sched_lock_gpu_new(struct sched *s, struct sched_gpu *g)
{
	struct vs_lock_slot *sl;
	uint64_t *w;

	if (s->lock == NULL || s->words == NULL)
		return;
	slot_take(s, g);
	w = word_of(s, g);
	if (w == NULL)
		return;
	sl = &s->lock->slot[slot_of(s, g)];
	/* Closed first: a client that still reads the slot's old UUID (a
	 * GPU table slot reused) can no longer take it. The slot is opened
	 * later by a store that orders the new UUID before it. */
	__atomic_store_n(&sl->open, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sl->prio, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sl->prio_n, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(w, VS_LOCK_CLOSED, __ATOMIC_SEQ_CST);
	g->opening = 0;
	memcpy(sl->uuid, g->uuid, VS_UUID_LEN);
}

/* The slot first, then one exchange of the word: a client's swap lands
 * either before the exchange (its mark comes back) or after it, when
 * the slot says closed already, so that the client undoes it (proto.h). */
uint64_t sched_lock_close(struct sched *s, struct sched_gpu *g,
			  uint64_t *opening)
{
	uint64_t *w = word_of(s, g);

	*opening = g->opening;
	if (w == NULL)
		return VS_LOCK_CLOSED;
	if (g->opening != 0)
		__atomic_store_n(&s->lock->slot[slot_of(s, g)].open, 0,
				 __ATOMIC_SEQ_CST);
	g->opening = 0;
	return __atomic_exchange_n(w, VS_LOCK_CLOSED, __ATOMIC_SEQ_CST);
}

void sched_lock_open(struct sched *s, struct sched_gpu *g)
{
	uint64_t *w = word_of(s, g), n;

	if (w == NULL)
		return;
	/* A number never used before, so that nothing written for an
	 * earlier opening matches this one. */
	n = VS_LOCK_OPEN_BIT | (++s->n_openings & (VS_LOCK_OPEN_BIT - 1));
	memcpy(s->lock->slot[slot_of(s, g)].uuid, g->uuid, VS_UUID_LEN);
	__atomic_store_n(w, n, __ATOMIC_SEQ_CST);
	__atomic_store_n(&s->lock->slot[slot_of(s, g)].open, n,
			 __ATOMIC_SEQ_CST);
	g->opening = n;
}

uint64_t sched_lock_peek(const struct sched *s, const struct sched_gpu *g)
{
	const uint64_t *w = word_of(s, g);

	return w == NULL ? VS_LOCK_CLOSED : __atomic_load_n(w, __ATOMIC_SEQ_CST);
}

void sched_lock_prio(struct sched *s, struct sched_gpu *g, uint32_t pct,
		     uint32_t n)
{
	struct vs_lock_slot *sl;
	int i = slot_of(s, g);

	if (i < 0)
		return;
	sl = &s->lock->slot[i];
	/* The count first: a gate that sees the share sees it too. */
	if (__atomic_load_n(&sl->prio_n, __ATOMIC_RELAXED) != n)
		__atomic_store_n(&sl->prio_n, n, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sl->prio, __ATOMIC_RELAXED) != pct)
		__atomic_store_n(&sl->prio, pct, __ATOMIC_SEQ_CST);
}
