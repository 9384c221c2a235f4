// APIs CUDA itself removed (cudaThreadSynchronize, cudaDeviceProp::deviceOverlap and clockRate: CUDA 13.0): the
// original needs CUDA 12.x; the port builds for HIP, which keeps them (or hipify maps them), and says so.
#include <cstdio>

__global__ void inc(int* p) { atomicAdd(p, 1); }

int main() {
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  printf("overlap %s, clock known %s\n", prop.deviceOverlap ? "yes" : "no", prop.clockRate > 0 ? "yes" : "no");
  int* d = 0;
  int h = 0;
  cudaMalloc((void**)&d, sizeof(int));
  cudaMemset(d, 0, sizeof(int));
  inc<<<4, 64>>>(d);
  cudaThreadSynchronize();
  cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost);
  printf("count=%d\n", h);
  cudaFree(d);
  return 0;
}
