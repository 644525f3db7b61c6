/*
 * The tables the top hands to the gate and the client (shim_ops.c).
 */
#ifndef VSHARE_SHIM_OPS_H
#define VSHARE_SHIM_OPS_H

#include "client.h"
#include "gate.h"

extern const struct gate_cuda_ops shim_gate_ops;
extern const struct client_callbacks shim_client_cbs;

#endif
