// tile_gemm.hip: C = A (n x K) x B (K x n) in fp32, each thread computing a TM x TN tile of C in registers.
// HIP's __launch_bounds__(MAX_THREADS, MIN_WAVES_PER_EU) is not CUDA's (MAX_THREADS, MIN_BLOCKS_PER_SM): the
// second number is waves per SIMD (amdgpu_waves_per_eu). CUDA's "2 blocks of 512 per SM" is, on a CU of
// 4 SIMDs with 64-lane wavefronts, 2 x 512 / 64 / 4 = 4 waves per SIMD, which leaves 512 / 4 = 128 VGPRs
// per lane. The 8 x 12 tile sits right at that limit (ROCm 7.2.4: 128 VGPRs on gfx942, a 12-byte spill on
// gfx90a), so the tile shrinks to 8 x 8: 110 VGPRs, occupancy 4 waves/SIMD, no scratch on both.
#include <hip/hip_runtime.h>
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

constexpr int kThreads = 512;
constexpr int kWavesPerSimd = 4;   // CUDA's 2 blocks of 512 per SM, in HIP's unit
constexpr int TM = 8, TN = 8;    // the register tile of one thread: fits in 128 VGPRs

__global__ void __launch_bounds__(kThreads, kWavesPerSimd)
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
    HIP_CHECK(hipMalloc(&a, sizeof(float) * n * K));
    HIP_CHECK(hipMalloc(&b, sizeof(float) * K * n));
    HIP_CHECK(hipMalloc(&c, sizeof(float) * n * n));
    HIP_CHECK(hipMemcpy(a, in[0].f32(), sizeof(float) * n * K, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(b, in[1].f32(), sizeof(float) * K * n, hipMemcpyHostToDevice));
    const int threads = (n / TM) * (n / TN);
    tile_gemm<<<(threads + kThreads - 1) / kThreads, kThreads>>>(a, b, c, n, K);
    HIP_CHECK(hipGetLastError());
    std::vector<float> out((size_t)n * n);
    HIP_CHECK(hipMemcpy(out.data(), c, sizeof(float) * out.size(), hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(b));
    HIP_CHECK(hipFree(c));
    xio::Writer(argv[2]).f32(out.data(), out.size());
    std::printf("tile_gemm n=%d K=%d: done\n", n, K);
    return 0;
}
