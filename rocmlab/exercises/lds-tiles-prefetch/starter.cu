// stencil.cu: a 17-point weighted stencil, y[i] = sum_k w[k] * x[i + k - 8], read straight from global memory.
// Port to HIP, then prefetch each block's input into a 16 KB shared tile with 128-byte-aligned loads.
#include <cuda_runtime.h>
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

constexpr int R = 8;

__global__ void stencil(const float* x, const float* w, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float acc = 0.f;
    for (int k = 0; k <= 2 * R; ++k) {
        int j = i + k - R;
        if (j >= 0 && j < n) acc += w[k] * x[j];
    }
    y[i] = acc;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *x, *w, *y;
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&w, (2 * R + 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(w, in[1].f32(), (2 * R + 1) * sizeof(float), cudaMemcpyHostToDevice));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 20;
    stencil<<<(n + 255) / 256, 256>>>(x, w, y, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r) stencil<<<(n + 255) / 256, 256>>>(x, w, y, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; i += 97) {
        double acc = 0.0;
        for (int k = 0; k <= 2 * R; ++k) { int j = i + k - R; if (j >= 0 && j < n) acc += double(in[1].f32()[k]) * in[0].f32()[j]; }
        bad += std::fabs(out[i] - acc) > 1e-4 * (1.0 + std::fabs(acc));
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(w));
    CUDA_CHECK(cudaFree(y));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), n);
    wr.scalar(ms);
    std::printf("stencil n=%d: %.4f ms, %.1f GB/s: %s\n", n, ms, 8.0 * n / ms / 1e6, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
