// Error checking and small helpers shared by the reduction kernels.
#pragma once
#include <cstdio>
#include <cstdlib>

#ifdef __CUDACC__
#define HD __host__ __device__
#else
#define HD
#endif

#define CUDA_CHECK(call)                                                        \
  do {                                                                          \
    cudaError_t err_ = (call);                                                  \
    if (err_ != cudaSuccess) {                                                  \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                   \
                   cudaGetErrorString(err_));                                   \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

HD inline int ceil_div(int a, int b) { return (a + b - 1) / b; }
