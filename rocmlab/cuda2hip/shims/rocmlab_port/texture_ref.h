// rocmlab port: a 1D texture reference over linear memory, read with tex1Dfetch, becomes a plain device
// pointer (texture references were removed in CUDA 12 and ROCm 6; gfx942/gfx950 have no image instructions).
// Part of the port, not of HIP: written by `rocmlab port` into OUT/rocmlab_port_include/.
//   texture<float, 1, cudaReadModeElementType> t;   ->  __device__ const float* t;
//   cudaBindTexture(0, t, d_ptr, bytes)              ->  rocmlab_bind_texture(0, t, d_ptr, bytes)
//   tex1Dfetch(t, i)                                 ->  t[i]
//   cudaUnbindTexture(t)                             ->  rocmlab_unbind_texture(t)
//   t.filterMode = cudaFilterModePoint;              ->  a comment (an element fetch neither filters nor normalizes)
// An element-type 1D fetch reads exactly the element, so the plain load returns the same value.
#pragma once
#include <hip/hip_runtime.h>
#include <cstddef>

// The device pointer the texture read from, stored into the pointer variable that replaces it.
template <class T, class... Rest>
inline hipError_t rocmlab_bind_texture(size_t* offset, T*& symbol, const void* ptr, Rest&&...) {
  if (offset) *offset = 0;
  T* p = static_cast<T*>(ptr);
  return hipMemcpyToSymbol(HIP_SYMBOL(symbol), &p, sizeof(p));
}

// cudaBindTexture(NULL, &t, d_ptr, &desc, bytes): the reference passed by its address.
template <class T, class... Rest>
inline hipError_t rocmlab_bind_texture(size_t* offset, T** symbol, const void* ptr, Rest&&...) {
  if (offset) *offset = 0;
  T* p = static_cast<T*>(ptr);
  return hipMemcpyToSymbol(HIP_SYMBOL(*symbol), &p, sizeof(p));
}

template <class T> inline hipError_t rocmlab_unbind_texture(T*&) { return hipSuccess; }
template <class T> inline hipError_t rocmlab_unbind_texture(T**) { return hipSuccess; }
