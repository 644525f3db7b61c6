/* The policy tests' shared fixture (policy_fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy_fixture.h"

uint64_t fake_now;

const uint8_t GPU_A[VS_UUID_LEN] = { 0xa };
const uint8_t GPU_B[VS_UUID_LEN] = { 0xb };

uint64_t fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

struct sched_cfg fixture_cfg(uint32_t mode)
{
	struct sched_cfg cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.tq_ms = 1000;
	cfg.mode = mode;
	cfg.grace_ms = 500;
	cfg.skip_unresponsive = 1;
	return cfg;
}

struct sched *fixture_new(const struct sched_cfg *cfg, uint64_t now)
{
	struct sched *s;

	fake_now = now;
	s = sched_new(cfg, fake_clock, NULL);
	assert_non_null(s);
	return s;
}

void made_up_gpu(uint8_t u[VS_UUID_LEN], unsigned i, unsigned j)
{
	memset(u, 0, VS_UUID_LEN);
	u[0] = (uint8_t)i;
	u[1] = (uint8_t)j;
	u[2] = 0xff;
}

void attach_made_up(struct sched *s, struct sched_client *c, unsigned i,
		    uint64_t total)
{
	uint8_t u[VS_UUID_LEN];

	for (unsigned j = 0; j < SCHED_MAX_CLIENT_GPUS; j++) {
		made_up_gpu(u, i, j);
		assert_int_equal(sched_attach(s, c, u, total), 0);
	}
}

const struct sched_out *out_msg(struct sched *s, uint16_t type,
				const struct sched_client *c)
{
	for (size_t i = 0; i < sched_out_count(s); i++) {
		const struct sched_out *o = sched_out_at(s, i);

		if (o->kind == SCHED_OUT_MSG && o->type == type &&
		    (c == NULL || o->client_id == sched_client_id(c)))
			return o;
	}
	return NULL;
}
