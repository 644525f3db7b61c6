/*
 * nvml_*: the driver's report of a GPU's memory (NVML through dlopen),
 * for the policy's total_fn, and its index, for index_fn. Without NVML
 * every lookup returns 0 (-1 for an index).
 */
#ifndef VSHARE_NVML_H
#define VSHARE_NVML_H

#include <stdint.h>

#include "sched_policy.h"
#include "vshare/proto.h"

int  nvml_open(void);     /* 0, or -1 (logged) when NVML is not usable */
void nvml_close(void);
uint64_t nvml_total(void *arg, const uint8_t uuid[VS_UUID_LEN]);
/* The GPU's NVML index (nvidia-smi's), -1 when NVML does not know it. */
int64_t nvml_index(void *arg, const uint8_t uuid[VS_UUID_LEN]);
/*
 * The GPU's compute processes as NVML sees them: each one's pid and
 * device memory in use (nvmlDeviceGetComputeRunningProcesses), and its
 * SM utilisation averaged over the driver's samples since the previous
 * call for this GPU (nvmlDeviceGetProcessUtilization, or its successor
 * nvmlDeviceGetProcessesUtilizationInfo where the driver has only
 * that); a process without a sample in that time gets 0, and every
 * one SCHED_UTIL_UNKNOWN when the driver gives no samples at all. At
 * most max entries; the count, or -1 when NVML has no view (no NVML,
 * GPU unknown, the process list not supported).
 */
long nvml_procs(const uint8_t uuid[VS_UUID_LEN], struct sched_proc_use *out,
		size_t max);

#endif
