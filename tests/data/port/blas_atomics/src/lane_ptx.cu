// Reads the lane id with inline PTX and keeps the warp's vote in 32 bits.
#include <cuda_runtime.h>
#include "ops.h"

__device__ __forceinline__ unsigned int lane_id() {
  unsigned int lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));  // expect-trap: inline-ptx
  return lane;
}

__global__ void lanes(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned int ballot = __ballot_sync(0xffffffff, i < n);  // expect-trap: ballot-in-32-bits, shfl-sync-32-bit-mask
  if (i < n) out[i] = (int)lane_id() + 100 * __popc(ballot);  // expect-trap: popc-on-mask
}

int lane_ids(int* out, int n) {
  lanes<<<(n + 127) / 128, 128>>>(out, n);
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
