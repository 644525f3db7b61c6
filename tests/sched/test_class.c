/*
 * Classes and caps, driven by a fake clock: an interactive program is
 * granted before batch waiters and preempts a batch holder at once, only
 * when its user may have the class; one that computes non-stop gets its
 * budget of interactive time and then its fair share; a capped user gets
 * its share of the GPU's wall time over the window, alone or not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched_world.h"

/* The drops of one reason on g, from the counters. */
static uint64_t sched_drops_of(const struct sched *s, const struct sched_gpu *g,
			       uint32_t why)
{
	struct sched_gpu_stats st;

	sched_gpu_stats(s, g, &st);
	return st.drops[why];
}

/* Notebook bursts every second beside a training job of another user:
 * interactive, every burst waits for the training job's drain alone (no
 * slice); batch, some wait for the slice. The training job keeps what the
 * bursts leave. */
static void bursts(uint32_t klass, int allowed, uint64_t *max_wait,
		   uint64_t *train_ms)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct world w;
	struct prog *train, *nb;

	world_init(&w, &cfg);
	w.gap_ms = 300;
	w.idle_ms = 5; /* the shim's adaptive idle gap */
	train = add(&w, TRAIN, 2000);
	run(&w, 60000);
	nb = add(&w, BURSTY, 3000);
	add_class(&w, nb, klass, allowed, 20, 0);
	reset_counts(&w);
	run(&w, 180000);
	assert_true(nb->waits > 50);
	*max_wait = nb->max_wait;
	*train_ms = train->held_ms;
	sched_free(w.s);
}

static void test_interactive_preempts(void **state)
{
	uint64_t max_wait, train_ms;
	(void)state;

	bursts(VS_CLASS_INTERACTIVE, 1, &max_wait, &train_ms);
	/* The drain (50 ms) and a step each way. */
	assert_true(max_wait <= 50 + 2 * STEP_MS);
	assert_true(train_ms * 100 >= 85 * 120000);
	/* The same program in batch waits for the training job's slice. */
	bursts(VS_CLASS_BATCH, 1, &max_wait, &train_ms);
	assert_true(max_wait > 500);
	/* Asked for, but its user may not: batch. */
	bursts(VS_CLASS_INTERACTIVE, 0, &max_wait, &train_ms);
	assert_true(max_wait > 500);
}

/* Two waiters behind a holder: the interactive one goes first, though it
 * asked last, and the status says which class each is in. */
static void test_order_and_status(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FCFS);
	struct world w;
	struct prog *h, *b, *i;
	struct sched_member_info mi;
	(void)state;

	world_init(&w, &cfg);
	h = add(&w, HUNG, 1000);
	b = add(&w, HUNG, 2000);
	i = add(&w, HUNG, 3000);
	add_class(&w, i, VS_CLASS_INTERACTIVE, 1, 20, 0);
	ask(&w, h);
	deliver(&w);
	assert_true(h->holding);
	ask(&w, b);
	deliver(&w);
	fake_now += 10;
	ask(&w, i);
	deliver(&w);
	/* The interactive waiter preempts the batch holder at once. */
	assert_int_equal(sched_client_gpu(w.s, i->c, 0, &mi), 0);
	assert_int_equal(mi.klass, VS_CLASS_INTERACTIVE);
	assert_int_equal(mi.klass_want, VS_CLASS_INTERACTIVE);
	assert_int_equal(mi.position, 1);
	assert_int_equal(mi.why, SCHED_WHY_RELEASE);
	assert_int_equal(sched_client_gpu(w.s, b->c, 0, &mi), 0);
	assert_int_equal(mi.klass, VS_CLASS_BATCH);
	assert_int_equal(mi.position, 2);
	release(&w, h);
	deliver(&w);
	assert_true(i->holding);
	assert_false(b->holding);
	sched_free(w.s);
}

/* A program that claims interactive and computes non-stop beside a
 * training job: its interactive time stays within the budget (plus what
 * a drain and the hysteresis cost) in every minute (the half-life), the
 * first one too, and then it gets its fair share as batch: the training
 * job is not starved. */
