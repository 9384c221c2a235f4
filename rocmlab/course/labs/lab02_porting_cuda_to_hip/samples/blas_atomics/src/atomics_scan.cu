// Float and integer atomics: a sum, a count above zero and a max bucket.
#include <cuda_runtime.h>
#include "ops.h"

__host__ __device__ inline int bucket_of(float v) {
#ifdef __CUDA_ARCH__  // expect-trap: cuda-arch-guard
  return __float2int_rd(v * 8.f);
#else
  return (int)floorf(v * 8.f);
#endif
}

__global__ void scan_kernel(const float* x, int n, float* sum, unsigned int* above, int* max_bucket) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float v = x[i];
    atomicAdd(sum, v);
    if (v > 0.f) atomicAdd(above, 1u);
    atomicMax(max_bucket, bucket_of(v));
  }
}

void scan_and_count(const float* x, int n, float* sum, unsigned int* above, int* max_bucket) {
  scan_kernel<<<128, 256>>>(x, n, sum, above, max_bucket);
}
