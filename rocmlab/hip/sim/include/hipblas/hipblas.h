// hipblas/hipblas.h of rocmlab's CPU simulator ("[cpu: wave64 simulator]"): the hipBLAS calls the course uses
// (sgemm-hipblas), computed on the host by a plain reference GEMM (column-major, as BLAS), double accumulation.
// Not rocBLAS's kernels: the results match a reference, the time is never measured.
#pragma once
#ifndef HIPSIM_HIPBLAS_H
#define HIPSIM_HIPBLAS_H
#include <hip/hip_runtime.h>

enum hipblasStatus_t {
    HIPBLAS_STATUS_SUCCESS = 0, HIPBLAS_STATUS_NOT_INITIALIZED = 1, HIPBLAS_STATUS_ALLOC_FAILED = 2,
    HIPBLAS_STATUS_INVALID_VALUE = 3, HIPBLAS_STATUS_MAPPING_ERROR = 4, HIPBLAS_STATUS_EXECUTION_FAILED = 5,
    HIPBLAS_STATUS_INTERNAL_ERROR = 6, HIPBLAS_STATUS_NOT_SUPPORTED = 7, HIPBLAS_STATUS_ARCH_MISMATCH = 8,
    HIPBLAS_STATUS_HANDLE_IS_NULLPTR = 9, HIPBLAS_STATUS_INVALID_ENUM = 10, HIPBLAS_STATUS_UNKNOWN = 11,
};
enum hipblasOperation_t { HIPBLAS_OP_N = 111, HIPBLAS_OP_T = 112, HIPBLAS_OP_C = 113 };
struct hipsim_hipblas_handle { hipStream_t stream; };
typedef hipsim_hipblas_handle* hipblasHandle_t;

namespace hipsim {
void device_written(const void* p, size_t bytes);   // runtime.cpp: the sanitizer counts these bytes as written
// runtime.cpp: the GEMM's answer, computed outside the learner's instrumented code (a host loop's cost)
void reference_sgemm(bool a_n, bool b_n, int m, int n, int k, float alpha, const float* A, int lda, const float* B,
                     int ldb, float beta, float* C, int ldc);
void device_pointer(const volatile void* p, const char* api, const char* what);   // host memory: the GPU's fault
}

inline hipblasStatus_t hipblasCreate(hipblasHandle_t* h) {
    if (!h) return HIPBLAS_STATUS_INVALID_VALUE;
    *h = new hipsim_hipblas_handle{nullptr};
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasDestroy(hipblasHandle_t h) {
    if (!h) return HIPBLAS_STATUS_NOT_INITIALIZED;
    delete h;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasSetStream(hipblasHandle_t h, hipStream_t s) {
    if (!h) return HIPBLAS_STATUS_NOT_INITIALIZED;
    h->stream = s;
    return HIPBLAS_STATUS_SUCCESS;
}
inline hipblasStatus_t hipblasGetStream(hipblasHandle_t h, hipStream_t* s) {
    if (!h || !s) return HIPBLAS_STATUS_NOT_INITIALIZED;
    *s = h->stream;
    return HIPBLAS_STATUS_SUCCESS;
}
// C = alpha op(A) op(B) + beta C, column-major: op(A) is m x k, op(B) k x n, C m x n.
inline hipblasStatus_t hipblasSgemm(hipblasHandle_t h, hipblasOperation_t ta, hipblasOperation_t tb, int m, int n,
                                    int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                                    const float* beta, float* C, int ldc) {
    if (!h) return HIPBLAS_STATUS_NOT_INITIALIZED;
    if ((ta != HIPBLAS_OP_N && ta != HIPBLAS_OP_T && ta != HIPBLAS_OP_C) ||
        (tb != HIPBLAS_OP_N && tb != HIPBLAS_OP_T && tb != HIPBLAS_OP_C))
        return HIPBLAS_STATUS_INVALID_ENUM;
    if (m < 0 || n < 0 || k < 0 || !alpha || !beta || ldc < (m > 1 ? m : 1) ||
        lda < ((ta == HIPBLAS_OP_N ? m : k) > 1 ? (ta == HIPBLAS_OP_N ? m : k) : 1) ||
        ldb < ((tb == HIPBLAS_OP_N ? k : n) > 1 ? (tb == HIPBLAS_OP_N ? k : n) : 1))
        return HIPBLAS_STATUS_INVALID_VALUE;
    if (m > 0 && n > 0) {          // the matrices are read and written by the GPU: device memory or a fault
        if (k > 0) {
            ::hipsim::device_pointer(A, "hipblasSgemm", "A");
            ::hipsim::device_pointer(B, "hipblasSgemm", "B");
        }
        ::hipsim::device_pointer(C, "hipblasSgemm", "C");
    }
    ::hipsim::reference_sgemm(ta == HIPBLAS_OP_N, tb == HIPBLAS_OP_N, m, n, k, *alpha, A, lda, B, ldb, *beta, C, ldc);
    if (n > 0) ::hipsim::device_written(C, (static_cast<size_t>(n - 1) * ldc + m) * sizeof(float));
    return HIPBLAS_STATUS_SUCCESS;
}
#endif  // HIPSIM_HIPBLAS_H
