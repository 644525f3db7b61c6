#ifndef VSHARE_GATE_STUB_H
#define VSHARE_GATE_STUB_H

#include "client.h"
#include "gate.h"
#include "gate_ctl.h"

struct gate_stub {
	const struct gate_cuda_ops *ops;
	const struct gate_events *ev;
	const struct client_callbacks *cbs;
	int inits, enters, exits, captures, forks, shutdowns;
	int fp_changes[4];
	int gate_prepared[4], client_prepared[4];
	int prepare_fails;    /* gate_prepare answers -1 */
	int try_open;         /* gate_try_enter finds the gate open */
	int try_enters, try_exits;
	int syncs_begun, syncs_ended; /* gate_sync_begin / _end */
	int unfinished;               /* gate_sync_unfinished */
	void *last_stream;
};

extern struct gate_stub stub;

#endif
