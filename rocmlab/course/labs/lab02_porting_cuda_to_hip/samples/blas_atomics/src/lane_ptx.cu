// Reads the lane id with inline PTX.
#include <cuda_runtime.h>
#include "ops.h"

__device__ __forceinline__ unsigned int lane_id() {
  unsigned int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));  // expect-trap: inline-ptx
  return lane;
}

__global__ void lanes(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (int)lane_id();
}

int lane_ids(int* out, int n) {
  lanes<<<(n + 127) / 128, 128>>>(out, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
