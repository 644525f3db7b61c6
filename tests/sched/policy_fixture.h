/*
 * The fixture of the policy's unit tests: a fake clock the test sets, the
 * test GPUs, the configuration most tests start from, made-up GPUs, and
 * lookups in the policy's outbox. Each test program links it
 * (tests/sched/CMakeLists.txt: sched_fixture) and includes this header
 * instead of keeping its own copy.
 */
#ifndef VSHARE_TEST_POLICY_FIXTURE_H
#define VSHARE_TEST_POLICY_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "sched_policy.h"

#define GiB (1ull << 30)

/* The policy's clock in the tests: milliseconds that only the test moves.
 * fake_clock is the clock function to hand to sched_new. */
extern uint64_t fake_now;
uint64_t fake_clock(void *arg);

/* Two GPUs: UUIDs 0a00.. and 0b00.. */
extern const uint8_t GPU_A[VS_UUID_LEN];
extern const uint8_t GPU_B[VS_UUID_LEN];

/* A configuration in mode `mode`: quantum 1 s, grace 500 ms, an
 * unresponsive holder skipped; everything else zero (the defaults of the
 * policy, no GPU named). */
struct sched_cfg fixture_cfg(uint32_t mode);

/* sched_new on cfg with the fake clock set to `now` first; never NULL. */
struct sched *fixture_new(const struct sched_cfg *cfg, uint64_t now);

/* Made-up GPU j of made-up client i: a UUID that no real GPU has (its
 * third byte is 0xff). */
void made_up_gpu(uint8_t u[VS_UUID_LEN], unsigned i, unsigned j);

/* Client c (the i-th made-up one) attaches SCHED_MAX_CLIENT_GPUS made-up
 * GPUs of `total` bytes each, made_up_gpu(i, 0...); each must attach. */
void attach_made_up(struct sched *s, struct sched_client *c, unsigned i,
		    uint64_t total);

/* The first message of `type` to c (any client if c is NULL) in the
 * outbox, or NULL. */
const struct sched_out *out_msg(struct sched *s, uint16_t type,
				const struct sched_client *c);

#endif
