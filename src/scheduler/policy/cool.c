/*
 * The cool-down of uids whose connections are refused in bursts. A peer
 * that connects again and again past its uid's limits costs the daemon
 * an accept, a refusal and a close each time; once a uid has been refused
 * COOL_BURST times within COOL_WINDOW_MS, its new connections are closed
 * at once for COOL_MS, with nothing sent and nothing logged. Each uid is
 * charged for its own refusals only, so one uid's flood never cools
 * another. Plain data, no I/O: conn.c charges and asks, with the loop's
 * clock.
 */
#include <string.h>

#include "cool.h"

static struct cool_slot *find(struct cool *c, uint32_t uid)
{
	for (unsigned i = 0; i < c->used; i++)
		if (c->slot[i].uid == uid)
			return &c->slot[i];
	return NULL;
}

/* The slot to give a uid not tracked yet: a free one, else the one whose
 * window began first among those not cooling down, else the one whose
 * cool-down ends first. Forgetting a uid can only end its own cool-down
 * early, never start anyone's. */
static struct cool_slot *take(struct cool *c, uint64_t now)
{
	struct cool_slot *best = NULL;

	if (c->used < COOL_SLOTS)
		return &c->slot[c->used++];
	for (unsigned i = 0; i < COOL_SLOTS; i++) {
		struct cool_slot *s = &c->slot[i];
		int s_cool = s->until > now;

		if (best == NULL) {
			best = s;
		} else if (s_cool != (best->until > now)) {
			if (!s_cool)
				best = s;
		} else if (s_cool ? s->until < best->until :
			   s->window < best->window) {
			best = s;
		}
	}
	return best;
}

int cool_refused(struct cool *c, uint32_t uid, uint64_t now)
{
	struct cool_slot *s = find(c, uid);

	if (s == NULL) {
		s = take(c, now);
		memset(s, 0, sizeof(*s));
		s->uid = uid;
		s->window = now;
	}
	if (s->until > now)
		return 0; /* cooling already: its refusals are not counted */
	if (now - s->window >= COOL_WINDOW_MS) {
		s->window = now;
		s->n = 0;
	}
	if (++s->n < COOL_BURST)
		return 0;
	s->until = now + COOL_MS;
	s->n = 0;
	s->window = s->until;
	return 1;
}

int cool_active(struct cool *c, uint32_t uid, uint64_t now)
{
	const struct cool_slot *s = find(c, uid);

	return s != NULL && s->until > now;
}
