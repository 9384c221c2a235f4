// step_graph.cu: 200 steps of a small three-kernel update, y <- relu(0.5 y + x) - 0.25 y ... on a short vector.
// Each step is three tiny launches, so the time goes into launching, not computing. Capture one step
// (or all of them) into a CUDA graph, instantiate it once and launch the graph.
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

constexpr int kSteps = 200;
constexpr int kThreads = 256;

__global__ void scale_add(float* y, const float* x, int n) {       // y = 0.5 y + x
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * y[i] + x[i];
}
__global__ void relu(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] > 0.f ? y[i] : 0.f;
}
__global__ void damp(float* y, const float* x, int n) {           // y = y - 0.25 x
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] - 0.25f * x[i];
}

static void step(float* y, const float* x, int n, cudaStream_t s) {
    const int blocks = (n + kThreads - 1) / kThreads;
    scale_add<<<blocks, kThreads, 0, s>>>(y, x, n);
    relu<<<blocks, kThreads, 0, s>>>(y, n);
    damp<<<blocks, kThreads, 0, s>>>(y, x, n);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = (int)in[0].size();
    float *x, *y;
    CUDA_CHECK(cudaMalloc(&x, sizeof(float) * n));
    CUDA_CHECK(cudaMalloc(&y, sizeof(float) * n));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), sizeof(float) * n, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y, in[1].f32(), sizeof(float) * n, cudaMemcpyHostToDevice));
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreate(&s));
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK(cudaEventRecord(start, s));
    for (int t = 0; t < kSteps; ++t) step(y, x, n, s);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop, s));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), y, sizeof(float) * n, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaStreamDestroy(s));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("%d steps of 3 launches on n=%d: %.3f ms (%.2f us per step)\n", kSteps, n, ms, 1e3f * ms / kSteps);
    return 0;
}
