/*
 * The policy's side of the lock page (include/vshare/proto.h, "The lock
 * page"): the words it opens and closes. Plain memory operations, below
 * the transitions in sched.c, which decide when a GPU is free to take and
 * whom to adopt as the holder of a word a client took.
 *
 * The words are shared with every client, so everything read back from
 * them is untrusted: sched.c adopts a token only if it is one of the
 * GPU's attached clients', and closes any other value.
 */
#include <string.h>

#include "sched_int.h"

static uint64_t *word_of(const struct sched *s, const struct sched_gpu *g)
{
	if (s->lock == NULL || g->index >= VS_LOCK_SLOTS)
		return NULL;
	return &s->lock->slot[g->index].word;
}

void sched_lock_set(struct sched *s, struct vs_lock_page *page)
{
	s->lock = page;
	if (page == NULL)
		return;
	for (size_t i = 0; i < s->n_gpus; i++)
		sched_lock_gpu_new(s, s->gpus[i]);
}

uint64_t sched_client_token(const struct sched_client *c)
{
	return VS_LOCK_TOKEN_BIT | c->id;
}

void sched_lock_gpu_new(struct sched *s, struct sched_gpu *g)
{
	uint64_t *w = word_of(s, g);

	if (w == NULL)
		return;
	/* Closed first: a client that still reads the slot's old UUID (a
	 * GPU table slot reused) can no longer take it. The word is freed
	 * later by a store that orders the new UUID before it. */
	__atomic_store_n(w, VS_LOCK_CLOSED, __ATOMIC_SEQ_CST);
	memcpy(s->lock->slot[g->index].uuid, g->uuid, VS_UUID_LEN);
}

/* One exchange, so that a client's compare-and-swap from FREE lands
 * either before it (its token comes back) or after it (it finds the word
 * closed and asks through REQUEST). */
uint64_t sched_lock_close(struct sched *s, struct sched_gpu *g)
{
	uint64_t *w = word_of(s, g), v;

	if (w == NULL)
		return 0;
	v = __atomic_exchange_n(w, VS_LOCK_CLOSED, __ATOMIC_SEQ_CST);
	return v == VS_LOCK_FREE ? 0 : v;
}

void sched_lock_open(struct sched *s, struct sched_gpu *g)
{
	uint64_t *w = word_of(s, g);

	if (w == NULL)
		return;
	/* The slot's UUID again, before the word: a client may have written
	 * junk over it, which would keep everyone on the slow path. */
	memcpy(s->lock->slot[g->index].uuid, g->uuid, VS_UUID_LEN);
	__atomic_store_n(w, VS_LOCK_FREE, __ATOMIC_SEQ_CST);
}
