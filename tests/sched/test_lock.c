/*
 * The lock page, as the policy keeps it (include/vshare/proto.h, "The
 * lock page"): when a GPU is open, whom a take makes the holder, what a
 * TOOK may claim, and what forged values in the words do. Clients are
 * simulated by swapping words in pages the test owns, as the shim does
 * in the pages it maps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"

static struct vs_lock_page page;
static struct vs_lock_words words;
static uint64_t next_token = 1;

static struct sched *mk(uint32_t mode, uint64_t capacity)
{
	struct sched_cfg cfg = fixture_cfg(mode);
	struct sched *s;

	cfg.capacity = capacity;
	memset(&page, 0, sizeof(page));
	memset(&words, 0, sizeof(words));
	s = fixture_new(&cfg, 1);
	sched_lock_set(s, &page, &words);
	return s;
}

/* A client with a token, as the daemon gives one after passing the page
 * (the daemon's are random; these only need to differ), whose client
 * reported the GPU's memory as total_gib (0: none reported). */
static struct sched_client *client_seeing(struct sched *s, const uint8_t *gpu,
					  uint64_t fp_gib, uint64_t total_gib)
{
	struct sched_cred cred = { 100, 1000, 1000 };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	assert_false(sched_token_in_use(s, VS_LOCK_TOKEN_BIT | next_token));
	sched_client_set_token(c, VS_LOCK_TOKEN_BIT | next_token++);
	assert_true(sched_token_in_use(s, sched_client_token(c)));
	assert_int_equal(sched_attach(s, c, gpu, total_gib * GiB), 0);
	assert_int_equal(sched_footprint(s, c, gpu, fp_gib * GiB, 0), 0);
	return c;
}

static struct sched_client *client(struct sched *s, const uint8_t *gpu,
				   uint64_t fp_gib)
{
	return client_seeing(s, gpu, fp_gib, 10);
}

/* The slot that names gpu, found as the shim finds it: by UUID. */
static uint32_t slot_index(struct sched *s, const uint8_t *gpu)
{
	assert_non_null(sched_gpu_find(s, gpu));
	for (uint32_t i = 0; i < VS_LOCK_SLOTS; i++)
		if (memcmp(page.slot[i].uuid, gpu, VS_UUID_LEN) == 0)
			return i;
	fail_msg("no slot names the GPU");
	return 0;
}

static uint64_t *word(struct sched *s, const uint8_t *gpu)
{
	return &words.w[slot_index(s, gpu)].word;
}

/* The slot's open number, 0: closed. */
static uint64_t opening(struct sched *s, const uint8_t *gpu)
{
	return __atomic_load_n(&page.slot[slot_index(s, gpu)].open,
			       __ATOMIC_SEQ_CST);
}

/* What the shim does (proto.h): read the opening from the state page,
 * swap the word from it to the token, read the opening again, and undo
 * the swap if it changed meanwhile. */
