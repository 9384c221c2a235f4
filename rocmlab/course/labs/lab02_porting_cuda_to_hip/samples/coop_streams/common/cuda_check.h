// Error checking for the pipeline. Guarded so it can be included from plain C++ too.
#ifndef COOP_CUDA_CHECK_H
#define COOP_CUDA_CHECK_H
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#ifdef __DRIVER_TYPES_H__
#define CHECK(call)                                                             \
  do {                                                                          \
    cudaError_t e_ = (call);                                                    \
    if (e_ != cudaSuccess) {                                                    \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_),  \
                   __FILE__, __LINE__);                                         \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
#else
#define CHECK(call) (call)
#endif

#if defined(__CUDA_RUNTIME_H__)
inline int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}
#endif

#endif  // COOP_CUDA_CHECK_H
