/*
 * Pacing (VS_GRANTF_PACE), driven by a fake clock: a GRANT to a member
 * whose class in force is batch says so when another member of its GPU
 * (mode not off) has the interactive class in force, holding, waiting or
 * idle; never to the interactive member, never without one, never in mode
 * off, and no longer once the interactive member left or spent its
 * budget. The lock word stays shut while such a GPU has another member,
 * so that every take goes through a GRANT.
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

/* Half-life 10 s: an interactive budget of 20% is 2 s of it. */
#define HALFLIFE_MS 10000u

static struct sched *mk(uint32_t mode)
{
	struct sched_cfg cfg = fixture_cfg(mode);
	struct sched *s;

	cfg.policy = SCHED_POLICY_FCFS;
	cfg.tq_ms = 60000; /* no quantum ends in these tests */
	cfg.halflife_ms = HALFLIFE_MS;
	cfg.cap_window_ms = 1000;
	cfg.capacity = 40 * GiB;
	memset(&page, 0, sizeof(page));
	memset(&words, 0, sizeof(words));
	s = fixture_new(&cfg, 1);
	sched_lock_set(s, &page, &words);
	return s;
}

/* A client of its own uid with a lock token, asking for `klass`, that
 * its user may have (`allowed`) within a budget of 20%, capped at
 * cap_pct; not attached yet. */
static struct sched_client *unattached(struct sched *s, uint32_t uid,
				       uint32_t klass, int allowed,
				       uint32_t cap_pct)
{
	struct sched_cred cred = { (int32_t)uid, uid, uid };
	struct sched_class_pol cp = { allowed, 20, cap_pct };
	struct sched_client *c = sched_client_new(s, &cred, "job", NULL);

	assert_non_null(c);
	sched_client_set_token(c, VS_LOCK_TOKEN_BIT | next_token++);
	sched_client_set_class(c, klass);
	sched_client_set_policy(s, c, &cp);
	return c;
}

/* The same, attached to GPU_A with 1 GiB. */
static struct sched_client *client(struct sched *s, uint32_t uid,
				   uint32_t klass, int allowed,
				   uint32_t cap_pct)
{
	struct sched_client *c = unattached(s, uid, klass, allowed, cap_pct);

	assert_int_equal(sched_attach(s, c, GPU_A, 80 * GiB), 0);
	assert_int_equal(sched_footprint(s, c, GPU_A, GiB, 0), 0);
	return c;
}

static struct sched_client *batch(struct sched *s, uint32_t uid)
{
	return client(s, uid, VS_CLASS_BATCH, 1, 0);
}

static struct sched_client *interactive(struct sched *s, uint32_t uid)
{
	return client(s, uid, VS_CLASS_INTERACTIVE, 1, 0);
}

/* c asks for GPU_A and is granted at once: the flags of its GRANT. */
static uint32_t granted_flags(struct sched *s, struct sched_client *c)
{
	const struct sched_out *o;

	sched_out_clear(s);
	assert_int_equal(sched_request(s, c, GPU_A), 0);
	o = out_msg(s, VS_MSG_GRANT, c);
	assert_non_null(o);
	return o->u.grant.flags;
}

/* c releases GPU_A, and `next` is granted: the flags of its GRANT. */
static uint32_t handed_flags(struct sched *s, struct sched_client *c,
			     struct sched_client *next)
{
	const struct sched_out *o;

	sched_out_clear(s);
	assert_int_equal(sched_released(s, c, GPU_A), 0);
	o = out_msg(s, VS_MSG_GRANT, next);
	assert_non_null(o);
	return o->u.grant.flags;
}

static uint32_t class_in_force(struct sched *s, struct sched_client *c)
{
	struct sched_member_info mi;

	assert_int_equal(sched_client_gpu(s, c, 0, &mi), 0);
	return mi.klass;
}

static uint64_t opening(void)
{
	for (uint32_t i = 0; i < VS_LOCK_SLOTS; i++)
		if (memcmp(page.slot[i].uuid, GPU_A, VS_UUID_LEN) == 0)
			return __atomic_load_n(&page.slot[i].open,
					       __ATOMIC_SEQ_CST);
	fail_msg("no slot names the GPU");
	return 0;
}

/* Beside an interactive member that is idle, holding (auto: both fit) or
 * waiting (passed over for its cap), a batch grant is paced; the
 * interactive member's own grant never is. */
