/*
 * A recording gate and client for test_shim_ops: the hook layer and the
 * CUDA operations are built into the test program with this in place of
 * the real gate and client, so the test can see every call the hooks make
 * and reach the tables the top hands to them.
 */
#include <cuda.h>

#include "gate_stub.h"

struct gate_stub stub;

void gate_init(const struct gate_cuda_ops *ops, const struct gate_events *ev)
{
	stub.ops = ops;
	stub.ev = ev;
	stub.inits++;
}

void client_init(const struct client_callbacks *cb)
{
	stub.cbs = cb;
}

void client_wanted(void *arg, int dev)
{
	(void)arg;
	(void)dev;
}

int gate_enter(void *stream)
{
	__atomic_add_fetch(&stub.enters, 1, __ATOMIC_SEQ_CST);
	stub.last_stream = stream;
	return 7;
}

void gate_exit(int token)
{
	if (token == 7)
		__atomic_add_fetch(&stub.exits, 1, __ATOMIC_SEQ_CST);
	if (token == 8)
		__atomic_add_fetch(&stub.try_exits, 1, __ATOMIC_SEQ_CST);
}

int gate_try_enter(int dev)
{
	(void)dev;
	__atomic_add_fetch(&stub.try_enters, 1, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&stub.try_open, __ATOMIC_SEQ_CST) ? 8
								 : GATE_TRY_CLOSED;
}

void gate_sync_begin(struct gate_sync *w)
{
	w->token = 9;
	w->since = 0;
	__atomic_add_fetch(&stub.syncs_begun, 1, __ATOMIC_SEQ_CST);
}

void gate_sync_end(const struct gate_sync *w)
{
	if (w->token == 9)
		__atomic_add_fetch(&stub.syncs_ended, 1, __ATOMIC_SEQ_CST);
}

void gate_sync_unfinished(void)
{
	__atomic_add_fetch(&stub.unfinished, 1, __ATOMIC_SEQ_CST);
}

void gate_capture_delta(int delta)
{
	__atomic_add_fetch(&stub.captures, delta, __ATOMIC_SEQ_CST);
}

int gate_capturing(void)
{
	return __atomic_load_n(&stub.captures, __ATOMIC_SEQ_CST) > 0;
}

void client_footprint_changed(int dev)
{
	if (dev >= 0 && dev < 4)
		__atomic_add_fetch(&stub.fp_changes[dev], 1, __ATOMIC_SEQ_CST);
}

int gate_prepare(int dev)
{
	if (dev >= 0 && dev < 4)
		__atomic_add_fetch(&stub.gate_prepared[dev], 1, __ATOMIC_SEQ_CST);
	return stub.prepare_fails ? -1 : 0;
}

void client_prepare(int dev)
{
	if (dev >= 0 && dev < 4)
		__atomic_add_fetch(&stub.client_prepared[dev], 1, __ATOMIC_SEQ_CST);
}

void gate_atfork_child(void)
{
	stub.forks++;
}

void gate_shutdown(void)
{
	stub.shutdowns++;
}

void client_atfork_child(void)
{
}

/* No scheduler here: no policy to wait for. */
void client_policy_wait(void)
{
}

void client_stop(void)
{
}
