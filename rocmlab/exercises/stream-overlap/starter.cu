// overlap.cu: y = x * x + 1, in chunks on several streams so that copies and kernels overlap.
#include <cuda_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
    float *hx, *hy, *dx, *dy;
    CUDA_CHECK(cudaHostAlloc(&hx, bytes, cudaHostAllocDefault));  // pinned: async copies need it
    CUDA_CHECK(cudaHostAlloc(&hy, bytes, cudaHostAllocDefault));
    CUDA_CHECK(cudaMalloc(&dx, bytes));
    CUDA_CHECK(cudaMalloc(&dy, bytes));
    std::memcpy(hx, in[0].f32(), bytes);
    cudaStream_t streams[kStreams];
    for (int s = 0; s < kStreams; ++s) CUDA_CHECK(cudaStreamCreate(&streams[s]));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));

    const int chunk = (n + kStreams - 1) / kStreams;
    CUDA_CHECK(cudaEventRecord(start));
    for (int s = 0; s < kStreams; ++s) {
        const int off = s * chunk, len = std::min(chunk, n - off);
        if (len <= 0) break;
        CUDA_CHECK(cudaMemcpyAsync(dx + off, hx + off, len * sizeof(float), cudaMemcpyHostToDevice, streams[s]));
        square_plus_one<<<(len + 255) / 256, 256, 0, streams[s]>>>(dx + off, dy + off, len);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaMemcpyAsync(hy + off, dy + off, len * sizeof(float), cudaMemcpyDeviceToHost, streams[s]));
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaDeviceSynchronize());
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));

    int bad = 0;
    for (int i = 0; i < n; ++i) {
        const float v = in[0].f32()[i], want = v * v + 1.0f;
        bad += std::fabs(hy[i] - want) > 1e-6f * want;
    }
    xio::Writer w(argv[2]);
    w.f32(hy, n);
    w.scalar(ms);
    w.save();
    for (int s = 0; s < kStreams; ++s) CUDA_CHECK(cudaStreamDestroy(streams[s]));
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    CUDA_CHECK(cudaFreeHost(hx));
    CUDA_CHECK(cudaFreeHost(hy));
    CUDA_CHECK(cudaFree(dx));
    CUDA_CHECK(cudaFree(dy));
    std::printf("overlap n=%d in %d streams: %.4f ms: %s\n", n, kStreams, ms, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
