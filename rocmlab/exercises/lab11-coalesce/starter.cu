// scale_rows.cu: out[r][c] = in[r][c] * w[r] for a rows x cols float matrix (row-major).
// It is correct, and slow: find why from the counters (or the ISA), then fix it in your HIP port.
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

constexpr int kThreads = 256;

// One thread per element; consecutive threads walk DOWN a column (r = t % rows).
__global__ void scale_rows(const float* in, const float* w, float* out, int rows, int cols) {
    const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (t >= static_cast<size_t>(rows) * cols) return;
    const int r = static_cast<int>(t % rows);
    const int c = static_cast<int>(t / rows);
    out[static_cast<size_t>(r) * cols + c] = in[static_cast<size_t>(r) * cols + c] * w[r];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[0].i32()[0], cols = in[0].i32()[1];
    if (cols % 4) { std::fprintf(stderr, "scale_rows: cols must be a multiple of 4\n"); return 2; }
    const size_t n = static_cast<size_t>(rows) * cols;
    float *a, *w, *o;
    CUDA_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w, rows * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&o, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(a, in[1].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(w, in[2].f32(), rows * sizeof(float), cudaMemcpyHostToDevice));
    const int blocks = static_cast<int>((n + kThreads - 1) / kThreads);
    scale_rows<<<blocks, kThreads>>>(a, w, o, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < reps; ++i) scale_rows<<<blocks, kThreads>>>(a, w, o, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), o, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(w));
    CUDA_CHECK(cudaFree(o));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("scale_rows %dx%d: %.4f ms, %.1f GB/s\n", rows, cols, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
