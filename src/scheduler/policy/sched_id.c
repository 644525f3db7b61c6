/*
 * Client ids. An id is 32 bits where it leaves the daemon (WELCOME's
 * client_id, include/vshare/proto.h, and the status's "id"), so it is 32
 * bits here too, handed out in order from 1. A peer can register and
 * leave in a loop, and after 2^32 - 1 registrations the count starts
 * again at 1; from then on an id that a live client holds is skipped, so
 * that no two live clients ever share an id (an id in a log line, the
 * status or the outbox names one client only).
 */
#include <stdlib.h>

#include "sched_int.h"

/* The first id from `from` on (0 skipped) that no live client holds.
 * Of the n + 2 values from `from`, the n live clients hold at most n and
 * 0 is one more, so one pass marking those in a bitmap finds a free one.
 * 0 when memory is short. */
static uint32_t first_free(const struct sched *s, uint32_t from)
{
	size_t w = s->n_clients + 2, k;
	unsigned char *used = calloc((w + 7) / 8, 1);

	if (used == NULL)
		return 0;
	for (const struct dlink *it = s->clients.next; it != &s->clients;
	     it = it->next) {
		uint32_t off = dl_entry(it, const struct sched_client,
					link)->id - from;

		if (off < w)
			used[off / 8] |= (unsigned char)(1u << off % 8);
	}
	if ((uint32_t)0 - from < w) /* 0 is in the window: never an id */
		used[((uint32_t)0 - from) / 8] |=
			(unsigned char)(1u << ((uint32_t)0 - from) % 8);
	for (k = 0; used[k / 8] & (1u << k % 8); k++)
		;
	free(used);
	return from + (uint32_t)k;
}

uint32_t sched_id_next(struct sched *s)
{
	uint32_t id = s->next_id;

	if (s->ids_wrapped)
		id = first_free(s, id != 0 ? id : 1);
	if (id == 0)
		return 0;
	s->next_id = id + 1;
	if (s->next_id == 0) {
		s->next_id = 1;
		s->ids_wrapped = 1;
	}
	return id;
}