static int take(struct sched *s, struct sched_client *c, const uint8_t *gpu)
{
	uint64_t n = opening(s, gpu), expect = n;
	uint64_t tok = vs_lock_mark(sched_client_token(c), n);

	if (!(n & VS_LOCK_OPEN_BIT) ||
	    !__atomic_compare_exchange_n(word(s, gpu), &expect, tok, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		return 0;
	if (opening(s, gpu) == n)
		return 1;
	expect = tok;
	return !__atomic_compare_exchange_n(word(s, gpu), &expect,
					    VS_LOCK_CLOSED, 0, __ATOMIC_SEQ_CST,
					    __ATOMIC_SEQ_CST);
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

/* Open while nobody holds or waits; a take and its TOOK make the holder
 * without a GRANT; a release opens it again, with a new number. */
static void test_take_and_release(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	uint64_t n = opening(s, GPU_A);
	(void)state;

	assert_true(n & VS_LOCK_OPEN_BIT);
	assert_true(*word(s, GPU_A) == n);
	assert_true(take(s, a, GPU_A));
	assert_false(take(s, b, GPU_A)); /* one taker only */
	sched_out_clear(s);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_true(opening(s, GPU_A) == 0);
	assert_int_equal(stats(s, GPU_A).took, 1);
	assert_int_equal(stats(s, GPU_A).grants[VS_GRANT_EXCLUSIVE], 1);
	/* Another asks through the socket: it waits, the taker hears it. */
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_IDLE), 1);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_true(opening(s, GPU_A) == 0);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_true(opening(s, GPU_A) & VS_LOCK_OPEN_BIT);
	assert_true(opening(s, GPU_A) != n);
	assert_true(*word(s, GPU_A) == opening(s, GPU_A));
	assert_int_equal(stats(s, GPU_A).took_refused, 0);
	sched_free(s);
}

/* A request that arrives after a take and before its TOOK: the taker is
 * adopted first, the asker waits behind it, and the late TOOK is the
 * one that is not refused. */
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
	/* A second TOOK for the same take is one too many. */
	assert_int_equal(sched_took(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(stats(s, GPU_A).took_refused, 1);
	sched_free(s);
}

/* The scheduler closes the slot between a client's swap and its second
 * read: its token came back in the exchange, so the client holds (its
 * undo fails); a swap into a word closed before it is undone. */
static void test_close_under_take(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	uint64_t n = opening(s, GPU_A), expect = n;
	uint64_t tok = vs_lock_mark(sched_client_token(a), n);
	(void)state;

	assert_true(__atomic_compare_exchange_n(word(s, GPU_A), &expect, tok, 0,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST));
	assert_int_equal(sched_request(s, b, GPU_A), 0); /* closes, adopts */
	assert_true(opening(s, GPU_A) != n);
	expect = tok;
	assert_false(__atomic_compare_exchange_n(word(s, GPU_A), &expect,
						 VS_LOCK_CLOSED, 0,
						 __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST));
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	sched_free(s);
}

/* Never open while someone holds, when the memory does not fit, or for
 * a GPU nobody is attached to; each GPU has its own slot. */
static void test_when_free(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 10 * GiB);
	struct sched_client *a = client(s, GPU_A, 4), *b = client(s, GPU_A, 4);
	struct sched_client *c = client(s, GPU_B, 1);
	(void)state;

	assert_true(opening(s, GPU_A) != 0);
	assert_true(opening(s, GPU_B) != 0);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_true(opening(s, GPU_A) == 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	assert_true(opening(s, GPU_B) != 0);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_true(opening(s, GPU_A) != 0);
	/* 4 + 8 GiB on 10: whoever takes next may need a swap-in, which only
	 * a GRANT asks for. */
	assert_int_equal(sched_footprint(s, b, GPU_A, 8 * GiB, 0), 0);
	assert_true(opening(s, GPU_A) == 0);
	assert_int_equal(sched_footprint(s, b, GPU_A, 2 * GiB, 0), 0);
	assert_true(opening(s, GPU_A) != 0);
	sched_client_del(s, c);
	assert_true(opening(s, GPU_B) == 0);
	assert_true(*word(s, GPU_B) == VS_LOCK_CLOSED);
	(void)b;
	sched_free(s);
}

/* A client whose view of the GPU is smaller than the memory its members
 * use (it reported a smaller GPU) shuts an open word by its attach,
 * before any other message: a take would start it with nothing swapped
 * in where its GRANT would say to. It opens again once that client
 * left. */
static void test_small_view_attach(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 10 * GiB);
	struct sched_client *a = client(s, GPU_A, 4), *small;
	struct sched_cred cred = { 101, 1001, 1001 };
	(void)state;

	assert_true(opening(s, GPU_A) != 0);
	small = sched_client_new(s, &cred, "small", NULL);
	assert_non_null(small);
	sched_client_set_token(small, VS_LOCK_TOKEN_BIT | next_token++);
	assert_int_equal(sched_attach(s, small, GPU_A, 2 * GiB), 0);
	assert_true(opening(s, GPU_A) == 0);
	assert_true(*word(s, GPU_A) == VS_LOCK_CLOSED);
	sched_client_del(s, small);
	assert_true(opening(s, GPU_A) != 0);
	(void)a;
	sched_free(s);
}

/* A taker that exits before its TOOK is adopted as it goes; junk or a
 * token nobody has in an open word is counted, adopts nobody, and the
 * slot opens again for the others. */
static void test_dead_taker_and_junk(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	(void)state;

	/* It exits before its TOOK: its take counts as a grant. */
	assert_true(take(s, a, GPU_A));
	sched_client_del(s, a);
	assert_true(opening(s, GPU_A) != 0);
	assert_int_equal(stats(s, GPU_A).took, 1);
	assert_int_equal(stats(s, GPU_A).lock_resets, 0);
	*word(s, GPU_A) = VS_LOCK_TOKEN_BIT | 12345;
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(stats(s, GPU_A).lock_resets, 1);
	assert_int_equal(stats(s, GPU_A).took, 1);
	sched_free(s);
}

/* A TOOK with no take is refused and counted, whether the GPU is open,
 * held by another or waited for: it never makes a holder, never jumps
 * the queue, and the holder keeps the GPU. */
static void test_bare_took(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	struct sched_client *c = client(s, GPU_A, 1);
	(void)state;

	assert_int_equal(sched_took(s, b, GPU_A), VS_E_STATE);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_request(s, c, GPU_A), 0);
	sched_out_clear(s);
	for (int i = 0; i < 20; i++)
		assert_int_equal(sched_took(s, b, GPU_A), VS_E_STATE);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(c, GPU_A), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, a, VS_DROP_QUANTUM), 0);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	assert_int_equal(stats(s, GPU_A).took_refused, 21);
	/* The waiter is next, not the liar. */
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(c, GPU_A), SCHED_ST_HOLDING);
	sched_free(s);
}

