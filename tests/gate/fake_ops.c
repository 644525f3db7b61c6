#include <string.h>
#include <time.h>

#include "fake.h"

struct fake_state fk;
__thread int fake_dev;

#define INC(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)
#define LD(p)  __atomic_load_n((p), __ATOMIC_SEQ_CST)

void fake_uuid(int dev, uint8_t uuid[VS_UUID_LEN])
{
	memset(uuid, 0xa0 + dev, VS_UUID_LEN);
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
	*total = (uint64_t)(dev + 1) << 30;
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

static void footprint(int dev, uint64_t *managed, uint64_t *pinned)
{
	*managed = __atomic_load_n(&fk.managed[dev], __ATOMIC_SEQ_CST);
	*pinned = __atomic_load_n(&fk.pinned[dev], __ATOMIC_SEQ_CST);
}

static void prefetch(int dev, int to_host)
{
	if (to_host) {
		if (LD(&fk.syncs[dev]) > 0)
			INC(&fk.sync_before_prefetch_out);
		INC(&fk.prefetch_out[dev]);
	} else {
		if (LD(&fk.entries_done) > 0)
			INC(&fk.entered_before_prefetch_in);
		INC(&fk.prefetch_in[dev]);
	}
}

static int dev_count(void)
{
	int n = LD(&fk.device_count);

	return n > 0 ? n : -1;
}

const struct gate_cuda_ops fake_ops = {
	.current_device = cur_dev,
	.stream_device = stream_dev,
	.device_info = dev_info,
	.stream_capturing = capturing,
	.sync_device = sync_dev,
	.footprint = footprint,
	.prefetch = prefetch,
	.current_context = cur_ctx,
	.device_count = dev_count,
};
