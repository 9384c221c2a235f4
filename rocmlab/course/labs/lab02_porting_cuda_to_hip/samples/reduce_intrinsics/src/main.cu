// Host driver: fills an array, sums it on the GPU and checks the result.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>
#include "cuda_utils.cuh"
#include "reduce.h"

static const int warp_size = 32;  // used to size the per-warp scratch below; expect-trap: hard-coded-warp-size

int main() {
  const int n = 1 << 20;
  std::vector<float> h(n);
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  double ref = 0;
  for (auto& v : h) { v = dist(rng); ref += v; }

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("no GPU: nothing to run\n");
    return 0;
  }
  float *dx, *dout;
  CUDA_CHECK(cudaMalloc(&dx, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dout, (256 / warp_size) * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dx, h.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemset(dout, 0, sizeof(float)));
  launch_block_sum(dx, dout, n);
  float got = 0;
  CUDA_CHECK(cudaMemcpy(&got, dout, sizeof(float), cudaMemcpyDeviceToHost));
  std::printf("sum %.4f (reference %.4f)\n", got, ref);
  CUDA_CHECK(cudaFree(dx));
  CUDA_CHECK(cudaFree(dout));
  return std::fabs(got - ref) < 1e-2 * n ? 0 : 1;
}