/* Writing over a held GPU's closed word (an old opening's number, or a
 * token) takes nothing: the slot says closed, so no client swaps; the
 * scheduler counts it at its next decision and adopts nobody. */
static void test_forged_over_held(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	struct sched_client *c = client(s, GPU_A, 1);
	uint64_t n = opening(s, GPU_A);
	(void)state;

	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	*word(s, GPU_A) = n; /* the free value, as the attack wrote it */
	assert_false(take(s, c, GPU_A));
	assert_true(*word(s, GPU_A) == n);
	sched_out_clear(s);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(stats(s, GPU_A).lock_tampered, 1);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(c, GPU_A), SCHED_ST_IDLE);
	/* Another's mark written into the closed word: nobody adopted. */
	*word(s, GPU_A) = vs_lock_mark(sched_client_token(c), n);
	assert_int_equal(sched_took(s, c, GPU_A), VS_E_STATE);
	assert_int_equal(stats(s, GPU_A).lock_tampered, 2);
	assert_int_equal(sched_state_of(c, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_GRANT, NULL, 0), 0);
	sched_free(s);
}

/* A mark copied from an earlier opening's word (where a take left it
 * visible) is worth nothing now, whatever the victim does meanwhile; a
 * waiter's own mark for this opening (someone else wrote it: the shim
 * takes only with no REQUEST out) adopts nobody either. */
static void test_copied_mark(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	uint64_t seen;
	(void)state;

	assert_true(take(s, a, GPU_A));
	seen = *word(s, GPU_A);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_released(s, a, GPU_A), 0);
	assert_true(opening(s, GPU_A) != 0);
	*word(s, GPU_A) = seen; /* the copy, into the new opening */
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(stats(s, GPU_A).lock_resets, 1);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	/* a's mark for the open GPU appears, written by another, and then
	 * a asks: it is granted with a GRANT, not adopted silently (it
	 * would wait for a GRANT that never comes). */
	*word(s, GPU_A) = vs_lock_mark(sched_client_token(a),
				       opening(s, GPU_A));
	sched_out_clear(s);
	assert_int_equal(sched_request(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_GRANT, a, 0), 1);
	assert_int_equal(stats(s, GPU_A).lock_resets, 2);
	assert_int_equal(sched_took(s, a, GPU_A), VS_E_STATE);
	sched_free(s);
}

/* What remains while a GPU is open: a client writes the opening's
 * number back over a take, and a second client takes the same opening.
 * The last one found is adopted; the first one's TOOK is refused (its
 * shim gives the GPU back). */