static void test_budget(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct world w;
	struct prog *train, *hog;
	uint64_t minute = 60000, t = 0, sum_int = 0, sum_train = 0;
	(void)state;

	world_init(&w, &cfg);
	train = add(&w, TRAIN, 2000);
	hog = add(&w, TRAIN, 3000);
	add_class(&w, hog, VS_CLASS_INTERACTIVE, 1, 20, 0);
	for (int i = 0; i < 10; i++) {
		reset_counts(&w);
		t += minute;
		run(&w, t);
		assert_true(hog->held_int_ms * 100 <= 23 * minute);
		sum_int += hog->held_int_ms;
		sum_train += train->held_ms;
	}
	/* The budget is used, not just respected. */
	assert_true(sum_int * 100 >= 10 * 10 * minute);
	assert_true(sum_train * 100 >= 40 * 10 * minute);
	sched_free(w.s);
}

/* As the daemon runs the policy: the clock jumps to its next deadline or
 * to a program's next release, whichever comes first, and nothing else
 * ticks it. */
static void run_by_deadlines(struct world *w, uint64_t until)
{
	while (fake_now < until) {
		uint64_t next = sched_next_deadline(w->s);

		for (int i = 0; i < w->n; i++)
			if (w->p[i].holding && w->p[i].release_at_set &&
			    w->p[i].release_at < next)
				next = w->p[i].release_at;
		fake_now = next > until ? until : next > fake_now ? next : fake_now + 1;
		sched_tick(w->s);
		deliver(w);
		for (int i = 0; i < w->n; i++) {
			act(w, &w->p[i]);
			deliver(w);
		}
	}
}

/* A program past its budget waits as batch behind a batch holder whose
 * quantum is long; once its budget is back (its first interactive
 * seconds leave the window, a minute after they were charged) it goes
 * first and preempts at once, without waiting for the quantum's end or
 * any other event of the holder. */
static void test_budget_back_on_time(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FCFS);
	struct world w;
	struct prog *train, *hog;
	struct sched_member_info mi;
	uint64_t over_at;
	(void)state;

	cfg.tq_ms = 300000;
	world_init(&w, &cfg);
	train = add(&w, TRAIN, 2000);
	hog = add(&w, TRAIN, 3000);
	add_class(&w, hog, VS_CLASS_INTERACTIVE, 1, 20, 0);
	/* It preempts the training job and holds as interactive until its
	 * budget (12 s of the minute) is spent, then waits as batch. */
	while (!hog->holding && fake_now < 1000)
		run_by_deadlines(&w, fake_now + 1);
	assert_true(hog->holding);
	while (!hog->waiting && fake_now < 20000)
		run_by_deadlines(&w, fake_now + 1);
	over_at = fake_now;
	assert_true(over_at >= 12000 && over_at < 13000);
	assert_int_equal(sched_client_gpu(w.s, hog->c, 0, &mi), 0);
	assert_int_equal(mi.klass, VS_CLASS_BATCH);
	/* Its budget is back once 1.2 s of the 12 leave the window, about
	 * 61.2 s after it began; the training job's quantum ends at 312 s. */
	run_by_deadlines(&w, 60500);
	assert_true(hog->waiting);
	run_by_deadlines(&w, 62000);
	assert_true(hog->holding);
	assert_int_equal(sched_client_gpu(w.s, hog->c, 0, &mi), 0);
	assert_int_equal(mi.klass, VS_CLASS_INTERACTIVE);
	assert_false(train->holding);
	sched_free(w.s);
}

/* A user capped at 25%: alone on the GPU it holds 25 +- 3% of a minute;
 * beside another user's training job, no more. */
static void test_cap(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct world w;
	struct prog *capped, *other;
	struct sched_member_info mi;
	int saw_cap = 0;
	(void)state;

	cfg.cap_window_ms = 10000;
	world_init(&w, &cfg);
	capped = add(&w, TRAIN, 2000);
	add_class(&w, capped, VS_CLASS_BATCH, 1, 20, 25);
	run(&w, 60000);
	reset_counts(&w);
	run(&w, 120000);
	assert_true(capped->held_ms >= 22 * 600 && capped->held_ms <= 28 * 600);
	other = add(&w, TRAIN, 3000);
	reset_counts(&w);
	while (fake_now < 240000) {
		run(&w, fake_now + 100);
		if (sched_client_gpu(w.s, capped->c, 0, &mi) == 0 &&
		    mi.why == SCHED_WHY_CAP) {
			saw_cap = 1;
			assert_int_equal(mi.cap_pct, 25);
			assert_true(mi.cap_used_pct >= 20.0);
		}
	}
	assert_true(saw_cap);
	assert_true(capped->held_ms <= 28 * 1200);
	assert_true(other->held_ms >= 60 * 1200);
	sched_free(w.s);
}

