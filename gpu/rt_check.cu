/*
 * CUDA runtime API correctness program (built with nvcc): cudaMalloc,
 * kernels, cudaMemcpy and cudaMemset, two streams with pinned host memory,
 * a CUDA graph captured from a stream and replayed, cudaMallocAsync and
 * cudaFreeAsync. Every result is exact in float and checked against the
 * CPU. Reports cudaPointerGetAttributes' type of each allocation
 * (cudaMemoryTypeManaged = 3 under the shim, cudaMemoryTypeDevice = 2
 * plain). Prints one JSON object.
 */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(call) rt_check_call((call), #call, __LINE__)

static void rt_check_call(cudaError_t e, const char *what, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "rt_check.cu:%d: %s failed: %s\n", line, what, cudaGetErrorString(e));
	exit(2);
}

__global__ void k_axpb(float *y, const float *x, float a, float b, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] = a * x[i] + b;
}

__global__ void k_add(float *y, const float *x, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		y[i] += x[i];
}

static int mem_type(const void *p)
{
	cudaPointerAttributes at;

	CK(cudaPointerGetAttributes(&at, p));
	return (int)at.type;
}

static unsigned count_bad(const float *got, const std::vector<float> &want)
{
	unsigned bad = 0;

	for (size_t i = 0; i < want.size(); i++)
		bad += got[i] != want[i];
	return bad;
}

int main()
{
	const size_t n = 1 << 20, bytes = n * sizeof(float), half = n / 2;
	const int replays = 5;
	std::vector<float> hx(n), want(n);
	float *x, *y, *z, *pin;
	cudaStream_t s[2];
	unsigned bad = 0;
	double sum = 0;

	for (size_t i = 0; i < n; i++)
		hx[i] = (float)(i % 513) * 0.25f;
	CK(cudaMalloc(&x, bytes));
	CK(cudaMalloc(&y, bytes));
	CK(cudaMallocHost(&pin, bytes));
	CK(cudaStreamCreateWithFlags(&s[0], cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&s[1], cudaStreamNonBlocking));
	int t_malloc = mem_type(x);

	/* Synchronous path: y = 2x + 1. */
	CK(cudaMemcpy(x, hx.data(), bytes, cudaMemcpyHostToDevice));
	CK(cudaMemset(y, 0xff, bytes));
	k_axpb<<<256, 256>>>(y, x, 2.0f, 1.0f, n);
	CK(cudaGetLastError());
	CK(cudaMemcpy(pin, y, bytes, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		want[i] = 2.0f * hx[i] + 1.0f;
	bad += count_bad(pin, want);

	/* Two streams, each on its half: y = y + x. */
	for (int k = 0; k < 2; k++) {
		k_add<<<128, 256, 0, s[k]>>>(y + k * half, x + k * half, half);
		CK(cudaGetLastError());
		CK(cudaMemcpyAsync(pin + k * half, y + k * half, half * sizeof(float),
				   cudaMemcpyDeviceToHost, s[k]));
	}
	CK(cudaStreamSynchronize(s[0]));
	CK(cudaStreamSynchronize(s[1]));
	for (size_t i = 0; i < n; i++)
		want[i] += hx[i];
	bad += count_bad(pin, want);

	/* A graph: y = 0.5 y + 0 ; y += x ; copy to pin. Replayed. */
	cudaGraph_t g;
	cudaGraphExec_t ge;
	CK(cudaStreamBeginCapture(s[0], cudaStreamCaptureModeThreadLocal));
	k_axpb<<<256, 256, 0, s[0]>>>(y, y, 0.5f, 0.0f, n);
	k_add<<<256, 256, 0, s[0]>>>(y, x, n);
	CK(cudaMemcpyAsync(pin, y, bytes, cudaMemcpyDeviceToHost, s[0]));
	CK(cudaStreamEndCapture(s[0], &g));
	CK(cudaGraphInstantiate(&ge, g, 0));
	for (int r = 0; r < replays; r++)
		CK(cudaGraphLaunch(ge, s[0]));
	CK(cudaStreamSynchronize(s[0]));
	for (size_t i = 0; i < n; i++)
		for (int r = 0; r < replays; r++)
			want[i] = want[i] * 0.5f + hx[i];
	bad += count_bad(pin, want);

	/* Stream-ordered allocation: z = 3x - 2, freed on the stream. */
	CK(cudaMallocAsync(&z, bytes, s[1]));
	CK(cudaStreamSynchronize(s[1]));
	int t_async = mem_type(z);
	k_axpb<<<256, 256, 0, s[1]>>>(z, x, 3.0f, -2.0f, n);
	CK(cudaGetLastError());
	CK(cudaMemcpyAsync(pin, z, bytes, cudaMemcpyDeviceToHost, s[1]));
	CK(cudaFreeAsync(z, s[1]));
	CK(cudaStreamSynchronize(s[1]));
	for (size_t i = 0; i < n; i++) {
		want[i] = 3.0f * hx[i] - 2.0f;
		sum += pin[i];
	}
	bad += count_bad(pin, want);
	CK(cudaMemcpy(pin, y, bytes, cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		sum += pin[i];

	CK(cudaGraphExecDestroy(ge));
	CK(cudaGraphDestroy(g));
	CK(cudaFree(x));
	CK(cudaFree(y));
	CK(cudaFreeHost(pin));
	CK(cudaStreamDestroy(s[0]));
	CK(cudaStreamDestroy(s[1]));
	CK(cudaDeviceSynchronize());
	printf("{\"prog\": \"rt_check\", \"ok\": %s, \"mismatches\": %u, "
	       "\"checksum\": %.2f, \"types\": {\"cudaMalloc\": %d, "
	       "\"cudaMallocAsync\": %d}, \"managed_type\": %d}\n",
	       bad ? "false" : "true", bad, sum, t_malloc, t_async,
	       (int)cudaMemoryTypeManaged);
	return bad ? 1 : 0;
}
