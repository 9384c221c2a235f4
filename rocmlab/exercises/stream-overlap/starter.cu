// overlap.cu: y = x * x + 1, one copy in, one kernel, one copy out: nothing overlaps.
// Split the work into kStreams chunks on their own streams so that one chunk's copies overlap another's kernel
// (asynchronous copies need pinned host memory).
#include <cuda_runtime.h>
#include <algorithm>
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

constexpr int kStreams = 4;

__global__ void square_plus_one(const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i] + 1.0f;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    const size_t bytes = n * sizeof(float);
    std::vector<float> hy(n);
    float *dx, *dy;
    CUDA_CHECK(cudaMalloc(&dx, bytes));
    CUDA_CHECK(cudaMalloc(&dy, bytes));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    CUDA_CHECK(cudaEventRecord(start));
    CUDA_CHECK(cudaMemcpy(dx, in[0].f32(), bytes, cudaMemcpyHostToDevice));
    square_plus_one<<<(n + 255) / 256, 256>>>(dx, dy, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemcpy(hy.data(), dy, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    int bad = 0;
    for (int i = 0; i < n; ++i) {
        const float v = in[0].f32()[i], want = v * v + 1.0f;
        bad += std::fabs(hy[i] - want) > 1e-6f * want;
    }
    xio::Writer w(argv[2]);
    w.f32(hy.data(), n);
    w.scalar(ms);
    w.save();
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dy));
    std::printf("overlap n=%d in 1 stream: %.4f ms: %s\n", n, ms, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
