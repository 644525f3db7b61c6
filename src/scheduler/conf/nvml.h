/*
 * nvml_*: the driver's report of a GPU's memory (NVML through dlopen),
 * for the policy's total_fn, and its index, for index_fn. Without NVML
 * every lookup returns 0 (-1 for an index).
 */
#ifndef VSHARE_NVML_H
#define VSHARE_NVML_H

#include <stdint.h>

#include "vshare/proto.h"

int  nvml_open(void);     /* 0, or -1 (logged) when NVML is not usable */
void nvml_close(void);
uint64_t nvml_total(void *arg, const uint8_t uuid[VS_UUID_LEN]);
/* The GPU's NVML index (nvidia-smi's), -1 when NVML does not know it. */
int64_t nvml_index(void *arg, const uint8_t uuid[VS_UUID_LEN]);

#endif
