// sgemm.hip: C = alpha * A * B + beta * C with hipBLAS (column-major, like cuBLAS).
#include <hip/hip_runtime.h>
#include <hipblas/hipblas.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                   \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                         \
        if (err_ != hipSuccess) {                                                         \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),     \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)
#define HIPBLAS_CHECK(expr)                                                                 \
    do {                                                                                   \
        hipblasStatus_t st_ = (expr);                                                       \
        if (st_ != HIPBLAS_STATUS_SUCCESS) {                                                \
            std::fprintf(stderr, "hipBLAS error %d at %s:%d\n", static_cast<int>(st_),      \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int M = in[0].i32()[0], N = in[0].i32()[1], K = in[0].i32()[2];
    const float alpha = in[1].f32()[0], beta = in[1].f32()[1];
    const float *hA = in[2].f32(), *hB = in[3].f32(), *hC = in[4].f32();
    float *A, *B, *C, *scratch;
    HIP_CHECK(hipMalloc(&A, sizeof(float) * M * K));
    HIP_CHECK(hipMalloc(&B, sizeof(float) * K * N));
    HIP_CHECK(hipMalloc(&C, sizeof(float) * M * N));
    HIP_CHECK(hipMalloc(&scratch, sizeof(float) * M * N));
    HIP_CHECK(hipMemcpy(A, hA, sizeof(float) * M * K, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(B, hB, sizeof(float) * K * N, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(C, hC, sizeof(float) * M * N, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(scratch, hC, sizeof(float) * M * N, hipMemcpyHostToDevice));

    hipblasHandle_t handle;
    HIPBLAS_CHECK(hipblasCreate(&handle));
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    HIPBLAS_CHECK(hipblasSgemm(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, scratch, M));
    const int reps = 10;
    HIP_CHECK(hipEventRecord(start));
    for (int r = 0; r < reps; ++r)
        HIPBLAS_CHECK(hipblasSgemm(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, scratch, M));
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;
    HIPBLAS_CHECK(hipblasSgemm(handle, HIPBLAS_OP_N, HIPBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, C, M));
    std::vector<float> out(static_cast<size_t>(M) * N);
    HIP_CHECK(hipMemcpy(out.data(), C, sizeof(float) * M * N, hipMemcpyDeviceToHost));

    // check up to 4096 entries on the host (all of them for small matrices)
    const size_t total = static_cast<size_t>(M) * N, step = total > 4096 ? total / 4096 : 1;
    int bad = 0;
    for (size_t idx = 0; idx < total; idx += step) {
        const int i = static_cast<int>(idx % M), j = static_cast<int>(idx / M);
        double acc = 0.0;
        for (int k = 0; k < K; ++k) acc += static_cast<double>(hA[i + static_cast<size_t>(k) * M]) * hB[k + static_cast<size_t>(j) * K];
        const double want = alpha * acc + beta * hC[idx];
        bad += std::fabs(out[idx] - want) > 1e-3 * (1.0 + std::fabs(want));
    }
    HIPBLAS_CHECK(hipblasDestroy(handle));
    HIP_CHECK(hipFree(A));
    HIP_CHECK(hipFree(B));
    HIP_CHECK(hipFree(C));
    HIP_CHECK(hipFree(scratch));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("sgemm %dx%dx%d: %.4f ms, %.2f TFLOP/s: %s\n", M, N, K, ms, 2.0 * M * N * K / ms / 1e9, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
