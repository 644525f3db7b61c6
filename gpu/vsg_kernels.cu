/*
 * Kernels of the GPU suite's driver-API programs. Built into one fatbin
 * (sm_90 code plus compute_90 PTX, so newer GPUs can JIT it) that the
 * programs load with cuModuleLoad: no runtime API in those programs.
 */

/* The GPU's global nanosecond timer. One clock for every context on the
 * device, so intervals written by different processes can be compared. */
static __device__ __forceinline__ unsigned long long vsg_gtimer(void)
{
	unsigned long long t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

extern "C" __global__ void vsg_empty(void)
{
}

/* Spin for spin_ns and record [start, end] of this kernel in out[2*idx]. */
extern "C" __global__ void vsg_stamp(unsigned long long *out, unsigned int idx,
				     unsigned long long spin_ns)
{
	if (threadIdx.x != 0 || blockIdx.x != 0)
		return;
	unsigned long long t0 = vsg_gtimer(), t = t0;
	while (t - t0 < spin_ns)
		t = vsg_gtimer();
	out[2ull * idx] = t0;
	out[2ull * idx + 1] = t;
}

extern "C" __global__ void vsg_add(const float *a, const float *b, float *c,
				   unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	for (; i < n; i += step)
		c[i] = a[i] + b[i];
}

extern "C" __global__ void vsg_scale(float *p, float s, unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	for (; i < n; i += step)
		p[i] *= s;
}

/* Reads and writes every word: brings every page of the buffer to the GPU. */
extern "C" __global__ void vsg_touch(unsigned int *p, unsigned long long n)
{
	unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
	unsigned long long step = (unsigned long long)gridDim.x * blockDim.x;
	for (; i < n; i += step)
		p[i] += 1u;
}
