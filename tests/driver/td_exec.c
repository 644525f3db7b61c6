/*
 * Runs one operation on a stream's worker thread, without the global lock,
 * and writes its line to the execution log.
 */
#include "td.h"

#include <stdio.h>
#include <string.h>

static void copy_3d(const struct td_op *op)
{
	size_t r, z;

	for (z = 0; z < op->u.copy.depth; z++) {
		char *d = (char *)op->u.copy.dst + z * op->u.copy.dslice;
		const char *sp = (const char *)op->u.copy.src + z * op->u.copy.sslice;

		for (r = 0; r < op->u.copy.height; r++)
			memmove(d + r * op->u.copy.dpitch, sp + r * op->u.copy.spitch,
				op->u.copy.width);
	}
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

/* Runs one of the logged kinds of work; fills kind, name and bytes for
 * its log line. */
static void run_logged(const struct td_op *op, const char **kind, char *name,
		       size_t len, size_t *bytes)
{
	switch (op->kind) {
	case TD_OP_KERNEL:
		op->u.kernel.k->run(op->u.kernel.args);
		*kind = "kernel";
		snprintf(name, len, "%s", op->u.kernel.k->name);
		break;
	case TD_OP_COPY:
		copy_3d(op);
		*kind = "memcpy";
		snprintf(name, len, "%s", op->u.copy.name);
		*bytes = op->u.copy.width * op->u.copy.height * op->u.copy.depth;
		break;
	case TD_OP_SET:
		set_2d(op);
		*kind = "memset";
		snprintf(name, len, "D%u", op->u.set.elsize * 8);
		*bytes = op->u.set.width * op->u.set.height * op->u.set.elsize;
		break;
	case TD_OP_PREFETCH:	/* host memory: nothing moves */
		*kind = op->u.pf.dst == -2 ? "discard" : "prefetch";
		if (op->u.pf.dst < 0)
			snprintf(name, len, "%s", op->u.pf.dst == -2 ? "discard" : "host");
		else
			snprintf(name, len, "device%d", td.dev[op->u.pf.dst].phys);
		*bytes = op->u.pf.bytes;
		break;
	default:	/* TD_OP_MEMOP */
		td_memop_run(op);
		*kind = "memop";
		snprintf(name, len, "%s%d",
			 op->u.memop.op == TD_MEMOP_WRITE ? "write" : "wait",
			 op->u.memop.is64 ? 64 : 32);
		*bytes = op->u.memop.is64 ? 8 : 4;
		break;
	}
}

void td_exec(struct CUstream_st *s, struct td_op *op)
{
	uint64_t t0 = td_now_ns();
	const char *kind = "";
	char name[64];
	size_t bytes = 0;

	switch (op->kind) {
	case TD_OP_KERNEL:
	case TD_OP_COPY:
	case TD_OP_SET:
	case TD_OP_PREFETCH:
	case TD_OP_MEMOP:
		run_logged(op, &kind, name, sizeof(name), &bytes);
		td_log_line(t0, td_now_ns(), td.dev[s->ctx->dev].phys, s->id,
			    kind, name, bytes);
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
