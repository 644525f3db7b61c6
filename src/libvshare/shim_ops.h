/*
 * The tables the top hands to the gate and the client (shim_ops.c).
 */
#ifndef VSHARE_SHIM_OPS_H
#define VSHARE_SHIM_OPS_H

#include "client.h"
#include "gate.h"

extern const struct gate_cuda_ops shim_gate_ops;
extern const struct client_callbacks shim_client_cbs;

/* A context hook succeeded on dev: register with the scheduler now, not
 * at the first submission (gate_prepare, client_prepare). */
void shim_gpu_opened(int dev);

#endif
