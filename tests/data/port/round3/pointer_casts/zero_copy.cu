// CUDA's runtime header has template overloads taking any T** (cudaHostGetDevicePointer(&d_a, ...) with float* d_a);
// HIP's take void** only: the port casts where the argument is not a void** already (issue 52).
#include <cstdio>
#include <cstdlib>

__device__ float scale;

__global__ void axpy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = scale * x[i] + y[i];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  float *h_x, *h_y, *d_x, *d_y;
  float* d_scale;
  void* any_host;                                   // already void*: its &any_host needs no cast
  void* any_dev;
  cudaSetDeviceFlags(cudaDeviceMapHost);
  cudaHostAlloc((void**)&h_x, n * sizeof(float), cudaHostAllocMapped);
  cudaMallocHost(&h_y, n * sizeof(float));
  cudaMallocHost(&any_host, 16);
  for (int i = 0; i < n; i++) { h_x[i] = (float)(i % 7); h_y[i] = 1.0f; }
  cudaHostGetDevicePointer(&d_x, h_x, 0);
  cudaHostGetDevicePointer(&any_dev, h_x, 0);
  cudaMalloc(&d_y, n * sizeof(float));
  cudaMemcpy(d_y, h_y, n * sizeof(float), cudaMemcpyHostToDevice);
  cudaGetSymbolAddress((void**)&d_scale, scale);          // void** in CUDA too
  float two = 2.0f;
  cudaMemcpy(d_scale, &two, sizeof(float), cudaMemcpyHostToDevice);
  axpy<<<(n + 255) / 256, 256>>>(d_x, d_y, n);
  cudaMemcpy(h_y, d_y, n * sizeof(float), cudaMemcpyDeviceToHost);
  double sum = 0;
  for (int i = 0; i < n; i++) sum += h_y[i];
  printf("n=%d sum=%.1f same=%d\n", n, sum, any_dev == (void*)d_x);
  cudaFreeHost(h_x);
  cudaFreeHost(h_y);
  cudaFreeHost(any_host);
  cudaFree(d_y);
  return 0;
}
