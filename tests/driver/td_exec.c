/*
 * Runs one operation on a stream's worker thread, without the global lock,
 * and writes its line to the execution log.
 */
#include "td.h"

#include <stdio.h>
#include <string.h>

static void copy_2d(const struct td_op *op)
{
	size_t r;

	for (r = 0; r < op->u.copy.height; r++)
		memmove((char *)op->u.copy.dst + r * op->u.copy.dpitch,
			(const char *)op->u.copy.src + r * op->u.copy.spitch,
			op->u.copy.width);
}

static void set_row(void *dst, uint32_t v, unsigned int elsize, size_t n)
{
	size_t i;

	if (elsize == 1) {
		memset(dst, (int)(v & 0xff), n);
	} else if (elsize == 2) {
		uint16_t *p = dst;

		for (i = 0; i < n; i++)
			p[i] = (uint16_t)v;
	} else {
		uint32_t *p = dst;

		for (i = 0; i < n; i++)
			p[i] = v;
	}
}

static void set_2d(const struct td_op *op)
{
	size_t r;

	for (r = 0; r < op->u.set.height; r++)
		set_row((char *)op->u.set.dst + r * op->u.set.pitch,
			op->u.set.value, op->u.set.elsize, op->u.set.width);
}

void td_exec(struct CUstream_st *s, struct td_op *op)
{
	uint64_t t0 = td_now_ns();
	int dev = td.dev[s->ctx->dev].phys;
	char name[64];

	switch (op->kind) {
	case TD_OP_KERNEL:
		op->u.kernel.k->run(op->u.kernel.args);
		td_log_line(t0, td_now_ns(), dev, s->id, "kernel",
			    op->u.kernel.k->name, 0);
		break;
	case TD_OP_COPY:
		copy_2d(op);
		td_log_line(t0, td_now_ns(), dev, s->id, "memcpy",
			    op->u.copy.name,
			    op->u.copy.width * op->u.copy.height);
		break;
	case TD_OP_SET:
		set_2d(op);
		snprintf(name, sizeof(name), "D%u", op->u.set.elsize * 8);
		td_log_line(t0, td_now_ns(), dev, s->id, "memset", name,
			    op->u.set.width * op->u.set.height * op->u.set.elsize);
		break;
	case TD_OP_PREFETCH:
	case TD_OP_ADVISE:
		if (op->u.pf.dst < 0)
			snprintf(name, sizeof(name), "host");
		else
			snprintf(name, sizeof(name), "device%d",
				 td.dev[op->u.pf.dst].phys);
		if (op->kind == TD_OP_ADVISE)
			snprintf(name + strlen(name), sizeof(name) - strlen(name),
				 ":advice%d", op->u.pf.advice);
		td_log_line(t0, td_now_ns(), dev, s->id,
			    op->kind == TD_OP_PREFETCH ? "prefetch" : "advise",
			    name, op->u.pf.bytes);
		break;
	case TD_OP_HOSTFN:
		op->u.host.fn(op->u.host.data);
		break;
	case TD_OP_CALLBACK:
		op->u.host.cb(op->u.host.handle, CUDA_SUCCESS, op->u.host.data);
		break;
	case TD_OP_EVENT:
		td_event_done(op->u.event.ev, op->u.event.gen);
		break;
	case TD_OP_FREE:
		td_lock();
		td_mem_free((uintptr_t)op->u.mfree.ptr);
		td_unlock();
		break;
	case TD_OP_WAIT:
		break;
	}
}
