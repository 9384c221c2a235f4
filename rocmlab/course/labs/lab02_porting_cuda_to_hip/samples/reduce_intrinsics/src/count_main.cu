// Second program: counts values above a threshold (uses only the wave-size agnostic kernel).
#include <cstdio>
#include <vector>
#include "reduce.h"

int main() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no GPU: nothing to run\n");
    return 0;
  }
  const int n = 1 << 18;
  std::vector<float> h(n);
  for (int i = 0; i < n; ++i) h[i] = (float)((i * 7919) % 1000) / 1000.f;
  float* dx;
  unsigned long long* dcount;
  cudaMalloc(&dx, n * sizeof(float));
  cudaMalloc(&dcount, sizeof(unsigned long long));
  cudaMemcpy(dx, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemset(dcount, 0, sizeof(unsigned long long));
  launch_count_above(dx, n, 0.5f, dcount);
  unsigned long long got = 0;
  cudaMemcpy(&got, dcount, sizeof(got), cudaMemcpyDeviceToHost);
  unsigned long long want = 0;
  for (float v : h) want += v > 0.5f;
  std::printf("%llu above 0.5 (expected %llu)\n", got, want);
  cudaFree(dx);
  cudaFree(dcount);
  return got == want ? 0 : 1;
}
