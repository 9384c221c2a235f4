// sgemm.cu: C = alpha * A * B + beta * C with cuBLAS (column-major). Port it to hipBLAS.
// Its CUDA calls are checked; its cuBLAS calls are not: every cublasStatus_t they return is ignored.
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define CUDA_CHECK(expr)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (expr);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_),     \
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
    CUDA_CHECK(cudaMalloc(&A, sizeof(float) * M * K));
    CUDA_CHECK(cudaMalloc(&B, sizeof(float) * K * N));
    CUDA_CHECK(cudaMalloc(&C, sizeof(float) * M * N));
    CUDA_CHECK(cudaMalloc(&scratch, sizeof(float) * M * N));
    CUDA_CHECK(cudaMemcpy(A, hA, sizeof(float) * M * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(B, hB, sizeof(float) * K * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(C, hC, sizeof(float) * M * N, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(scratch, hC, sizeof(float) * M * N, cudaMemcpyHostToDevice));

    cublasHandle_t handle;
    cublasCreate(&handle);
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, scratch, M);
    const int reps = 10;
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r)
        cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, scratch, M);
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, M, N, K, &alpha, A, M, B, K, &beta, C, M);
    std::vector<float> out(static_cast<size_t>(M) * N);
    CUDA_CHECK(cudaMemcpy(out.data(), C, sizeof(float) * M * N, cudaMemcpyDeviceToHost));

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
    cublasDestroy(handle);
    CUDA_CHECK(cudaFree(A));
    CUDA_CHECK(cudaFree(B));
    CUDA_CHECK(cudaFree(C));
    CUDA_CHECK(cudaFree(scratch));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("sgemm %dx%dx%d: %.4f ms, %.2f TFLOP/s: %s\n", M, N, K, ms, 2.0 * M * N * K / ms / 1e9, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
