// Sums an array read through a 1D texture object.
#include <cuda_runtime.h>
#include "ops.h"

__global__ void tex_sum(cudaTextureObject_t tex, int n, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicAdd(out, tex1Dfetch<float>(tex, i));  // expect-trap: texture-fetch
}

float texture_sum(const float* d_in, int n) {
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeLinear;
  res.res.linear.devPtr = (void*)d_in;
  res.res.linear.desc = cudaCreateChannelDesc<float>();
  res.res.linear.sizeInBytes = n * sizeof(float);
  cudaTextureDesc td = {};
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex = 0;
  cudaCreateTextureObject(&tex, &res, &td, nullptr);
  float* d_out;
  cudaMalloc(&d_out, sizeof(float));
  cudaMemset(d_out, 0, sizeof(float));
  tex_sum<<<(n + 255) / 256, 256>>>(tex, n, d_out);
  float h = 0;
  cudaMemcpy(&h, d_out, sizeof(float), cudaMemcpyDeviceToHost);
  cudaDestroyTextureObject(tex);
  cudaFree(d_out);
  return h;
}
