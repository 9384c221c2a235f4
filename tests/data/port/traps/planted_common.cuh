// A shared header with planted traps in code that is compiled, and traps in code that is not.
#pragma once
#define HALF_WARP 16
#ifdef CUBLAS_API_H_
// never compiled: nothing includes cuBLAS, so this table is not a trap
static const char *cublasName(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS ? "ok" : "error"; }
#endif
#if 0
__device__ int never(int x) { return __shfl_down_sync(0xffffffff, x, 16) & 31; }
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700                  // TRAP cuda-arch-guard
__device__ inline int fast_path(int x) { return x; }
#endif
__device__ inline int lane_id() { return threadIdx.x & 31; }       // TRAP lane-arithmetic-32
