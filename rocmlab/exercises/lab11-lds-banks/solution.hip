// gemv_lds.hip: y = A x for a rows x cols float matrix A (row-major), one thread per row, the block's rows
// staged through LDS KT columns at a time, stored transposed (tile[k][row]). Each row of the tile is padded
// by 4 floats: 32 lanes store tile[kk][rr] for kk = 0..7, rr = 0..3, word kk * 260 + rr, bank (4 kk + rr) % 32:
// 32 different banks. Unpadded (256 words a row) all 8 kk of one rr share a bank; padded by 1, bank kk + rr
// still repeats (4-way).
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

constexpr int kThreads = 256;   // one row per thread
constexpr int KT = 8;           // columns per step

__global__ void gemv_lds(const float* A, const float* x, float* y, int rows, int cols) {
    __shared__ float tile[KT][kThreads + 4];  // +4: the 32 lanes of a store hit 32 different banks
    const int row0 = blockIdx.x * kThreads;
    float acc = 0.f;
    for (int k0 = 0; k0 < cols; k0 += KT) {
        // KT consecutive floats of a row per KT consecutive threads: the global reads are contiguous
        for (int i = threadIdx.x; i < kThreads * KT; i += kThreads) {
            const int rr = i / KT, kk = i % KT;
            tile[kk][rr] = row0 + rr < rows ? A[static_cast<size_t>(row0 + rr) * cols + k0 + kk] : 0.f;
        }
        __syncthreads();
        for (int kk = 0; kk < KT; ++kk) acc += tile[kk][threadIdx.x] * x[k0 + kk];
        __syncthreads();
    }
    if (row0 + threadIdx.x < rows) y[row0 + threadIdx.x] = acc;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[0].i32()[0], cols = in[0].i32()[1];
    if (cols % KT) { std::fprintf(stderr, "gemv_lds: cols must be a multiple of %d\n", KT); return 2; }
    const size_t n = static_cast<size_t>(rows) * cols;
    float *a, *x, *y;
    HIP_CHECK(hipMalloc(&a, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&x, cols * sizeof(float)));
    HIP_CHECK(hipMalloc(&y, rows * sizeof(float)));
    HIP_CHECK(hipMemcpy(a, in[1].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(x, in[2].f32(), cols * sizeof(float), hipMemcpyHostToDevice));
    const int blocks = (rows + kThreads - 1) / kThreads;
    gemv_lds<<<blocks, kThreads>>>(a, x, y, rows, cols);
    HIP_CHECK(hipGetLastError());
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int i = 0; i < reps; ++i) gemv_lds<<<blocks, kThreads>>>(a, x, y, rows, cols);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(rows);
    HIP_CHECK(hipMemcpy(out.data(), y, rows * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(y));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("gemv_lds %dx%d: %.4f ms, %.1f GB/s\n", rows, cols, ms, n * sizeof(float) / ms / 1e6);
    return 0;
}