static void test_two_takes_of_one_opening(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1), *b = client(s, GPU_A, 1);
	uint64_t n = opening(s, GPU_A);
	(void)state;

	assert_true(take(s, a, GPU_A));
	*word(s, GPU_A) = n;
	assert_true(take(s, b, GPU_A));
	assert_int_equal(sched_took(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(sched_took(s, b, GPU_A), 0);
	assert_int_equal(stats(s, GPU_A).took_refused, 1);
	sched_free(s);
}

/* A report (a snapshot) reads an untold take and changes nothing: the
 * taker shows as having taken, the word keeps its token, and nobody is
 * adopted or charged until the loop's next decision or the TOOK. */
static void test_report_changes_nothing(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *a = client(s, GPU_A, 1);
	const struct sched_client *sc;
	struct sched_member_info mi;
	struct sched *snap;
	(void)state;

	assert_true(take(s, a, GPU_A));
	sched_out_clear(s);
	snap = sched_snapshot(s);
	assert_non_null(snap);
	sc = sched_client_first(snap);
	assert_non_null(sc);
	assert_int_equal(sched_client_gpu(snap, sc, 0, &mi), 0);
	assert_int_equal(mi.state, SCHED_ST_IDLE);
	assert_true(mi.took);
	sched_snap_free(snap);
	assert_true(*word(s, GPU_A) ==
		    vs_lock_mark(sched_client_token(a), opening(s, GPU_A)));
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_IDLE);
	assert_int_equal(stats(s, GPU_A).took, 0);
	assert_int_equal(sched_out_count(s), 0);
	assert_int_equal(sched_took(s, a, GPU_A), 0);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_HOLDING);
	sched_free(s);
}

/* Made-up GPUs fill every slot of the pages: a GPU the configuration
 * names still gets one (that of a made-up GPU nobody is attached to),
 * opens, and is taken through the page; the GPU whose slot it took has
 * none, and is granted through REQUEST. */
static void test_slot_for_named_gpu(void **state)
{
	struct sched_gpu_cfg gc;
	struct sched_cfg cfg;
	struct sched *s;
	struct sched_client *fake[5], *real;
	struct sched_cred cred = { 1, 0, 0 }, rcred = { 2, 4242, 4242 };
	uint8_t u[VS_UUID_LEN];
	(void)state;

	memset(&gc, 0, sizeof(gc));
	memcpy(gc.uuid, GPU_B, VS_UUID_LEN);
	gc.set = SCHED_GCFG_MODE;
	gc.mode = VS_MODE_ON;
	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = VS_MODE_ON;
	cfg.uid_gpus = SCHED_MAX_CLIENT_GPUS;
	cfg.gpus = &gc;
	cfg.n_gpus = 1;
	memset(&page, 0, sizeof(page));
	memset(&words, 0, sizeof(words));
	s = sched_new(&cfg, fake_clock, NULL);
	sched_lock_set(s, &page, &words);
	for (int i = 0; i < 5; i++) {
		cred.uid = 1000 + (uint32_t)i;
		fake[i] = sched_client_new(s, &cred, "fake", NULL);
		attach_made_up(s, fake[i], (unsigned)i, GiB);
	}
	/* Every slot names a made-up GPU; the last of the fakes has none. */
	for (uint32_t i = 0; i < VS_LOCK_SLOTS; i++)
		assert_int_equal(page.slot[i].uuid[2], 0xff);
	sched_client_del(s, fake[0]); /* its GPUs are attached to nobody */
	real = sched_client_new(s, &rcred, "real", NULL);
	sched_client_set_token(real, VS_LOCK_TOKEN_BIT | next_token++);
	assert_int_equal(sched_attach(s, real, GPU_B, GiB), 0);
	assert_int_equal(sched_footprint(s, real, GPU_B, GiB, 0), 0);
	assert_true(opening(s, GPU_B) & VS_LOCK_OPEN_BIT);
	assert_true(take(s, real, GPU_B));
	assert_int_equal(sched_took(s, real, GPU_B), 0);
	assert_int_equal(sched_state_of(real, GPU_B), SCHED_ST_HOLDING);
	/* A made-up GPU of a client still attached kept its slot. */
	made_up_gpu(u, 1, 0);
	assert_int_equal(sched_request(s, fake[1], u), 0);
	assert_int_equal(sched_state_of(fake[1], u), SCHED_ST_HOLDING);
	sched_free(s);
}

/* Priority at kernel granularity: the slot's share is the interactive
 * budget while a program whose class in force is interactive is
 * attached (mode auto or on), 0 once it has gone, in mode off, or for
 * one whose user may not have the class; its count says how many such
 * programs are attached. */
