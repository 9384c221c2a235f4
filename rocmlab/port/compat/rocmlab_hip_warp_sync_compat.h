// rocmlab_hip_warp_sync_compat.h -- FOR OFFLINE COMPILE CHECKS ONLY (rocmlab port).
//
// Debian's HIP headers are version 5.2, which has no warp-sync builtins. ROCm 6.2 and later
// declare __shfl_sync, __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync, __ballot_sync,
// __any_sync, __all_sync and __activemask, with a lane mask that MUST be a 64-bit integer
// (a 32-bit mask such as 0xffffffff is rejected at compile time). This header declares them
// the same way, so that an offline compile of a port fails or passes as it would with a
// current ROCm. `rocmlab port` puts it behind <hip/hip_runtime.h> (a shim folder on the
// include path whose hip/hip_runtime.h includes the real one, then this file), so a file
// gets it only where it includes the HIP runtime itself; only for the offline toolchain,
// never for a ROCm toolchain, and its report says so. It is never copied into the port.
//
// The bodies act on the whole wavefront (HIP's mask-less builtins) and do not implement
// divergent-mask semantics: use the programs built with it to read compiler errors, not
// to run.
#ifndef ROCMLAB_HIP_WARP_SYNC_COMPAT_H
#define ROCMLAB_HIP_WARP_SYNC_COMPAT_H

#if defined(__HIPCC__)
#include <hip/hip_version.h>
#if HIP_VERSION < 60200000 && !defined(HIP_DISABLE_WARP_SYNC_BUILTINS)
#include <hip/hip_runtime.h>

#define ROCMLAB_WARP_SYNC_COMPAT 1

// a 64-bit integer type: 8 bytes, and integer division (3 / 2 == 1 rules out double)
#define ROCMLAB_CHECK_MASK(MaskT)                                                        \
  static_assert(sizeof(MaskT) == 8 && MaskT(3) / MaskT(2) == MaskT(1),                   \
                "The mask must be a 64-bit integer (as in ROCm 6.2+): a 32-bit mask "    \
                "such as 0xffffffff covers lanes 0-31 of a 64-lane wavefront only")

__device__ inline unsigned long long __activemask() { return __ballot(1); }

template <typename MaskT>
__device__ inline unsigned long long __ballot_sync(MaskT mask, int predicate) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __ballot(predicate) & static_cast<unsigned long long>(mask);
}
template <typename MaskT>
__device__ inline int __any_sync(MaskT mask, int predicate) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __ballot_sync(mask, predicate) != 0;
}
template <typename MaskT>
__device__ inline int __all_sync(MaskT mask, int predicate) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __ballot_sync(mask, predicate) == static_cast<unsigned long long>(mask);
}
template <typename MaskT, typename T>
__device__ inline T __shfl_sync(MaskT mask, T var, int src_lane, int width = warpSize) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __shfl(var, src_lane, width);
}
template <typename MaskT, typename T>
__device__ inline T __shfl_up_sync(MaskT mask, T var, unsigned int delta, int width = warpSize) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __shfl_up(var, delta, width);
}
template <typename MaskT, typename T>
__device__ inline T __shfl_down_sync(MaskT mask, T var, unsigned int delta, int width = warpSize) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __shfl_down(var, delta, width);
}
template <typename MaskT, typename T>
__device__ inline T __shfl_xor_sync(MaskT mask, T var, int lane_mask, int width = warpSize) {
  ROCMLAB_CHECK_MASK(MaskT);
  return __shfl_xor(var, lane_mask, width);
}
#undef ROCMLAB_CHECK_MASK

#endif  // HIP_VERSION < 6.2
#endif  // __HIPCC__
#endif  // ROCMLAB_HIP_WARP_SYNC_COMPAT_H