/* A capped user's holder at its cap, when a reload lifts the cap: the
 * daemon hands the new policy to the user's clients one at a time, and
 * the holder must not be dropped for the cap while another client of
 * its user (attached, not asking) takes it first: the user's record has
 * the new policy by then. Without the reload it is dropped. */
static int cap_drop_at_reload(int lift)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct sched_class_pol capped = { 1, 20, 25 }, lifted = { 1, 20, 0 };
	struct sched_cred cred = { 1999, 2000, 2000 };
	struct world w;
	struct prog *holder;
	struct sched_client *other;
	int dropped;

	cfg.cap_window_ms = 10000;
	world_init(&w, &cfg);
	holder = add(&w, TRAIN, 2000);
	add_class(&w, holder, VS_CLASS_BATCH, 1, 20, 25);
	other = sched_client_new(w.s, &cred, "o", NULL);
	assert_non_null(other);
	assert_int_equal(sched_attach(w.s, other, GPU_A, 80 * GiB), 0);
	sched_client_set_policy(w.s, other, &capped);
	run(&w, 100);
	assert_true(holder->holding);
	/* Past the 2.5 s of the cap, before a step of the policy saw it. */
	fake_now = 2700;
	sched_out_clear(w.s);
	if (lift) {
		sched_client_set_policy(w.s, other, &lifted);
		sched_client_set_policy(w.s, holder->c, &lifted);
	} else {
		sched_tick(w.s);
	}
	dropped = sched_drops_of(w.s, sched_gpu_find(w.s, GPU_A),
				 SCHED_DROP_CAP) != 0;
	sched_free(w.s);
	return dropped;
}

static void test_cap_lifted_mid_reload(void **state)
{
	(void)state;
	assert_true(cap_drop_at_reload(0));
	assert_false(cap_drop_at_reload(1));
}

/* Five users, each a non-stop interactive claimer within its own budget,
 * and a batch job of a sixth: budgets are per user, so without a bound
 * on the class the five take five budgets, all of the GPU (the job got
 * 1% of it). The class as a whole holds at most interactive_total_pct
 * (50%) of every window while batch waits, past it the claimers compete
 * as batch, and the job keeps at least its fair share of what the class
 * leaves: a sixth of the other half, 8%. */
static void test_class_total(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct world w;
	struct prog *victim, *hog[5];
	struct sched_member_info mi;
	struct sched_gpu_info gi;
	uint64_t minute = 60000, t = 60000, held_int;
	(void)state;

	cfg.total_pct = 50;
	world_init(&w, &cfg);
	victim = add(&w, TRAIN, 2000);
	for (int i = 0; i < 5; i++) {
		hog[i] = add(&w, TRAIN, 3000 + (uint32_t)i);
		add_class(&w, hog[i], VS_CLASS_INTERACTIVE, 1, 20, 0);
	}
	run(&w, t);
	for (int k = 0; k < 5; k++) {
		reset_counts(&w);
		t += minute;
		run(&w, t);
		held_int = 0;
		for (int i = 0; i < 5; i++)
			held_int += hog[i]->held_int_ms;
		print_message("minute %d: victim %.1f%%, class %.1f%%\n", k + 2,
			      (double)victim->held_ms * 100.0 / (double)minute,
			      (double)held_int * 100.0 / (double)minute);
		assert_true(victim->held_ms * 100 >= 8 * minute);
		/* The class's bound, and the drain that ends it. */
		assert_true(held_int * 100 <= 52 * minute);
	}
	/* Status: the GPU's total beside each user's budget. */
	assert_int_equal(sched_client_gpu(w.s, hog[0]->c, 0, &mi), 0);
	assert_int_equal(mi.total_pct, 50);
	assert_true(mi.total_used_pct > 40.0 && mi.total_used_pct <= 52.0);
	sched_gpu_info(sched_gpu_find(w.s, GPU_A), &gi);
	assert_int_equal(gi.total_pct, 50);
	sched_free(w.s);
}

