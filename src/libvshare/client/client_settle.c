/*
 * Whether the first connection attempt has an outcome, for the threads
 * that allocate: the scheduler's policy arrived, or a scheduler of an
 * older version welcomed us (it sends none), or there is no scheduler,
 * or the client thread could not start. Allocating threads wait for it
 * (client_policy_wait), the client thread marks it; it stays marked.
 */
#include <pthread.h>
#include <time.h>

#include "atomics.h"
#include "client_int.h"

static int settled;          /* atomic */
/* A policy was heard: the memory layer holds its limit, which a fork
 * child inherits; without one the child must settle on its own. */
static int policy_heard;     /* atomic */
static pthread_mutex_t settle_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t settle_cv = PTHREAD_COND_INITIALIZER;

void client_settle_policy(void)
{
	__atomic_store_n(&policy_heard, 1, __ATOMIC_RELEASE);
	client_settle_mark();
}

void client_settle_mark(void)
{
	if (__atomic_load_n(&settled, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&settle_mu);
	__atomic_store_n(&settled, 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&settle_cv);
	pthread_mutex_unlock(&settle_mu);
}

int client_settled(void)
{
	return __atomic_load_n(&settled, __ATOMIC_ACQUIRE);
}

void client_deadline(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000u;
	ts->tv_nsec += (long)(ms % 1000u) * 1000000L;
	ts->tv_sec += ts->tv_nsec / 1000000000L;
	ts->tv_nsec %= 1000000000L;
}

/* Wait at most ms until ready(dev), woken by the marks and notices. */
static void wait_until(int (*ready)(int), int dev, unsigned ms)
{
	struct timespec ts;

	client_deadline(&ts, ms);
	pthread_mutex_lock(&settle_mu);
	while (!ready(dev) &&
	       pthread_cond_timedwait(&settle_cv, &settle_mu, &ts) == 0)
		;
	pthread_mutex_unlock(&settle_mu);
}

static int is_settled(int dev)
{
	(void)dev;
	return client_settled();
}

void client_settle_wait(unsigned ms)
{
	wait_until(is_settled, 0, ms);
}

void client_settle_notify(void)
{
	pthread_mutex_lock(&settle_mu);
	pthread_cond_broadcast(&settle_cv);
	pthread_mutex_unlock(&settle_mu);
}

/* Registered far enough for a first launch to take its GPU at once, or
 * nothing more to wait for: no scheduler, or one that shares no page. */
static int gpu_ready(int dev)
{
	return A_LOAD(&client_g.gpu[dev].lock_ok) ||
	       (client_settled() && A_LOAD(&client_c.lock) == NULL);
}

void client_settle_gpu_wait(int dev, unsigned ms)
{
	wait_until(gpu_ready, dev, ms);
}

/* The fork child keeps a policy its parent heard (the limit is in the
 * memory layer); otherwise its own client thread settles again: the
 * parent may have settled with no scheduler, or on a start that failed. */
void client_settle_atfork_child(void)
{
	if (!__atomic_load_n(&policy_heard, __ATOMIC_ACQUIRE))
		__atomic_store_n(&settled, 0, __ATOMIC_RELEASE);
	pthread_mutex_init(&settle_mu, NULL);
	pthread_cond_init(&settle_cv, NULL);
}
