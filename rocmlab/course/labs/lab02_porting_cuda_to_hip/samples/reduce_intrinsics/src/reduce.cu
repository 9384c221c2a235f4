// Block sum with warp shuffles, written for warps of 32 (the classic CUDA way).
#include <cuda_fp16.h>
#include "cuda_utils.cuh"
#include "reduce.h"

#define WARP_SIZE 32  // expect-trap: hard-coded-warp-size

__inline__ __device__ float warp_reduce_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2)  // expect-trap: lane-offset-16-or-32
    v += __shfl_down_sync(0xffffffff, v, offset);  // expect-trap: shfl-sync-32-bit-mask
  return v;
}

__global__ void block_sum(const float* __restrict__ x, float* out, int n) {
  __shared__ float partial[1024 / WARP_SIZE];
  int lane = threadIdx.x % WARP_SIZE;
  int warp = threadIdx.x / WARP_SIZE;
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    v += x[i];
  v = warp_reduce_sum(v);
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = (lane < blockDim.x / WARP_SIZE) ? partial[lane] : 0.f;
    v = warp_reduce_sum(v);
    if (lane == 0) {
#if __CUDA_ARCH__ >= 600  // expect-trap: cuda-arch-guard
      atomicAdd(out, v);
#else
      // pre-Pascal fallback through a CAS loop
      unsigned int* p = (unsigned int*)out;
      unsigned int old = *p, assumed;
      do {
        assumed = old;
        old = atomicCAS(p, assumed, __float_as_uint(__uint_as_float(assumed) + v));
      } while (assumed != old);
#endif
    }
  }
}

// Scales fp16 values in place. Half arithmetic needs sm_53.
__global__ void scale_half(__half* x, float s, int n) {
#if __CUDA_ARCH__ >= 530  // expect-trap: cuda-arch-guard
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = __float2half(__half2float(x[i]) * s);
#endif
}

void launch_block_sum(const float* x, float* out, int n) {
  int threads = 256;
  int blocks = ceil_div(n, threads) < 1024 ? ceil_div(n, threads) : 1024;
  block_sum<<<blocks, threads>>>(x, out, n);
  CUDA_CHECK(cudaGetLastError());
}

void launch_scale_half(void* x, float s, int n) {
  scale_half<<<ceil_div(n, 256), 256>>>((__half*)x, s, n);
  CUDA_CHECK(cudaGetLastError());
}