/* Two interactive programs of two users, co-held in auto beside a batch
 * waiter that does not fit, spend the class's total twice as fast: the
 * policy is next due when the two together reach it (half the total),
 * not when one alone would (the daemon's timer waits for that). */
static void test_total_two_holders(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct world w;
	struct prog *a, *b, *big;
	uint64_t t0;
	(void)state;

	cfg.mode = VS_MODE_AUTO;
	cfg.total_pct = 10;
	cfg.halflife_ms = 10000; /* the total: 1 s of every 10 */
	world_init(&w, &cfg);
	a = add(&w, TRAIN, 3000);
	add_class(&w, a, VS_CLASS_INTERACTIVE, 1, 100, 0);
	b = add(&w, TRAIN, 3001);
	add_class(&w, b, VS_CLASS_INTERACTIVE, 1, 100, 0);
	run(&w, 100);
	assert_true(a->holding && b->holding);
	big = add(&w, TRAIN, 2000);
	assert_int_equal(sched_footprint(w.s, big->c, GPU_A, 79 * GiB, 0), 0);
	run(&w, fake_now + STEP_MS);
	assert_true(big->waiting && a->holding && b->holding);
	t0 = fake_now;
	assert_true(sched_next_deadline(w.s) <= t0 + 500);
	/* And the drop comes then. */
	while (sched_drops_of(w.s, sched_gpu_find(w.s, GPU_A),
			      SCHED_DROP_TOTAL) == 0 && fake_now < t0 + 2000)
		run(&w, fake_now + STEP_MS);
	assert_true(fake_now <= t0 + 500 + STEP_MS);
	sched_free(w.s);
}

/* A program that claims interactive beside two batch jobs: each fair
 * preemption of the training job (by the other batch job, a short one)
 * leaves it off the GPU through an interactive turn of 2 s too. Counted
 * as what the preemption cost, those turns made the slice 18 s (26 s
 * with the defaults), and the short job then waited that long. They are
 * the class's, counted apart, and the slice stays under its cap after
 * 100 of them; once the claimer has left, the short job preempts again
 * within a slice. */
static void test_slice_capped(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR);
	struct sched_gpu_info gi;
	struct sched_client *v, *b, *ic;
	struct sched_cred cv = { 1, 2000, 2000 }, cb = { 2, 3000, 3000 };
	struct sched_cred ci = { 3, 4000, 4000 };
	struct sched_class_pol pol = { 1, 100, 0 };
	const struct sched_gpu *g;
	uint64_t fair0, asked;
	(void)state;

	fake_now = 1;
	struct sched *s = sched_new(&cfg, fake_clock, NULL);
	assert_non_null(s);
	v = sched_client_new(s, &cv, "train", NULL);
	b = sched_client_new(s, &cb, "short", NULL);
	ic = sched_client_new(s, &ci, "claimer", NULL);
	sched_client_set_class(ic, VS_CLASS_INTERACTIVE);
	sched_client_set_policy(s, ic, &pol);
	assert_int_equal(sched_attach(s, v, GPU_A, 80 * GiB), 0);
	assert_int_equal(sched_attach(s, b, GPU_A, 80 * GiB), 0);
	assert_int_equal(sched_attach(s, ic, GPU_A, 80 * GiB), 0);
	g = sched_gpu_find(s, GPU_A);
	assert_int_equal(sched_request(s, v, GPU_A), 0);
	for (int i = 0; i < 100; i++) {
		sched_gpu_info(g, &gi);
		/* The training job holds past its slice; the short job asks
		 * and preempts it; the claimer asks during its drain. */
		fake_now += gi.slice_ms + 10;
		sched_tick(s);
		sched_out_clear(s);
		assert_int_equal(sched_request(s, b, GPU_A), 0);
		assert_int_equal(sched_state_of(v, GPU_A), SCHED_ST_HOLDING);
		assert_non_null(out_msg(s, VS_MSG_DROP, v));
		sched_out_clear(s);
		fake_now += 20;
		assert_int_equal(sched_request(s, ic, GPU_A), 0);
		fake_now += 30;
		assert_int_equal(sched_released(s, v, GPU_A), 0);
		assert_int_equal(sched_request(s, v, GPU_A), 0);
		assert_int_equal(sched_state_of(ic, GPU_A), SCHED_ST_HOLDING);
		/* Its turn, ended by itself; then the short job's. */
		fake_now += 2000;
		sched_tick(s);
		assert_int_equal(sched_released(s, ic, GPU_A), 0);
		assert_int_equal(sched_state_of(b, GPU_A), SCHED_ST_HOLDING);
		fake_now += 20;
		assert_int_equal(sched_released(s, b, GPU_A), 0);
		assert_int_equal(sched_state_of(v, GPU_A), SCHED_ST_HOLDING);
		sched_out_clear(s);
	}
	sched_gpu_info(g, &gi);
	print_message("slice %u ms (cap %u), cost %llu ms, the class's %llu "
		      "ms\n", gi.slice_ms, gi.slice_max_ms,
		      (unsigned long long)gi.cost_ms,
		      (unsigned long long)gi.class_cost_ms);
	assert_int_equal(gi.slice_max_ms, SCHED_SLICE_CAP_MULT * 1000);
	assert_true(gi.slice_ms <= gi.slice_max_ms);
	assert_true(gi.class_cost_ms >= 2000);
	/* The claimer leaves: the short job preempts the training job
	 * within a slice of its request, as fair share says. */
	sched_client_del(s, ic);
	sched_out_clear(s);
	fake_now += 5000;
	sched_tick(s);
	sched_out_clear(s);
	fair0 = sched_drops_of(s, g, SCHED_DROP_FAIR);
	asked = fake_now;
	assert_int_equal(sched_request(s, b, GPU_A), 0);
	while (sched_drops_of(s, g, SCHED_DROP_FAIR) == fair0 &&
	       fake_now < asked + 60000) {
		fake_now += 5;
		sched_tick(s);
		sched_out_clear(s);
	}
	assert_true(sched_drops_of(s, g, SCHED_DROP_FAIR) > fair0);
	assert_true(fake_now <= asked + SCHED_SLICE_CAP_MULT * 1000 + 100);
	sched_free(s);
}

