/*
 * The lock page, as the policy keeps it (include/vshare/proto.h, "The
 * lock page"): when a word is free, whom a take makes the holder, and
 * what junk in the page does. Clients are simulated by swapping words in
 * a page the test owns, as the shim does in the page it maps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched_policy.h"

static uint64_t fake_now;
static struct vs_lock_page page;

static uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

static const uint8_t GPU_A[VS_UUID_LEN] = { 0xa };
static const uint8_t GPU_B[VS_UUID_LEN] = { 0xb };

#define GiB (1ull << 30)

static struct sched *mk(uint32_t mode, uint64_t capacity)
{
	struct sched_cfg cfg;
	struct sched *s;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = mode;
	cfg.capacity = capacity;
	cfg.grace_ms = 500;
	cfg.skip_unresponsive = 1;
	fake_now = 1;
	memset(&page, 0, sizeof(page));
	s = sched_new(&cfg, fake_clock, NULL);
	assert_non_null(s);
	sched_lock_set(s, &page);
	return s;
}

static struct sched_client *client(struct sched *s, const uint8_t *gpu,
				   uint64_t fp_gib)
{
	struct sched_cred cred = { 100, 1000, 1000 };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	assert_int_equal(sched_attach(s, c, gpu, 10 * GiB), 0);
	assert_int_equal(sched_footprint(s, c, gpu, fp_gib * GiB, 0), 0);
	return c;
}

static uint64_t *word(struct sched *s, const uint8_t *gpu)
{
	const struct sched_gpu *g = sched_gpu_find(s, gpu);
	struct sched_gpu_info gi;

	assert_non_null(g);
	sched_gpu_info(g, &gi);
	assert_memory_equal(page.slot[gi.index].uuid, gpu, VS_UUID_LEN);
	return &page.slot[gi.index].word;
}

/* What the shim does: swap a free word for its token. */
static int take(struct sched *s, struct sched_client *c, const uint8_t *gpu)
{
	uint64_t expect = VS_LOCK_FREE;

	return __atomic_compare_exchange_n(word(s, gpu), &expect,
					   sched_client_token(c), 0,
					   __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static int count(struct sched *s, uint16_t type, const struct sched_client *c,
		 uint32_t reason)
{
	int n = 0;

	for (size_t i = 0; i < sched_out_count(s); i++) {
		const struct sched_out *o = sched_out_at(s, i);

		if (o->kind != SCHED_OUT_MSG || o->type != type ||
		    (c != NULL && o->client_id != sched_client_id(c)))
			continue;
		if (type == VS_MSG_DROP && reason && o->u.drop.reason != reason)
			continue;
		n++;
	}
	return n;
}

static struct sched_gpu_stats stats(struct sched *s, const uint8_t *gpu)
{
	struct sched_gpu_stats st;

	sched_gpu_stats(s, sched_gpu_find(s, gpu), &st);
	return st;
}

/* Free while nobody holds or waits; a take and its TOOK make the holder
 * without a GRANT; a release frees it again. */
static void test_take_and_release(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	(void)state;

	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	assert_true(take(s, a, GPU_A));
	assert_false(take(s, b, GPU_A)); /* one taker only */
	sched_out_clear(s);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_int_equal(stats(s, GPU_A).took, 1);
	assert_int_equal(stats(s, GPU_A).grants[VS_GRANT_EXCLUSIVE], 1);
	/* Another asks through the socket: it waits, the taker hears it. */
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	sched_free(s);
}

/* A request that arrives after a take and before its TOOK: the taker is
 * adopted first, the asker waits behind it, and the late TOOK changes
 * nothing. */
static void test_request_before_took(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	(void)state;

	assert_true(take(s, a, GPU_A));
	sched_out_clear(s);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	sched_out_clear(s);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 0);
	assert_int_equal(stats(s, GPU_A).took, 1);
	sched_free(s);
}

/* Never free while someone holds, when the memory does not fit, or for
 * a GPU nobody is attached to; each GPU has its own word. */
static void test_when_free(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 10 * GiB);
	struct sched_client *a = client(s, GPU_A, 4), *b = client(s, GPU_A, 4);
	struct sched_client *c = client(s, GPU_B, 1);
	(void)state;

	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	assert_true(*word(s, GPU_B) == VS_LOCK_FREE);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_true(*word(s, GPU_B) == VS_LOCK_FREE);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	/* 4 + 8 GiB on 10: whoever takes next may need a swap-in, which only
	 * a GRANT asks for. */
	assert_int_equal(sched_footprint(s, b, GPU_A, 8 * GiB, 0), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_int_equal(sched_footprint(s, b, GPU_A, 2 * GiB, 0), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	sched_client_del(s, c);
	assert_true(*word(s, GPU_B) == VS_LOCK_CLOSED);
	(void)b;
	sched_free(s);
}

/* A taker that exits before its TOOK is adopted as it goes; junk in a
 * word is closed, counted, and the word freed again for the others. */
static void test_dead_taker_and_junk(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	(void)state;

	/* It exits before its TOOK: its take counts as a grant. */
	assert_true(take(s, a, GPU_A));
	sched_client_del(s, a);
	assert_true(*word(s, GPU_A) == VS_LOCK_FREE);
	assert_int_equal(stats(s, GPU_A).took, 1);
	assert_int_equal(stats(s, GPU_A).lock_resets, 0);
	*word(s, GPU_A) = VS_LOCK_TOKEN_BIT | 12345;
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(stats(s, GPU_A).lock_resets, 1);
	assert_int_equal(stats(s, GPU_A).took, 1);
	sched_free(s);
}

/* A client that claims a take beside a holder (its own token written
 * over a closed word, or a TOOK with no take) counts as a holder, and is
 * told to give the GPU back at once; the holder keeps it. */
static void test_claims_beside_holder(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	struct sched_client *c = client(s, GPU_A, 1);
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	sched_out_clear(s);
	assert_int_equal(sched_took(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_DROP, b, VS_DROP_QUANTUM), 1);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 0);
	sched_out_clear(s);
	*word(s, GPU_A) = sched_client_token(c);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(c, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_DROP, c, VS_DROP_QUANTUM), 1);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	sched_free(s);
}

/* A status or metrics report adopts an untold take and leaves a free
 * word free. */
static void test_sync(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1);
	struct sched_client *b = client(s, GPU_B, 1);
	(void)state;

	assert_true(take(s, a, GPU_A));
	sched_out_clear(s);
	sched_lock_sync(s);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_true(*word(s, GPU_B) == VS_LOCK_FREE);
	assert_int_equal(sched_state_of(b, GPU_B), SCHED_ST_IDLE);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	assert_int_equal(stats(s, GPU_A).took, 1);
	sched_free(s);
}

/* Without a page nothing is published and TOOK still makes a holder. */
static void test_no_page(void **state)
{
	struct sched_cfg cfg;
	struct sched *s;
	struct sched_client *a;
	(void)state;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	memset(&page, 0, sizeof(page));
	s = sched_new(&cfg, fake_clock, NULL);
	a = client(s, GPU_A, 1);
	assert_true(page.slot[0].word == VS_LOCK_CLOSED);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_and_release),
		cmocka_unit_test(test_request_before_took),
		cmocka_unit_test(test_when_free),
		cmocka_unit_test(test_dead_taker_and_junk),
		cmocka_unit_test(test_claims_beside_holder),
		cmocka_unit_test(test_sync),
		cmocka_unit_test(test_no_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
