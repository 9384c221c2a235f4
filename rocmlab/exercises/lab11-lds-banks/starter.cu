// gemv_lds.cu: y = A x for a rows x cols float matrix A (row-major), one thread per row, the block's rows
// staged through shared memory (LDS on AMD) KT columns at a time, stored transposed so that the dot
// products read it conflict-free. It is correct, and slow: find why from the counters, then fix it.
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

constexpr int kThreads = 256;   // one row per thread
constexpr int KT = 8;           // columns per step

__global__ void gemv_lds(const float* A, const float* x, float* y, int rows, int cols) {
    __shared__ float tile[KT][kThreads];      // tile[k][row]: column k of the block's rows
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
    CUDA_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&x, cols * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, rows * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(a, in[1].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(x, in[2].f32(), cols * sizeof(float), cudaMemcpyHostToDevice));
    const int blocks = (rows + kThreads - 1) / kThreads;
    gemv_lds<<<blocks, kThreads>>>(a, x, y, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < reps; ++i) gemv_lds<<<blocks, kThreads>>>(a, x, y, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(rows);
    CUDA_CHECK(cudaMemcpy(out.data(), y, rows * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("gemv_lds %dx%d: %.4f ms, %.1f GB/s\n", rows, cols, ms, n * sizeof(float) / ms / 1e6);
    return 0;
}