/* interactive_total_pct per GPU: a GPU's own entry in gpus over the
 * node's default, at its first attach and at a reload, which takes the
 * file's values (no admin sets it at run time). */
static void test_total_per_gpu(void **state)
{
	struct sched_cfg cfg = fair_cfg(SCHED_POLICY_FAIR), old;
	struct sched_gpu_cfg gc;
	struct sched_gpu_info gi;
	struct sched_client *c;
	struct sched_cred cr = { 1, 1000, 1000 };
	struct sched *s;
	(void)state;

	memset(&gc, 0, sizeof(gc));
	memcpy(gc.uuid, GPU_A, VS_UUID_LEN);
	gc.set = SCHED_GCFG_TOTAL;
	gc.total_pct = 20;
	cfg.total_pct = 50;
	cfg.gpus = &gc;
	cfg.n_gpus = 1;
	fake_now = 1;
	s = sched_new(&cfg, fake_clock, NULL);
	assert_non_null(s);
	c = sched_client_new(s, &cr, "p", NULL);
	assert_int_equal(sched_attach(s, c, GPU_A, 80 * GiB), 0);
	assert_int_equal(sched_attach(s, c, GPU_B, 80 * GiB), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_int_equal(gi.total_pct, 20);
	sched_gpu_info(sched_gpu_find(s, GPU_B), &gi);
	assert_int_equal(gi.total_pct, 50);
	/* A reload: GPU_A loses its entry, the default becomes 30. */
	old = cfg;
	cfg.gpus = NULL;
	cfg.n_gpus = 0;
	cfg.total_pct = 30;
	assert_int_equal(sched_reconfigure(s, &old, &cfg), 0);
	sched_gpu_info(sched_gpu_find(s, GPU_A), &gi);
	assert_int_equal(gi.total_pct, 30);
	sched_gpu_info(sched_gpu_find(s, GPU_B), &gi);
	assert_int_equal(gi.total_pct, 30);
	sched_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_interactive_preempts),
		cmocka_unit_test(test_order_and_status),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_budget_back_on_time),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_cap_lifted_mid_reload),
		cmocka_unit_test(test_class_total),
		cmocka_unit_test(test_total_two_holders),
		cmocka_unit_test(test_slice_capped),
		cmocka_unit_test(test_total_per_gpu),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
