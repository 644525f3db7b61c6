/*
 * The policy tests' world (sched_world.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "sched_world.h"

struct sched_cfg fair_cfg(uint32_t policy)
{
	struct sched_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 30000;
	cfg.mode = VS_MODE_ON;
	cfg.grace_ms = 5000;
	cfg.skip_unresponsive = 1;
	cfg.policy = policy;
	cfg.min_slice_ms = 1000;
	cfg.halflife_ms = 60000;
	cfg.preempt_pct = 67;
	cfg.preempt_budget_pct = 10;
	return cfg;
}

void world_init(struct world *w, const struct sched_cfg *cfg)
{
	memset(w, 0, sizeof(*w));
	fake_now = 1;
	w->s = sched_new(cfg, fake_clock, NULL);
	assert_non_null(w->s);
	w->gap_ms = 200;
	w->burst_ms = 15;
	w->drain_ms = 50;
	w->idle_ms = 100;
}

struct prog *add(struct world *w, enum kind kind, uint32_t uid)
{
	struct sched_cred cred = { 1000 + w->n, uid, uid };
	struct prog *p = &w->p[w->n++];

	p->c = sched_client_new(w->s, &cred, "p", p);
	assert_non_null(p->c);
	assert_int_equal(sched_attach(w->s, p->c, GPU_A, 80 * GiB), 0);
	assert_int_equal(sched_footprint(w->s, p->c, GPU_A, GiB, 0), 0);
	p->kind = kind;
	p->uid = uid;
	p->next_burst = fake_now;
	return p;
}

void add_class(struct world *w, struct prog *p, uint32_t klass,
	       int allowed, uint32_t budget_pct, uint32_t cap_pct)
{
	struct sched_class_pol cp = { allowed, budget_pct, cap_pct };

	sched_client_set_class(p->c, klass);
	sched_client_set_policy(w->s, p->c, &cp);
}

void ask(struct world *w, struct prog *p)
{
	assert_int_equal(sched_request(w->s, p->c, GPU_A), 0);
	p->waiting = 1;
	p->asked = fake_now;
}

/* Deliver the outbox: grants start holders, drops schedule releases. */
void deliver(struct world *w)
{
	for (size_t i = 0; i < sched_out_count(w->s); i++) {
		const struct sched_out *o = sched_out_at(w->s, i);
		struct prog *p = o->user;
		uint64_t waited;

		if (o->kind != SCHED_OUT_MSG || p == NULL)
			continue;
		if (o->type == VS_MSG_GRANT) {
			waited = fake_now - p->asked;
			p->holding = 1;
			p->waiting = 0;
			p->drop = 0;
			p->release_at_set = 0;
			if (p->waits == 0)
				p->first_wait = waited;
			p->waits++;
			p->sum_wait += waited;
			if (waited > p->max_wait)
				p->max_wait = waited;
			if (waited > 1500)
				p->n_over++;
			if (p->kind == BURSTY)
				p->burst_end = fake_now + w->burst_ms;
		} else if (o->type == VS_MSG_DROP && p->holding &&
			   p->kind != HUNG) {
			if (o->u.drop.reason != VS_DROP_IDLE) {
				p->drop = 2;
				p->release_at = fake_now + w->drain_ms;
				p->release_at_set = 1;
			} else if (p->drop == 0) {
				p->drop = 1;
			}
		}
	}
	sched_out_clear(w->s);
}

void release(struct world *w, struct prog *p)
{
	assert_int_equal(sched_released(w->s, p->c, GPU_A), 0);
	p->holding = 0;
	p->drop = 0;
	p->release_at_set = 0;
}

/* One program's step at now_ms. */
void act(struct world *w, struct prog *p)
{
	if (p->holding) {
		struct sched_member_info mi;

		p->held_ms += STEP_MS;
		if (sched_client_gpu(w->s, p->c, 0, &mi) == 0 &&
		    mi.klass == VS_CLASS_INTERACTIVE)
			p->held_int_ms += STEP_MS;
	}
	if (p->holding && p->release_at_set && fake_now >= p->release_at) {
		release(w, p);
		if (p->kind == TRAIN)
			ask(w, p); /* it wants the GPU_A back at once */
		return;
	}
	if (p->kind == BURSTY && p->holding && p->drop == 1 &&
	    fake_now >= p->burst_end + w->idle_ms) {
		release(w, p);
		p->next_burst = p->burst_end + w->gap_ms;
		return;
	}
	if (p->kind == BURSTY && p->holding && p->drop == 0 &&
	    fake_now >= p->burst_end + w->gap_ms)
		p->burst_end = fake_now + w->burst_ms; /* alone: bursts go on */
	if (!p->holding && !p->waiting &&
	    (p->kind != BURSTY || fake_now >= p->next_burst))
		ask(w, p);
}

void run(struct world *w, uint64_t until)
{
	while (fake_now < until) {
		fake_now += STEP_MS;
		sched_tick(w->s);
		deliver(w);
		for (int i = 0; i < w->n; i++) {
			act(w, &w->p[i]);
			deliver(w);
		}
	}
}

uint64_t uid_held(const struct world *w, uint32_t uid)
{
	uint64_t t = 0;

	for (int i = 0; i < w->n; i++)
		if (w->p[i].uid == uid)
			t += w->p[i].held_ms;
	return t;
}

void reset_counts(struct world *w)
{
	for (int i = 0; i < w->n; i++) {
		struct prog *p = &w->p[i];

		p->held_ms = p->held_int_ms = p->max_wait = p->waits = p->sum_wait = 0;
		p->n_over = 0;
	}
}
