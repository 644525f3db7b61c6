/*
 * The CUDA side of the gate contract (gate.h): what the gate asks the
 * driver, answered through the real entry points, never the hooks.
 */
#ifndef VSHARE_SHIM_OPS_H
#define VSHARE_SHIM_OPS_H

#include <stdint.h>

#include "gate.h"

extern const struct gate_cuda_ops shim_gate_ops;

int  shim_ops_current_device(void);
int  shim_ops_stream_device(void *stream);
int  shim_ops_stream_capturing(void *stream);
/* Physical memory of a device (cached), 0 if unknown. */
uint64_t shim_ops_device_total(int dev);
void shim_ops_atfork_child(void);

#endif
