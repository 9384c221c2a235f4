// rocmlab port: cooperative_groups::reduce and its operators, which HIP's cooperative groups do not have
// (CUDA's <cooperative_groups/reduce.h>). Part of the port, not of HIP: written by `rocmlab port` into
// OUT/rocmlab_port_include/ and included instead of <cooperative_groups/reduce.h>.
// Works for any group with shfl_down(), shfl(), size() and thread_rank() (thread_block_tile<N>,
// coalesced_group), for any group size up to a whole 64-lane wavefront.
#pragma once
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>

namespace cooperative_groups {
#ifndef ROCMLAB_PORT_CG_OPS
#define ROCMLAB_PORT_CG_OPS
template <class T> struct plus { __device__ T operator()(const T &a, const T &b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(const T &a, const T &b) const { return b < a ? b : a; } };
template <class T> struct greater { __device__ T operator()(const T &a, const T &b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(const T &a, const T &b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(const T &a, const T &b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(const T &a, const T &b) const { return a ^ b; } };
#endif

template <class Group, class T, class Op>
__device__ T reduce(const Group &g, T value, Op op) {
  const unsigned n = g.size();
  const unsigned rank = g.thread_rank();
  for (unsigned offset = 1; offset < n; offset *= 2) {
    T other = g.shfl_down(value, offset);
    if (rank + offset < n) value = op(value, other);
  }
  return g.shfl(value, 0);
}
}  // namespace cooperative_groups
