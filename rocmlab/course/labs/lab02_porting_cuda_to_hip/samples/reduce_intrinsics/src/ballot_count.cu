// Counts elements above a threshold with one ballot per warp/wavefront.
// Wave-size agnostic: lane maths use warpSize, the mask comes from __activemask() and is
// kept in 64 bits, and the population count is the 64-bit one. Right for warps of 32
// and wavefronts of 64.
#include <cuda_runtime.h>
#include "reduce.h"

__global__ void count_above(const float* x, int n, float t, unsigned long long* count) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = threadIdx.x % warpSize;
  bool pred = i < n && x[i] > t;
  unsigned long long active = __activemask();
  unsigned long long votes = __ballot_sync(active, pred);
  if (lane == 0) atomicAdd(count, (unsigned long long)__popcll(votes));
}

// Tree reduction in shared memory: no assumption about the warp size at all.
__global__ void max_per_block(const float* x, int n, float* block_max) {
  extern __shared__ float s[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? x[i] : -1e30f;
  __syncthreads();
  for (unsigned int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] = fmaxf(s[threadIdx.x], s[threadIdx.x + stride]);
    __syncthreads();
  }
  if (threadIdx.x == 0) block_max[blockIdx.x] = s[0];
}

void launch_count_above(const float* x, int n, float t, unsigned long long* count) {
  int threads = 256;
  count_above<<<(n + threads - 1) / threads, threads>>>(x, n, t, count);
}