static void test_prio_share(void **state)
{
	struct sched *s = mk(VS_MODE_AUTO, 40 * GiB);
	struct sched_class_pol yes = { 1, 30, 0 }, no = { 0, 30, 0 };
	struct sched_client *batch = client(s, GPU_A, 1), *inter, *inter2;
	uint32_t i = slot_index(s, GPU_A);

	(void)state;
	assert_int_equal(page.slot[i].prio, 0);
	inter = sched_client_new(s, &(struct sched_cred){ 101, 1001, 1001 },
				 "svc", NULL);
	assert_non_null(inter);
	sched_client_set_class(inter, VS_CLASS_INTERACTIVE);
	sched_client_set_policy(s, inter, &no);
	assert_int_equal(sched_attach(s, inter, GPU_A, 10 * GiB), 0);
	assert_int_equal(page.slot[i].prio, 0);
	sched_client_set_policy(s, inter, &yes);
	assert_int_equal(sched_footprint(s, inter, GPU_A, 1 * GiB, 0), 0);
	assert_int_equal(page.slot[i].prio, 30);
	assert_int_equal(page.slot[i].prio_n, 1);
	/* A second interactive program: the count, not the share. */
	inter2 = sched_client_new(s, &(struct sched_cred){ 102, 1002, 1002 },
				  "svc2", NULL);
	assert_non_null(inter2);
	sched_client_set_class(inter2, VS_CLASS_INTERACTIVE);
	sched_client_set_policy(s, inter2, &yes);
	assert_int_equal(sched_attach(s, inter2, GPU_A, 10 * GiB), 0);
	assert_int_equal(sched_footprint(s, inter2, GPU_A, 1 * GiB, 0), 0);
	assert_int_equal(page.slot[i].prio, 30);
	assert_int_equal(page.slot[i].prio_n, 2);
	sched_client_del(s, inter2);
	assert_int_equal(page.slot[i].prio_n, 1);
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_OFF), 1);
	assert_int_equal(page.slot[i].prio, 0);
	assert_int_equal(page.slot[i].prio_n, 0);
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_ON), 1);
	assert_int_equal(page.slot[i].prio, 30);
	sched_client_del(s, inter);
	assert_int_equal(page.slot[i].prio, 0);
	assert_int_equal(page.slot[i].prio_n, 0);
	sched_client_del(s, batch);
	sched_free(s);
}

/* An interactive program of the given protocol version and footprint,
 * whose client reported the GPU's memory as total_gib (0: none). */
static struct sched_client *inter_seeing(struct sched *s, uint32_t proto,
					 uint64_t fp_gib, int allowed,
					 uint64_t total_gib)
{
	struct sched_class_pol pol = { allowed, 20, 0 };
	struct sched_client *c = sched_client_new(
		s, &(struct sched_cred){ 102, 1002, 1002 }, "svc", NULL);

	assert_non_null(c);
	sched_client_set_token(c, VS_LOCK_TOKEN_BIT | next_token++);
	sched_client_set_class(c, VS_CLASS_INTERACTIVE);
	sched_client_set_proto(c, proto);
	sched_client_set_policy(s, c, &pol);
	assert_int_equal(sched_attach(s, c, GPU_A, total_gib * GiB), 0);
	assert_int_equal(sched_footprint(s, c, GPU_A, fp_gib * GiB, 0), 0);
	return c;
}

static struct sched_client *inter_client(struct sched *s, uint32_t proto,
					 uint64_t fp_gib, int allowed)
{
	return inter_seeing(s, proto, fp_gib, allowed, 10);
}

/* Mode on, where memory stays resident (each sees 10 GiB): an
 * interactive waiter holds the
 * GPU beside the batch holder (priority keeps their work apart), with no
 * drop of the batch holder; not where a gate is older than priority or
 * the two do not fit, and not once its class has lapsed. */
static void test_cohold_on(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 40 * GiB);
	struct sched_client *b = client(s, GPU_A, 1), *i, *b2;

	(void)state;
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	i = inter_client(s, VS_PROTO_VERSION, 1, 1);
	sched_out_clear(s);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_HOLDING);
	assert_int_equal(count(s, VS_MSG_DROP, b, 0), 0);
	/* A second batch program waits: one batch member per pair. */
	b2 = client(s, GPU_A, 1);
	sched_client_set_proto(b2, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b2, GPU_A), 0);
	assert_int_equal(sched_state_of(b2, GPU_A), SCHED_ST_WAITING);
	sched_client_del(s, b2);
	/* Its user loses the class: batch beside batch in mode on, it goes. */
	sched_out_clear(s);
	sched_client_set_policy(s, i, &(struct sched_class_pol){ 0, 20, 0 });
	assert_int_equal(sched_footprint(s, i, GPU_A, 1 * GiB, 1), 0);
	assert_int_equal(count(s, VS_MSG_DROP, i, 0), 1);
	assert_int_equal(count(s, VS_MSG_DROP, b, 0), 0);
	sched_client_del(s, i);
	/* A gate older than priority: the hand-off as before. */
	i = inter_client(s, 7, 1, 1);
	sched_out_clear(s);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_WAITING);
	assert_int_equal(count(s, VS_MSG_DROP, b, 0), 1);
	sched_client_del(s, i);
	sched_client_del(s, b);
	/* Memory that does not fit: serialized. */
	b = client(s, GPU_A, 6);
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	i = inter_client(s, VS_PROTO_VERSION, 5, 1);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_WAITING);
	sched_client_del(s, i);
	sched_client_del(s, b);
	sched_free(s);
}

