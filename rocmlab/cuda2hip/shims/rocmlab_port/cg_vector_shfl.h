// rocmlab port: tile.shfl_xor / shfl / shfl_down / shfl_up on a vector type (float2, int4, a struct).
// CUDA's cooperative groups shuffle any trivially copyable type; HIP's tiles call __shfl_xor(var, ...),
// which HIP declares for int, float, double and long only. These overloads shuffle such a value one
// 32-bit word at a time (ADL finds them from HIP's tile code). Part of the port, not of HIP.
#pragma once
#include <hip/hip_runtime.h>
#include <type_traits>

#ifndef __HIPSIM__   // the CPU simulator shuffles any value of up to 8 bytes itself
#define ROCMLAB_PORT_VECTOR_SHFL(NAME, ARG)                                                        \
  template <class T, typename std::enable_if<!std::is_arithmetic<T>::value &&                      \
                                             std::is_trivially_copyable<T>::value &&               \
                                             sizeof(T) % 4 == 0, int>::type = 0>                    \
  __device__ inline T NAME(T var, ARG, int width = warpSize) {                                     \
    int w[sizeof(T) / 4];                                                                          \
    __builtin_memcpy(w, &var, sizeof(T));                                                          \
    for (unsigned k = 0; k < sizeof(T) / 4; ++k) w[k] = NAME(w[k], arg, width);                    \
    __builtin_memcpy(&var, w, sizeof(T));                                                          \
    return var;                                                                                    \
  }
ROCMLAB_PORT_VECTOR_SHFL(__shfl_xor, int arg)
ROCMLAB_PORT_VECTOR_SHFL(__shfl, int arg)
ROCMLAB_PORT_VECTOR_SHFL(__shfl_down, unsigned int arg)
ROCMLAB_PORT_VECTOR_SHFL(__shfl_up, unsigned int arg)
#undef ROCMLAB_PORT_VECTOR_SHFL
#endif
