#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mem_reg.h"

struct mreg_node {
	struct mreg_entry e;
	struct mreg_node *next;
};

static pthread_mutex_t mreg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mreg_node **mreg_buckets;
static size_t mreg_nbuckets;
static size_t mreg_count;
static uint64_t mreg_used[MREG_MAX_DEVS][2];

static int dev_ok(int dev)
{
	return dev >= 0 && dev < MREG_MAX_DEVS;
}

static size_t bucket_of(int ns, uint64_t key, size_t n)
{
	/* Allocations are aligned, so mix the high bits into the low ones. */
	uint64_t h = (key ^ ((uint64_t)ns << 63)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (n - 1);
}

static int grow_locked(void)
{
	size_t n = mreg_nbuckets ? mreg_nbuckets * 2 : 256;
	struct mreg_node **b = calloc(n, sizeof(*b));

	if (b == NULL)
		return -1;
	for (size_t i = 0; i < mreg_nbuckets; i++) {
		struct mreg_node *p = mreg_buckets[i], *next;

		for (; p != NULL; p = next) {
			size_t k = bucket_of(p->e.ns, p->e.key, n);

			next = p->next;
			p->next = b[k];
			b[k] = p;
		}
	}
	free(mreg_buckets);
	mreg_buckets = b;
	mreg_nbuckets = n;
	return 0;
}

int mreg_reserve(int dev, int kind, uint64_t size, uint64_t limit)
{
	int rc = 0;

	if (!dev_ok(dev))
		return 0;
	pthread_mutex_lock(&mreg_lock);
	if (limit != 0) {
		uint64_t used = mreg_used[dev][0] + mreg_used[dev][1];

		if (size > limit || used > limit - size)
			rc = -1;
	}
	if (rc == 0)
		mreg_used[dev][kind] += size;
	pthread_mutex_unlock(&mreg_lock);
	return rc;
}

static void unreserve_locked(int dev, int kind, uint64_t size)
{
	if (!dev_ok(dev))
		return;
	mreg_used[dev][kind] -= size < mreg_used[dev][kind] ? size
							    : mreg_used[dev][kind];
}

void mreg_unreserve(int dev, int kind, uint64_t size)
{
	pthread_mutex_lock(&mreg_lock);
	unreserve_locked(dev, kind, size);
	pthread_mutex_unlock(&mreg_lock);
}

int mreg_insert(int ns, uint64_t key, uint64_t size, int dev, int kind,
		const void *owner)
{
	struct mreg_node *n = malloc(sizeof(*n));
	size_t k;

	pthread_mutex_lock(&mreg_lock);
	if (n == NULL || (mreg_count >= mreg_nbuckets && grow_locked() != 0)) {
		unreserve_locked(dev, kind, size);
		pthread_mutex_unlock(&mreg_lock);
		free(n);
		return -1;
	}
	n->e = (struct mreg_entry){ key, size, owner, dev, (unsigned char)ns,
				    (unsigned char)kind, 0 };
	k = bucket_of(ns, key, mreg_nbuckets);
	n->next = mreg_buckets[k];
	mreg_buckets[k] = n;
	mreg_count++;
	pthread_mutex_unlock(&mreg_lock);
	return 0;
}

static struct mreg_node **find_locked(int ns, uint64_t key)
{
	struct mreg_node **pp;

	if (mreg_nbuckets == 0)
		return NULL;
	pp = &mreg_buckets[bucket_of(ns, key, mreg_nbuckets)];
	for (; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->e.key == key && (*pp)->e.ns == ns)
			return pp;
	return NULL;
}

int mreg_remove(int ns, uint64_t key, struct mreg_entry *out)
{
	struct mreg_node **pp, *n = NULL;

	pthread_mutex_lock(&mreg_lock);
	pp = find_locked(ns, key);
	if (pp != NULL) {
		n = *pp;
		*pp = n->next;
		mreg_count--;
		unreserve_locked(n->e.dev, n->e.kind, n->e.size);
	}
	pthread_mutex_unlock(&mreg_lock);
	if (n == NULL)
		return -1;
	if (out != NULL)
		*out = n->e;
	free(n);
	return 0;
}

int mreg_lookup(int ns, uint64_t key, struct mreg_entry *out)
{
	struct mreg_node **pp;

	pthread_mutex_lock(&mreg_lock);
	pp = find_locked(ns, key);
	if (pp != NULL && out != NULL)
		*out = (*pp)->e;
	pthread_mutex_unlock(&mreg_lock);
	return pp != NULL ? 0 : -1;
}

int mreg_set_tag(int ns, uint64_t key, uint64_t tag)
{
	struct mreg_node **pp;

	pthread_mutex_lock(&mreg_lock);
	pp = find_locked(ns, key);
	if (pp != NULL)
		(*pp)->e.tag = tag;
	pthread_mutex_unlock(&mreg_lock);
	return pp != NULL ? 0 : -1;
}

/* Drop the entries that match; returns the device of the last one. */
static int drop_locked(int dev, const void *owner)
{
	int last = -1;

	for (size_t i = 0; i < mreg_nbuckets; i++) {
		struct mreg_node **pp = &mreg_buckets[i];

		while (*pp != NULL) {
			struct mreg_node *n = *pp;

			if (owner != NULL ? n->e.owner != owner : n->e.dev != dev) {
				pp = &n->next;
				continue;
			}
			*pp = n->next;
			mreg_count--;
			unreserve_locked(n->e.dev, n->e.kind, n->e.size);
			last = n->e.dev;
			free(n);
		}
	}
	return last;
}

void mreg_drop_device(int dev)
{
	pthread_mutex_lock(&mreg_lock);
	drop_locked(dev, NULL);
	pthread_mutex_unlock(&mreg_lock);
}

int mreg_drop_owner(const void *owner)
{
	int dev = -1;

	if (owner == NULL)
		return -1;
	pthread_mutex_lock(&mreg_lock);
	dev = drop_locked(-1, owner);
	pthread_mutex_unlock(&mreg_lock);
	return dev;
}

void mreg_usage(int dev, uint64_t *managed, uint64_t *pinned)
{
	uint64_t m = 0, p = 0;

	if (dev_ok(dev)) {
		pthread_mutex_lock(&mreg_lock);
		m = mreg_used[dev][MREG_MANAGED];
		p = mreg_used[dev][MREG_PINNED];
		pthread_mutex_unlock(&mreg_lock);
	}
	if (managed != NULL)
		*managed = m;
	if (pinned != NULL)
		*pinned = p;
}

size_t mreg_snapshot(int dev, int kind, struct mreg_entry *out, size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&mreg_lock);
	for (size_t i = 0; i < mreg_nbuckets; i++)
		for (struct mreg_node *p = mreg_buckets[i]; p; p = p->next) {
			if (p->e.dev != dev || p->e.kind != kind)
				continue;
			if (n < max)
				out[n] = p->e;
			n++;
		}
	pthread_mutex_unlock(&mreg_lock);
	return n;
}

static void clear_state(void)
{
	mreg_buckets = NULL;
	mreg_nbuckets = 0;
	mreg_count = 0;
	memset(mreg_used, 0, sizeof(mreg_used));
}

void mreg_reset(void)
{
	pthread_mutex_lock(&mreg_lock);
	for (size_t i = 0; i < mreg_nbuckets; i++) {
		struct mreg_node *p = mreg_buckets[i], *next;

		for (; p != NULL; p = next) {
			next = p->next;
			free(p);
		}
	}
	free(mreg_buckets);
	clear_state();
	pthread_mutex_unlock(&mreg_lock);
}

/* The lock may have been held by a thread that does not exist in the
 * child, so it is replaced, and the nodes are leaked rather than walked
 * (that thread may have been changing them). */
void mreg_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&mreg_lock, &fresh, sizeof(fresh));
	clear_state();
}
