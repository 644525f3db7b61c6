#include <pthread.h>
#include <string.h>

#include "ctx_track.h"
#include "log.h"

struct ctx_slot {
	CUcontext ctx;
	int dev;
	int primary_refs;
};

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ctx_slot ctx_slots[CTX_TRACK_MAX];
static int ctx_count;

static int find_locked(CUcontext ctx)
{
	for (int i = 0; i < ctx_count; i++)
		if (ctx_slots[i].ctx == ctx)
			return i;
	return -1;
}

static void remove_locked(int i)
{
	ctx_slots[i] = ctx_slots[--ctx_count];
}

void ctx_track(CUcontext ctx, int dev, int primary)
{
	int i;

	if (ctx == NULL)
		return;
	pthread_mutex_lock(&ctx_lock);
	i = find_locked(ctx);
	if (i < 0 && ctx_count < CTX_TRACK_MAX) {
		i = ctx_count++;
		ctx_slots[i] = (struct ctx_slot){ ctx, dev, 0 };
	}
	if (i >= 0) {
		ctx_slots[i].dev = dev;
		ctx_slots[i].primary_refs += primary;
	}
	pthread_mutex_unlock(&ctx_lock);
	if (i < 0)
		log_once(LOG_LVL_WARN, "more than %d CUDA contexts: a release "
			 "may not synchronize all of them", CTX_TRACK_MAX);
}

void ctx_untrack(CUcontext ctx)
{
	int i;

	pthread_mutex_lock(&ctx_lock);
	i = find_locked(ctx);
	if (i >= 0)
		remove_locked(i);
	pthread_mutex_unlock(&ctx_lock);
}

int ctx_primary_refs(CUcontext ctx)
{
	int i, refs = 0;

	pthread_mutex_lock(&ctx_lock);
	i = find_locked(ctx);
	if (i >= 0)
		refs = ctx_slots[i].primary_refs;
	pthread_mutex_unlock(&ctx_lock);
	return refs;
}

static void primary_drop(int dev, int all)
{
	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < ctx_count; i++) {
		struct ctx_slot *s = &ctx_slots[i];

		if (s->dev != dev || s->primary_refs == 0)
			continue;
		if (all || --s->primary_refs == 0)
			remove_locked(i);
		break;
	}
	pthread_mutex_unlock(&ctx_lock);
}

void ctx_primary_release(int dev)
{
	primary_drop(dev, 0);
}

void ctx_primary_reset(int dev)
{
	primary_drop(dev, 1);
}

CUcontext ctx_primary_of(int dev)
{
	CUcontext ctx = NULL;

	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < ctx_count && ctx == NULL; i++)
		if (ctx_slots[i].dev == dev && ctx_slots[i].primary_refs > 0)
			ctx = ctx_slots[i].ctx;
	pthread_mutex_unlock(&ctx_lock);
	return ctx;
}

int ctx_device_of(CUcontext ctx)
{
	int i, dev = -1;

	pthread_mutex_lock(&ctx_lock);
	i = find_locked(ctx);
	if (i >= 0)
		dev = ctx_slots[i].dev;
	pthread_mutex_unlock(&ctx_lock);
	return dev;
}

int ctx_list(int dev, CUcontext *out, int max)
{
	int n = 0;

	pthread_mutex_lock(&ctx_lock);
	for (int i = 0; i < ctx_count && n < max; i++)
		if (dev < 0 || ctx_slots[i].dev == dev)
			out[n++] = ctx_slots[i].ctx;
	pthread_mutex_unlock(&ctx_lock);
	return n;
}

/* The mutex may have been held by a thread that does not exist in the
 * child: start over with a fresh one. */
void ctx_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	memcpy(&ctx_lock, &fresh, sizeof(fresh));
	ctx_count = 0;
}
