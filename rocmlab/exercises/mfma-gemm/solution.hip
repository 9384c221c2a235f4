// gemm_mfma.hip: C = A x B (fp16 inputs, fp32 accumulation) on the matrix cores of CDNA (MI200, MI300X, MI355X).
//   - one block of 256 threads = 4 wavefronts of 64 computes a 64 x 64 tile of C;
//   - each wavefront owns a 32 x 32 sub-tile: 2 x 2 MFMA tiles of 16 x 16, four fp32 accumulators per lane each;
//   - per K step of 16 the block stages A (64 x 16) and B (16 x 64) in LDS as fp16, then every wavefront issues
//     four __builtin_amdgcn_mfma_f32_16x16x16f16 (v_mfma_f32_16x16x16_f16 on gfx942/gfx950, ..._16x16x16f16 on gfx90a).
// MFMA exists only on AMD CDNA GPUs: there is no NVIDIA path for this program.
// Lane layout of v_mfma_f32_16x16x16f16 (a wavefront of 64 lanes, lane = l):
//   A operand: row l % 16, k = 4 * (l / 16) + e  (e = 0..3)
//   B operand: col l % 16, k = 4 * (l / 16) + e
//   C/D:       row 4 * (l / 16) + e, col l % 16
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),       \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

typedef _Float16 half4 __attribute__((ext_vector_type(4)));
typedef float floatx4 __attribute__((ext_vector_type(4)));

constexpr int kBM = 64, kBN = 64, kBK = 16;
constexpr int kThreads = 256;
constexpr int kLanes = 64;   // an MFMA instruction works on a whole 64-lane wavefront (CDNA only)
constexpr int kPad = 4;      // LDS padding: consecutive rows start in different banks

__global__ __launch_bounds__(kThreads) void gemm_mfma(const float* __restrict__ A, const float* __restrict__ B,
                                                      float* __restrict__ C, int M, int N, int K) {
    __shared__ _Float16 As[kBM][kBK + kPad];
    __shared__ _Float16 Bs[kBK][kBN + kPad];
    const int wave = threadIdx.x / kLanes, lane = threadIdx.x % kLanes;
    const int wm = (wave / 2) * 32, wn = (wave % 2) * 32;     // this wavefront's 32 x 32 sub-tile
    const int row0 = blockIdx.y * kBM, col0 = blockIdx.x * kBN;
    const int r16 = lane % 16, k4 = 4 * (lane / 16);
    floatx4 acc[2][2];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) acc[i][j] = floatx4{0.f, 0.f, 0.f, 0.f};

    for (int k0 = 0; k0 < K; k0 += kBK) {
        for (int e = threadIdx.x; e < kBM * kBK; e += kThreads) {
            const int r = e / kBK, c = e % kBK;
            As[r][c] = static_cast<_Float16>(A[static_cast<size_t>(row0 + r) * K + k0 + c]);
        }
        for (int e = threadIdx.x; e < kBK * kBN; e += kThreads) {
            const int r = e / kBN, c = e % kBN;
            Bs[r][c] = static_cast<_Float16>(B[static_cast<size_t>(k0 + r) * N + col0 + c]);
        }
        __syncthreads();
        half4 a[2], b[2];
        for (int i = 0; i < 2; ++i)
            for (int e = 0; e < 4; ++e) a[i][e] = As[wm + 16 * i + r16][k4 + e];
        for (int j = 0; j < 2; ++j)
            for (int e = 0; e < 4; ++e) b[j][e] = Bs[k4 + e][wn + 16 * j + r16];
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) acc[i][j] = __builtin_amdgcn_mfma_f32_16x16x16f16(a[i], b[j], acc[i][j], 0, 0, 0);
        __syncthreads();
    }
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            for (int e = 0; e < 4; ++e)
                C[static_cast<size_t>(row0 + wm + 16 * i + k4 + e) * N + col0 + wn + 16 * j + r16] = acc[i][j][e];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int M = in[2].i32()[0], N = in[2].i32()[1], K = in[2].i32()[2];
    if (M % kBM || N % kBN || K % kBK) {
        std::fprintf(stderr, "gemm_mfma: M and N must be multiples of %d and K of %d (got %d x %d x %d)\n", kBM, kBK, M, N, K);
        return 2;
    }
    float *a, *b, *c;
    HIP_CHECK(hipMalloc(&a, sizeof(float) * M * K));
    HIP_CHECK(hipMalloc(&b, sizeof(float) * K * N));
    HIP_CHECK(hipMalloc(&c, sizeof(float) * M * N));
    HIP_CHECK(hipMemcpy(a, in[0].f32(), sizeof(float) * M * K, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(b, in[1].f32(), sizeof(float) * K * N, hipMemcpyHostToDevice));
    const dim3 grid(N / kBN, M / kBM);
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    gemm_mfma<<<grid, kThreads>>>(a, b, c, M, N, K);   // warm-up
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(start));
    gemm_mfma<<<grid, kThreads>>>(a, b, c, M, N, K);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    std::vector<float> out(static_cast<size_t>(M) * N);
    HIP_CHECK(hipMemcpy(out.data(), c, sizeof(float) * M * N, hipMemcpyDeviceToHost));
    // self-check one row against the host (fp16 inputs are exact in fp32; the sum order differs)
    double worst = 0.0;
    for (int j = 0; j < N; ++j) {
        double want = 0.0, scale = 0.0;
        for (int k = 0; k < K; ++k) {
            want += static_cast<double>(in[0].f32()[k]) * in[1].f32()[static_cast<size_t>(k) * N + j];
            scale += std::fabs(static_cast<double>(in[0].f32()[k]) * in[1].f32()[static_cast<size_t>(k) * N + j]);
        }
        worst = std::fmax(worst, std::fabs(out[j] - want) / (scale + 1e-30));
    }
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(b));
    HIP_CHECK(hipFree(c));
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("gemm_mfma %d x %d x %d: %.4f ms, %.2f TFLOP/s, row 0 rel err %.2g: %s\n", M, N, K, ms,
                2.0 * M * N * K / (ms * 1e-3) / 1e12, worst, worst < 1e-5 ? "PASSED" : "FAILED");
    return worst < 1e-5 ? 0 : 1;
}
