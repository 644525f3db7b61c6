/* placeholder until the gate lands; replaced by the gate branch */
/*
 * A pass-through gate: every submission goes straight to the driver. It
 * keeps the shim building and testable on its own; the gate branch's
 * gate.c replaces this file as a whole.
 */
#include <stddef.h>

#include "gate.h"

static const struct gate_cuda_ops *gate_ops;
static int gate_captures;

void gate_init(const struct gate_cuda_ops *ops)
{
	__atomic_store_n(&gate_ops, ops, __ATOMIC_RELEASE);
}

int gate_enter(void *stream)
{
	(void)stream;
	return 0;
}

void gate_exit(int token)
{
	(void)token;
}

void gate_capture_delta(int delta)
{
	__atomic_add_fetch(&gate_captures, delta, __ATOMIC_RELAXED);
}

void gate_footprint_changed(int dev)
{
	(void)dev;
}

void gate_atfork_child(void)
{
	__atomic_store_n(&gate_captures, 0, __ATOMIC_RELAXED);
}

void gate_shutdown(void)
{
}
