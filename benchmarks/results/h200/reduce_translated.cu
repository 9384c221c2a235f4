// Sum of a float array: a two-pass block reduction, wavefront-size agnostic (warpSize is 64 on
// MI300X, 32 on NVIDIA). Usage: reduce INPUT.f32 N [BLOCK]  (INPUT.f32: N raw float32 values)
// Prints "sum <value>" and "warpSize <n>". Builds with hipcc, offline clang, or nvcc via rocmlab.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { cudaError_t e_ = (call); if (e_ != cudaSuccess) { \
  fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void block_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float per_wave[32];                 // 1024 threads / 32 lanes at most
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  if (lane == 0) per_wave[wave] = v;
  __syncthreads();
  if (wave == 0) {
    int waves = (blockDim.x + warpSize - 1) / warpSize;
    v = lane < waves ? per_wave[lane] : 0.f;
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_down_sync(0xffffffffu, v, off);
    if (lane == 0) partial[blockIdx.x] = v;
  }
}

int main(int argc, char** argv) {
  if (argc < 3) { fprintf(stderr, "usage: %s INPUT.f32 N [BLOCK]\n", argv[0]); return 2; }
  int n = atoi(argv[2]), block = argc > 3 ? atoi(argv[3]) : 256;
  std::vector<float> h(n);
  FILE* f = fopen(argv[1], "rb");
  if (!f || fread(h.data(), sizeof(float), n, f) != (size_t)n) { fprintf(stderr, "cannot read %d floats from %s\n", n, argv[1]); return 2; }
  fclose(f);
  int grid = (n + block - 1) / block; if (grid > 1024) grid = 1024;
  float *dx, *dp, *dr;
  CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CHECK(cudaMalloc(&dp, grid * sizeof(float)));
  CHECK(cudaMalloc(&dr, sizeof(float)));
  CHECK(cudaMemcpy(dx, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  block_sum<<< dim3(grid), dim3(block), 0, 0>>>( dx, dp, n);
  CHECK(cudaGetLastError());
  block_sum<<< dim3(1), dim3(1024), 0, 0>>>( dp, dr, grid);
  CHECK(cudaGetLastError());
  float r = 0.f;
  CHECK(cudaMemcpy(&r, dr, sizeof(float), cudaMemcpyDeviceToHost));
  int ws = 0; cudaDeviceProp p; CHECK(cudaGetDeviceProperties(&p, 0)); ws = p.warpSize;
  printf("sum %.9g\nwarpSize %d\ndevice %s\n", r, ws, p.name);
  CHECK(cudaFree(dx)); CHECK(cudaFree(dp)); CHECK(cudaFree(dr));
  return 0;
}