/* Mode on with no capacity configured and no driver report: a member
 * that reports no memory size has no view of the capacity, and does not
 * share the GPU on a holder's view alone (the fit would be lost with
 * that holder), neither as the waiter nor as the holder beside whom
 * one waits, nor after a switch from mode auto; two that both report a
 * size do. */
static void test_cohold_needs_views(void **state)
{
	struct sched *s = mk(VS_MODE_ON, 0);
	struct sched_client *b = client(s, GPU_A, 1), *i;

	(void)state;
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	i = inter_seeing(s, VS_PROTO_VERSION, 1, 1, 0);
	sched_out_clear(s);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_WAITING);
	/* The hand-off instead: the batch holder is told to drop. */
	assert_true(count(s, VS_MSG_DROP, b, 0) >= 1);
	sched_client_del(s, i);
	sched_client_del(s, b);
	/* The holder with no view, the waiter with one: the same. */
	b = client_seeing(s, GPU_A, 1, 0);
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
	i = inter_client(s, VS_PROTO_VERSION, 1, 1);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_WAITING);
	sched_client_del(s, i);
	sched_client_del(s, b);
	/* Formed in mode auto, where the group's one view bounds it: a
	 * switch to mode on drops the member without a view. */
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_AUTO),
			 1);
	b = client(s, GPU_A, 1);
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	i = inter_seeing(s, VS_PROTO_VERSION, 1, 1, 0);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_HOLDING);
	sched_out_clear(s);
	assert_int_equal(sched_set_mode(s, VS_TARGET_ALL, 0, NULL, VS_MODE_ON),
			 1);
	assert_int_equal(count(s, VS_MSG_DROP, i, 0), 1);
	assert_int_equal(count(s, VS_MSG_DROP, b, 0), 0);
	sched_client_del(s, i);
	sched_client_del(s, b);
	/* Both with a view: they share. */
	b = client(s, GPU_A, 1);
	sched_client_set_proto(b, VS_PROTO_VERSION);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	i = inter_client(s, VS_PROTO_VERSION, 1, 1);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(sched_state_of(i, GPU_A), SCHED_ST_HOLDING);
	sched_client_del(s, i);
	sched_client_del(s, b);
	sched_free(s);
}

/* Without a page nothing is published, and a TOOK is refused: nobody
 * can have taken anything. */
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
	memset(&words, 0, sizeof(words));
	s = sched_new(&cfg, fake_clock, NULL);
	a = client(s, GPU_A, 1);
	assert_true(page.slot[0].open == 0);
	assert_true(words.w[0].word == VS_LOCK_CLOSED);
	assert_int_equal(sched_took(s, a, GPU_A), VS_E_STATE);
	assert_int_equal(sched_state_of(a, GPU_A), SCHED_ST_IDLE);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_and_release),
		cmocka_unit_test(test_request_before_took),
		cmocka_unit_test(test_close_under_take),
		cmocka_unit_test(test_when_free),
		cmocka_unit_test(test_small_view_attach),
		cmocka_unit_test(test_dead_taker_and_junk),
		cmocka_unit_test(test_bare_took),
		cmocka_unit_test(test_forged_over_held),
		cmocka_unit_test(test_two_takes_of_one_opening),
		cmocka_unit_test(test_copied_mark),
		cmocka_unit_test(test_slot_for_named_gpu),
		cmocka_unit_test(test_report_changes_nothing),
		cmocka_unit_test(test_prio_share),
		cmocka_unit_test(test_cohold_on),
		cmocka_unit_test(test_cohold_needs_views),
		cmocka_unit_test(test_no_page),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
