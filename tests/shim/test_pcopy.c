/* Unit tests of the parallel memcpy (util/pcopy.c): every size and
 * alignment copied exactly, helpers that really take pieces, copies from
 * several threads at once, none at all, and a fork child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "pcopy.h"

/* A pattern no shifted copy of itself matches. */
static void fill(unsigned char *p, size_t n, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (unsigned char)(x >> 16);
	}
}

/* Copy n bytes at the given offsets through pcopy; the bytes around the
 * destination must stay untouched. */
static void check_copy(size_t n, size_t soff, size_t doff, unsigned seed)
{
	unsigned char *src = malloc(n + soff + 64);
	unsigned char *dst = malloc(n + doff + 64);

	assert_non_null(src);
	assert_non_null(dst);
	fill(src, n + soff + 64, seed);
	memset(dst, 0xa5, n + doff + 64);
	pcopy(dst + doff, src + soff, n);
	assert_memory_equal(dst + doff, src + soff, n);
	for (size_t i = 0; i < doff; i++)
		assert_int_equal(dst[i], 0xa5);
	for (size_t i = n + doff; i < n + doff + 64; i++)
		assert_int_equal(dst[i], 0xa5);
	free(src);
	free(dst);
}

static void test_sizes(void **state)
{
	size_t sizes[] = { 0, 1, 4095, PCOPY_MIN - 1, PCOPY_MIN, PCOPY_MIN + 1,
			   PCOPY_MIN + PCOPY_PART - 1, 3 * PCOPY_MIN + 17,
			   (16u << 20) + 3 };

	(void)state;
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		check_copy(sizes[i], 0, 0, (unsigned)i);
		check_copy(sizes[i], 3, 7, (unsigned)i + 100);
	}
	/* The helpers started at the first large copy. */
	assert_int_equal(pcopy_helpers(), 3);
}

/* Helpers take pieces of a large copy (they may wake after the caller
 * took them all once or twice, never every time). */
static void test_helpers_work(void **state)
{
	size_t n = 32u << 20;
	unsigned char *src = malloc(n), *dst = malloc(n);
	uint64_t before = pcopy_helped();

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	fill(src, n, 9);
	for (int i = 0; i < 50 && pcopy_helped() == before; i++) {
		memset(dst, 0, n);
		pcopy(dst, src, n);
		assert_memory_equal(dst, src, n);
	}
	assert_true(pcopy_helped() > before);
	free(src);
	free(dst);
}

struct worker {
	unsigned seed;
	int ok;
};

static void *copier(void *arg)
{
	struct worker *w = arg;
	size_t n = 3 * PCOPY_MIN + 5;
	unsigned char *src = malloc(n), *dst = malloc(n);

	w->ok = src != NULL && dst != NULL;
	for (int i = 0; w->ok && i < 40; i++) {
		fill(src, n, w->seed + (unsigned)i);
		pcopy(dst, src, n);
		w->ok = memcmp(dst, src, n) == 0;
	}
	free(src);
	free(dst);
	return NULL;
}

/* Several threads at once: one has the helpers, the others copy alone;
 * every copy exact. */
static void test_threads(void **state)
{
	pthread_t t[4];
	struct worker w[4];

	(void)state;
	for (int i = 0; i < 4; i++) {
		w[i].seed = 1000u * (unsigned)i;
		assert_int_equal(pthread_create(&t[i], NULL, copier, &w[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_true(w[i].ok);
	}
}

/* In a fork child, after the shim's fork handler: with `helpers`
 * wanted (-1: as the parent set up), a large copy is exact and leaves
 * `want_running` helpers. The child's exit status says what failed. */
static void child_copies(int helpers, int want_running)
{
	size_t n = 8u << 20;
	unsigned char *src, *dst;
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		pcopy_atfork_child();
		if (helpers >= 0)
			pcopy_setup(helpers);
		src = malloc(n);
		dst = malloc(n);
		if (pcopy_helpers() != 0 || src == NULL || dst == NULL)
			_exit(2);
		fill(src, n, 77);
		pcopy(dst, src, n);
		_exit(memcmp(dst, src, n) != 0 ? 3 :
		      pcopy_helpers() == want_running ? 0 : 4);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A fork child has none of the parent's helpers: it starts its own. */
static void test_fork_child(void **state)
{
	(void)state;
	assert_true(pcopy_helpers() > 0);
	child_copies(-1, 3);
}

/* With no helpers (VSHARE_COPY_THREADS=0) a large copy is one memcpy
 * and starts no thread (a process of its own, set up before any copy). */
static void test_none(void **state)
{
	(void)state;
	child_copies(0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_helpers_work),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork_child),
		cmocka_unit_test(test_none),
	};

	pcopy_setup(3);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
