/*
 * A large memcpy split into PCOPY_PART pieces that the caller and a few
 * helper threads take in turn (an atomic counter), so a slow helper never
 * holds the copy up: the caller takes whatever is left.
 *
 * One copy at a time has the helpers (job_lock, tried, never waited for:
 * a second copying thread copies alone). A helper joins a copy only while
 * pieces are left, under m, and the caller returns only once every piece
 * is taken and no helper is inside (active 0): so no helper ever works on
 * a copy that has ended, and every byte a helper wrote is visible to the
 * caller when it returns (the helper leaves under m).
 *
 * The helpers block every signal, so the program's handlers never run on
 * them, and are started at the first large copy: a process that never
 * stages a large copy has none.
 */
#include <pthread.h>
#include <stdint.h>
#include <signal.h>
#include <string.h>

#include "atomics.h"
#include "pcopy.h"
#include "shim_env.h"

static struct {
	pthread_mutex_t job_lock;       /* one copy has the helpers */
	pthread_mutex_t m;              /* the job and the helpers' state */
	pthread_cond_t go;              /* a new job (gen moved) */
	pthread_cond_t done;            /* a helper left */
	int want;                       /* helpers wanted, -1 auto */
	int started;                    /* 0 not yet, 1 running, -1 failed */
	int helpers;                    /* running */
	unsigned long gen;              /* jobs published */
	char *dst;
	const char *src;
	size_t n;
	size_t parts;
	size_t next;                    /* next piece to take (atomic) */
	uint64_t helped;                /* pieces helpers copied (atomic) */
	int active;                     /* helpers inside the job */
} pc = {
	.job_lock = PTHREAD_MUTEX_INITIALIZER,
	.m = PTHREAD_MUTEX_INITIALIZER,
	.go = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.want = -1,
};

void pcopy_setup(int helpers)
{
	A_STORE(&pc.want, helpers > PCOPY_HELPERS_MAX ? PCOPY_HELPERS_MAX
						     : helpers);
}

uint64_t pcopy_helped(void)
{
	return A_LOAD_RLX(&pc.helped);
}

int pcopy_helpers(void)
{
	int n;

	pthread_mutex_lock(&pc.m);
	n = pc.helpers;
	pthread_mutex_unlock(&pc.m);
	return n;
}

/* Take pieces of the job until none is left. */
static size_t copy_parts(char *dst, const char *src, size_t n, size_t parts)
{
	size_t i, mine = 0;

	while ((i = __atomic_fetch_add(&pc.next, 1, __ATOMIC_RELAXED)) < parts) {
		size_t off = i * PCOPY_PART;

		memcpy(dst + off, src + off,
		       n - off < PCOPY_PART ? n - off : PCOPY_PART);
		mine++;
	}
	return mine;
}

static void *helper_main(void *arg)
{
	unsigned long seen;

	(void)arg;
	pthread_mutex_lock(&pc.m);
	seen = pc.gen;
	for (;;) {
		char *dst;
		const char *src;
		size_t n, parts;

		while (pc.gen == seen)
			pthread_cond_wait(&pc.go, &pc.m);
		seen = pc.gen;
		/* A job whose pieces are all taken may be ending: not ours. */
		if (A_LOAD_RLX(&pc.next) >= pc.parts)
			continue;
		dst = pc.dst;
		src = pc.src;
		n = pc.n;
		parts = pc.parts;
		pc.active++;
		pthread_mutex_unlock(&pc.m);
		__atomic_add_fetch(&pc.helped, copy_parts(dst, src, n, parts),
				   __ATOMIC_RELAXED);
		pthread_mutex_lock(&pc.m);
		if (--pc.active == 0)
			pthread_cond_signal(&pc.done);
	}
	return NULL;
}

/* The CPUs this process may run on, less the caller's. */
static int helpers_auto(void)
{
	int cpus = shim_usable_cpus();

	return cpus - 1 < PCOPY_HELPERS_AUTO ? cpus - 1 : PCOPY_HELPERS_AUTO;
}

/* Start the helpers, once; called with job_lock held. 1 when any run. */
static int helpers_start(void)
{
	sigset_t all, old;
	int want;

	pthread_mutex_lock(&pc.m);
	if (pc.started != 0) {
		int ok = pc.started > 0;

		pthread_mutex_unlock(&pc.m);
		return ok;
	}
	want = A_LOAD(&pc.want) < 0 ? helpers_auto() : A_LOAD(&pc.want);
	pthread_mutex_unlock(&pc.m);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < want; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, helper_main, NULL) != 0)
			break;
		pthread_detach(t);
		pthread_mutex_lock(&pc.m);
		pc.helpers++;
		pthread_mutex_unlock(&pc.m);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	pthread_mutex_lock(&pc.m);
	pc.started = pc.helpers > 0 ? 1 : -1;
	want = pc.started > 0;
	pthread_mutex_unlock(&pc.m);
	return want;
}

void pcopy(void *dst, const void *src, size_t n)
{
	size_t parts = (n + PCOPY_PART - 1) / PCOPY_PART;
	int cancel;

	if (n < PCOPY_MIN || A_LOAD_RLX(&pc.want) == 0 ||
	    pthread_mutex_trylock(&pc.job_lock) != 0) {
		memcpy(dst, src, n);
		return;
	}
	if (!helpers_start()) {
		pthread_mutex_unlock(&pc.job_lock);
		memcpy(dst, src, n);
		return;
	}
	/* The wait below is a cancellation point: a thread cancelled there
	 * would leave m and job_lock held for good. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(&pc.m);
	pc.dst = dst;
	pc.src = src;
	pc.n = n;
	pc.parts = parts;
	__atomic_store_n(&pc.next, 0, __ATOMIC_RELAXED);
	pc.gen++;
	pthread_cond_broadcast(&pc.go);
	pthread_mutex_unlock(&pc.m);

	copy_parts(dst, src, n, parts);

	pthread_mutex_lock(&pc.m);
	while (pc.active > 0)
		pthread_cond_wait(&pc.done, &pc.m);
	pthread_mutex_unlock(&pc.m);
	pthread_mutex_unlock(&pc.job_lock);
	pthread_setcancelstate(cancel, NULL);
}

void pcopy_atfork_child(void)
{
	pthread_mutex_init(&pc.job_lock, NULL);
	pthread_mutex_init(&pc.m, NULL);
	pthread_cond_init(&pc.go, NULL);
	pthread_cond_init(&pc.done, NULL);
	pc.started = 0;
	pc.helpers = 0;
	pc.active = 0;
	pc.parts = 0;
	pc.next = 0;
}
