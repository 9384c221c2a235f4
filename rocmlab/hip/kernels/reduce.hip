// Sum of a float array: a two-pass block reduction, wavefront-size agnostic (warpSize is 64 on
// MI300X, 32 on NVIDIA). Usage: reduce INPUT.f32 N [BLOCK]  (INPUT.f32: N raw float32 values)
// Prints "sum <value>" and "warpSize <n>". Builds with hipcc, offline clang, or nvcc via rocmlab.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call) do { hipError_t e_ = (call); if (e_ != hipSuccess) { \
  fprintf(stderr, "%s failed: %s\n", #call, hipGetErrorString(e_)); return 1; } } while (0)

__global__ void block_sum(const float* __restrict__ x, float* __restrict__ partial, int n) {
  __shared__ float per_wave[32];                 // 1024 threads / 32 lanes at most
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) v += x[i];
  for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_down(v, off);
  int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
  if (lane == 0) per_wave[wave] = v;
  __syncthreads();
  if (wave == 0) {
    int waves = (blockDim.x + warpSize - 1) / warpSize;
    v = lane < waves ? per_wave[lane] : 0.f;
    for (int off = warpSize / 2; off > 0; off /= 2) v += __shfl_down(v, off);
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
  CHECK(hipMalloc(&dx, n * sizeof(float)));
  CHECK(hipMalloc(&dp, grid * sizeof(float)));
  CHECK(hipMalloc(&dr, sizeof(float)));
  CHECK(hipMemcpy(dx, h.data(), n * sizeof(float), hipMemcpyHostToDevice));
  hipLaunchKernelGGL(block_sum, dim3(grid), dim3(block), 0, 0, dx, dp, n);
  CHECK(hipGetLastError());
  hipLaunchKernelGGL(block_sum, dim3(1), dim3(1024), 0, 0, dp, dr, grid);
  CHECK(hipGetLastError());
  float r = 0.f;
  CHECK(hipMemcpy(&r, dr, sizeof(float), hipMemcpyDeviceToHost));
  int ws = 0; hipDeviceProp_t p; CHECK(hipGetDeviceProperties(&p, 0)); ws = p.warpSize;
  printf("sum %.9g\nwarpSize %d\ndevice %s\n", r, ws, p.name);
  CHECK(hipFree(dx)); CHECK(hipFree(dp)); CHECK(hipFree(dr));
  return 0;
}
