// gemm_wmma.cu: C = A x B (fp16 inputs, fp32 accumulation) on NVIDIA tensor cores with nvcuda::wmma.
// Port it to AMD matrix cores: HIP has no nvcuda::wmma, and rocWMMA (its AMD counterpart) is broken in
// Debian's ROCm 7.2.4 packages, so call the MFMA instruction through its clang builtin.
//   - one block of 128 threads = 4 warps of 32 computes a 64 x 64 tile of C;
//   - each warp owns a 32 x 32 sub-tile: 2 x 2 WMMA fragments of 16 x 16;
//   - per K step of 16 the block stages A (64 x 16) and B (16 x 64) in shared memory as half.
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <mma.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

using namespace nvcuda;

#define CUDA_CHECK(expr)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (expr);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(err_),     \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kThreads = 128;

__global__ void gemm_mfma(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ __half As[kBM * kBK];
    __shared__ __half Bs[kBK * kBN];
    const int warp = threadIdx.x / 32;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) wmma::fill_fragment(acc[i][j], 0.0f);
    for (int k0 = 0; k0 < K; k0 += kBK) {
        for (int e = threadIdx.x; e < kBM * kBK; e += kThreads)
            As[e] = __float2half(A[(size_t)(row0 + e / kBK) * K + k0 + e % kBK]);
        for (int e = threadIdx.x; e < kBK * kBN; e += kThreads)
            Bs[e] = __float2half(B[(size_t)(k0 + e / kBN) * N + col0 + e % kBN]);
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b[2];
        for (int i = 0; i < 2; ++i) wmma::load_matrix_sync(a[i], As + (wm + 16 * i) * kBK, kBK);
        for (int j = 0; j < 2; ++j) wmma::load_matrix_sync(b[j], Bs + wn + 16 * j, kBN);
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], a[i], b[j], acc[i][j]);
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            wmma::store_matrix_sync(C + (size_t)(row0 + wm + 16 * i) * N + col0 + wn + 16 * j, acc[i][j], N,
                                    wmma::mem_row_major);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int M = in[2].i32()[0], N = in[2].i32()[1], K = in[2].i32()[2];
    if (M % kBM || N % kBN || K % kBK) {
        std::fprintf(stderr, "gemm: M and N must be multiples of %d and K of %d\n", kBM, kBK);
        return 2;
    }
    float *a, *b, *c;
    CUDA_CHECK(cudaMalloc(&a, sizeof(float) * M * K));
    CUDA_CHECK(cudaMalloc(&b, sizeof(float) * K * N));
    CUDA_CHECK(cudaMalloc(&c, sizeof(float) * M * N));
    CUDA_CHECK(cudaMemcpy(a, in[0].f32(), sizeof(float) * M * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, in[1].f32(), sizeof(float) * K * N, cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const dim3 grid(N / kBN, M / kBM);
    CUDA_CHECK(cudaEventRecord(start));
    gemm_mfma<<<grid, kThreads>>>(a, b, c, M, N, K);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::vector<float> out((size_t)M * N);
    CUDA_CHECK(cudaMemcpy(out.data(), c, sizeof(float) * M * N, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("gemm %d x %d x %d: %.4f ms\n", M, N, K, ms);
    return 0;
}