static void test_paced_beside_interactive(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *b = batch(s, 1000), *i = interactive(s, 1001);
	uint32_t f;
	(void)state;

	/* Idle beside it; then it waits and preempts b, and its own grant
	 * is not paced. */
	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_int_equal(handed_flags(s, b, i), 0);
	assert_int_equal(class_in_force(s, i), VS_CLASS_INTERACTIVE);
	/* Nor beside another interactive member. */
	assert_int_equal(sched_released(s, i, GPU_A), 0);
	i = interactive(s, 1002);
	assert_int_equal(granted_flags(s, i), 0);
	sched_free(s);

	/* Holding beside it, a shared grant; oversubscribed too, the flags
	 * combine. */
	s = mk(VS_MODE_AUTO);
	b = batch(s, 1000);
	i = interactive(s, 1001);
	assert_int_equal(granted_flags(s, i), 0);
	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	assert_int_equal(out_msg(s, VS_MSG_GRANT, b)->u.grant.kind,
			 VS_GRANT_SHARED);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_int_equal(sched_released(s, i, GPU_A), 0);
	assert_int_equal(sched_footprint(s, b, GPU_A, 45 * GiB, 0), 0);
	f = granted_flags(s, b); /* 46 GiB attached in a view of 40 */
	assert_int_equal(f, VS_GRANTF_PACE | VS_GRANTF_OVERSUB);
	sched_free(s);

	/* Waiting beside it: its user's cap (10% of 1 s) passes it over. */
	s = mk(VS_MODE_ON);
	b = batch(s, 1000);
	i = client(s, 1001, VS_CLASS_INTERACTIVE, 1, 10);
	assert_int_equal(granted_flags(s, i), 0);
	fake_now += 200;
	sched_out_clear(s);
	assert_int_equal(sched_released(s, i, GPU_A), 0);
	assert_int_equal(sched_request(s, i, GPU_A), 0);
	assert_null(out_msg(s, VS_MSG_GRANT, i));
	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	assert_int_equal(class_in_force(s, i), VS_CLASS_INTERACTIVE);
	sched_free(s);
}

/* No interactive member in force, no pacing: batch beside batch, beside
 * a client that asked for the class but whose user may not have it, or
 * alone; and none in mode off, whoever shares the GPU. */
static void test_not_paced(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *b = batch(s, 1000), *i;
	(void)state;

	assert_int_equal(granted_flags(s, b), 0);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	batch(s, 1001);
	assert_int_equal(granted_flags(s, b), 0);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	i = client(s, 1002, VS_CLASS_INTERACTIVE, 0, 0);
	assert_int_equal(granted_flags(s, b), 0);
	assert_int_equal(class_in_force(s, i), VS_CLASS_BATCH);
	sched_free(s);

	s = mk(VS_MODE_OFF);
	b = batch(s, 1000);
	i = interactive(s, 1001);
	assert_int_equal(granted_flags(s, i), 0);
	assert_int_equal(granted_flags(s, b), 0);
	assert_int_equal(class_in_force(s, i), VS_CLASS_INTERACTIVE);
	sched_free(s);
}

/* Pacing ends with its reason: the interactive member leaves, or spends
 * its budget and counts as batch. */
static void test_pace_ends(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *b = batch(s, 1000), *i = interactive(s, 1001);
	const struct sched_out *o;
	(void)state;

	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	sched_client_del(s, i);
	assert_int_equal(granted_flags(s, b), 0);
	sched_free(s);

	/* It holds as interactive while b waits, past its 2 s of budget:
	 * it is dropped for it and counts as batch from then on. */
	s = mk(VS_MODE_ON);
	b = batch(s, 1000);
	i = interactive(s, 1001);
	assert_int_equal(granted_flags(s, i), 0);
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	fake_now += HALFLIFE_MS / 4;
	sched_out_clear(s);
	sched_tick(s);
	o = out_msg(s, VS_MSG_DROP, i);
	assert_non_null(o);
	assert_int_equal(o->why, SCHED_DROP_BUDGET);
	assert_int_equal(handed_flags(s, i, b), 0);
	assert_int_equal(class_in_force(s, i), VS_CLASS_BATCH);
	sched_free(s);
}

/* The lock word: shut while an interactive member shares the GPU with
 * another, open again once it left; an interactive member alone opens
 * it, and a batch client attaching beside it shuts it at once. */
static void test_lock_word(void **state)
{
	struct sched *s = mk(VS_MODE_ON);
	struct sched_client *b = batch(s, 1000), *i = interactive(s, 1001);
	(void)state;

	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	assert_int_equal(sched_released(s, b, GPU_A), 0);
	assert_int_equal(opening(), 0);
	sched_client_del(s, i);
	assert_int_not_equal(opening(), 0);
	sched_free(s);

	s = mk(VS_MODE_ON);
	i = interactive(s, 1001);
	assert_int_equal(granted_flags(s, i), 0);
	assert_int_equal(sched_released(s, i, GPU_A), 0);
	assert_int_not_equal(opening(), 0);
	/* The attach itself shuts it, before any other message. */
	b = unattached(s, 1000, VS_CLASS_BATCH, 1, 0);
	assert_int_equal(sched_attach(s, b, GPU_A, 80 * GiB), 0);
	assert_int_equal(opening(), 0);
	assert_int_equal(granted_flags(s, b), VS_GRANTF_PACE);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paced_beside_interactive),
		cmocka_unit_test(test_not_paced),
		cmocka_unit_test(test_pace_ends),
		cmocka_unit_test(test_lock_word),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
