// tile_gemm.cu: C = A (n x K) x B (K x n) in fp32, each thread computing a TM x TN tile of C in registers.
// __launch_bounds__(512, 2): blocks of at most 512 threads, and at least 2 such blocks resident per SM,
// so the compiler keeps each thread within the registers that 2 x 512 threads leave it.
#include <cuda_runtime.h>
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

constexpr int kThreads = 512;
constexpr int TM = 8, TN = 12;   // the register tile of one thread

__global__ void __launch_bounds__(kThreads, 2)
tile_gemm(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n, int K) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    const int cols = n / TN;
    const int r0 = (t / cols) * TM, c0 = (t % cols) * TN;
    if (r0 >= n) return;
    float acc[TM][TN] = {};
    for (int k = 0; k < K; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; ++i) a[i] = A[(size_t)(r0 + i) * K + k];
#pragma unroll
        for (int j = 0; j < TN; ++j) b[j] = B[(size_t)k * n + c0 + j];
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
    }
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) C[(size_t)(r0 + i) * n + c0 + j] = acc[i][j];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = in[2].i32()[0], K = in[2].i32()[1];
    if (n % TM || n % TN) { std::fprintf(stderr, "tile_gemm: n must be a multiple of %d and %d\n", TM, TN); return 2; }
    float *a, *b, *c;
    CUDA_CHECK(cudaMalloc(&a, sizeof(float) * n * K));
    CUDA_CHECK(cudaMalloc(&b, sizeof(float) * K * n));
    CUDA_CHECK(cudaMalloc(&c, sizeof(float) * n * n));
    CUDA_CHECK(cudaMemcpy(a, in[0].f32(), sizeof(float) * n * K, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, in[1].f32(), sizeof(float) * K * n, cudaMemcpyHostToDevice));
    const int threads = (n / TM) * (n / TN);
    tile_gemm<<<(threads + kThreads - 1) / kThreads, kThreads>>>(a, b, c, n, K);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out((size_t)n * n);
    CUDA_CHECK(cudaMemcpy(out.data(), c, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    xio::Writer(argv[2]).f32(out.data(), out.size());
    std::printf("tile_gemm n=%d K=%d: done\n", n, K);
    return 0;
}
