// Runs the atomics scan and the driver-API start-up.
#include <cstdio>
#include <vector>
#include "ops.h"

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no GPU: nothing to run\n");
    return 0;
  }
  if (driver_init(1 << 20) != 0) return 1;
  const int n = 1 << 16;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = (float)((i * 7919) % 2001 - 1000) / 1000.f;
  float *dx, *dsum;
  unsigned int* dabove;
  int* dmax;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dsum, sizeof(float));
  cudaMalloc(&dabove, sizeof(unsigned int));
  cudaMalloc(&dmax, sizeof(int));
  cudaMemcpy(dx, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dsum, 0, sizeof(float));
  cudaMemset(dabove, 0, sizeof(unsigned int));
  cudaMemset(dmax, 0, sizeof(int));
  scan_and_count(dx, n, dsum, dabove, dmax);
  unsigned int above = 0;
  cudaMemcpy(&above, dabove, sizeof(above), cudaMemcpyDeviceToHost);
  std::printf("%u of %d above zero\n", above, n);
  cudaFree(dx);
  cudaFree(dsum);
  cudaFree(dabove);
  cudaFree(dmax);
  return 0;
}
