#ifndef VSHARE_GATE_STUB_H
#define VSHARE_GATE_STUB_H

#include "gate.h"

struct gate_stub {
	const struct gate_cuda_ops *ops;
	int inits, enters, exits, captures, forks, shutdowns;
	int fp_changes[4];
	void *last_stream;
};

extern struct gate_stub stub;

#endif
