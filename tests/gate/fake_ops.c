/*
 * The one fake of the CUDA side for the gate's tests, gate_sim and the
 * gate's benchmarks: CUDA operations for the gate, callbacks for the
 * client, and the wiring of both.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomics.h"
#include "fake.h"
#include "gate_ctl.h"
#include "gate_int.h"

struct fake_state fk;
__thread int fake_dev;

#define INC(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)
#define LD(p)  A_LOAD(p)

void fake_uuid(int dev, uint8_t uuid[VS_UUID_LEN])
{
	for (int i = 0; i < VS_UUID_LEN; i++)
		uuid[i] = (uint8_t)(fk.uuid_seed + dev + i);
}

static void *cur_ctx(void)
{
	INC(&fk.current_context_calls);
	return (void *)(uintptr_t)(0x1000 + fake_dev);
}

static int cur_dev(void)
{
	INC(&fk.current_device_calls);
	return fake_dev;
}

static int stream_dev(void *stream)
{
	(void)stream;
	return fake_dev;
}

static int dev_info(int dev, uint8_t uuid[16], uint64_t *total)
{
	if (dev < 0 || dev >= FAKE_GPUS)
		return -1;
	fake_uuid(dev, uuid);
	*total = fk.total_mem ? fk.total_mem : (uint64_t)(dev + 1) << 30;
	return 0;
}

static int capturing(void *stream)
{
	return stream == FAKE_CAPTURE_STREAM;
}

/* The gate is closed and drained when it synchronizes: any test thread
 * inside its bracket now has slipped past. */
static int sync_dev(int dev)
{
	struct timespec ms = { 0, 1000000L };

	INC(&fk.sync_entered[dev]);
	while (LD(&fk.block_sync[dev]))
		nanosleep(&ms, NULL);
	if (LD(&fk.in_bracket[dev]) != 0)
		INC(&fk.violations);
	INC(&fk.syncs[dev]);
	return 0;
}

static int dev_count(void)
{
	int n = LD(&fk.device_count);

	return n > 0 ? n : -1;
}

/* A mark is passed once the fake clock reaches the end of the work that
 * was queued on its stream when it was placed. */
struct fake_mark {
	uint64_t done_at;
};

static int stream_index(void *stream)
{
	uintptr_t v = (uintptr_t)stream;

	return v >= 0x5700 && v < 0x5700 + FAKE_STREAMS ? (int)(v - 0x5700) : -1;
}

static void *mark_new(void)
{
	INC(&fk.mark_asks);
	if (LD(&fk.marks_fail))
		return NULL;
	INC(&fk.marks_made);
	return calloc(1, sizeof(struct fake_mark));
}

static int mark_record(void *mark, void *stream)
{
	struct fake_mark *m = mark;
	int i = stream_index(stream);

	if (i < 0)
		return -1;
	m->done_at = fk.stream_end[i] > fk.pace_now ? fk.stream_end[i] :
		     fk.pace_now;
	INC(&fk.marks_placed);
	return 0;
}

static int mark_state(void *mark)
{
	const struct fake_mark *m = mark;

	INC(&fk.mark_looks);
	return !LD(&fk.marks_stuck) && fk.pace_now >= m->done_at;
}

static void mark_free(void *mark)
{
	INC(&fk.marks_freed);
	free(mark);
}

static uint64_t pace_now(void)
{
	return __atomic_load_n(&fk.pace_now, __ATOMIC_SEQ_CST);
}

void fake_note_syncs(long *most)
{
	uint64_t unf;
	long syncs;

	gate_use_activity(0, &syncs, &unf);
	if (syncs > *most)
		*most = syncs;
}

static void pace_pause(uint64_t ns)
{
	fake_note_syncs(&fk.pause_syncs);
	INC(&fk.pauses);
	__atomic_add_fetch(&fk.pace_now, ns, __ATOMIC_SEQ_CST);
}

static const struct gate_pace_test fake_pace_test = {
	.now_ns = pace_now,
	.pause_ns = pace_pause,
};

void fake_pace_on(void)
{
	gate_pace_test = &fake_pace_test;
}

void fake_work(int i, uint64_t ns)
{
	uint64_t now = pace_now();

	fk.stream_end[i] = (fk.stream_end[i] > now ? fk.stream_end[i] : now) + ns;
}

uint64_t fake_queued(int i)
{
	uint64_t now = pace_now();

	return fk.stream_end[i] > now ? fk.stream_end[i] - now : 0;
}

const struct gate_cuda_ops fake_ops = {
	.current_device = cur_dev,
	.stream_device = stream_dev,
	.device_info = dev_info,
	.stream_capturing = capturing,
	.sync_device = sync_dev,
	.current_context = cur_ctx,
	.device_count = dev_count,
	.mark_new = mark_new,
	.mark_record = mark_record,
	.mark_state = mark_state,
	.mark_free = mark_free,
};

static void footprint(void *arg, int dev, uint64_t *managed, uint64_t *pinned)
{
	(void)arg;
	*managed = LD(&fk.managed[dev]);
	*pinned = LD(&fk.pinned[dev]);
}

/* What the shim's top does on a grant (shim_ops.c): swap in under
 * oversubscription, before the gate opens. */
static void granted(void *arg, int dev, uint32_t flags,
		    struct client_swap *swap)
{
	(void)arg;
	INC(&fk.grants[dev]);
	if (flags & VS_GRANTF_OVERSUB) {
		if (LD(&fk.entries_done) > 0)
			INC(&fk.entered_before_prefetch_in);
		INC(&fk.prefetch_in[dev]);
		/* What the prefetch would have moved, and a cost for it. */
		swap->bytes = LD(&fk.managed[dev]);
		swap->us = swap->bytes ? FAKE_SWAP_US : 0;
	}
}

/* And on a release: swap out when eager, after the synchronize. */
static void released(void *arg, int dev, int swap_out,
		     struct client_swap *swap)
{
	(void)arg;
	if (!swap_out)
		return;
	if (LD(&fk.syncs[dev]) > 0)
		INC(&fk.sync_before_prefetch_out);
	INC(&fk.prefetch_out[dev]);
	swap->bytes = 1u << 20;
	swap->us = 10;
}

/* The scheduler's memory limit: recorded for the tests. */
static void policy(void *arg, uint64_t mem_limit)
{
	(void)arg;
	__atomic_store_n(&fk.policy_limit, mem_limit, __ATOMIC_SEQ_CST);
	INC(&fk.policies);
}

const struct client_callbacks fake_cbs = {
	.granted = granted,
	.released = released,
	.footprint = footprint,
	.policy = policy,
};

static void wanted(void *arg, int dev)
{
	INC(&fk.wanted_calls);
	if (LD(&fk.wanted_probe))
		(void)gate_waiting(dev);
	client_wanted(arg, dev);
	INC(&fk.wanted_returns);
}

static const struct gate_events fake_events = {
	.wanted = wanted,
};

void fake_init(void)
{
	gate_init(&fake_ops, &fake_events);
	client_init(&fake_cbs);
}

void fake_shutdown(void)
{
	gate_shutdown();
	client_stop();
}

void fake_atfork_child(void)
{
	gate_atfork_child();
	client_atfork_child();
}
