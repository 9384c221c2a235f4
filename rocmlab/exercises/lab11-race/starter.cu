// block_reverse.cu: out = in with every block of 256 elements reversed in place (the last block may be
// shorter), through shared memory. It gives wrong answers on some runs: find the race, then fix it.
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

__global__ void block_reverse(const float* in, float* out, int n) {
    __shared__ float tile[kThreads];
    const int base = blockIdx.x * kThreads;
    const int len = min(kThreads, n - base);     // the last block may be shorter
    const int t = threadIdx.x;
    if (t < len) tile[t] = in[base + t];
    if (t < len) out[base + t] = tile[len - 1 - t];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *a, *o;
    CUDA_CHECK(cudaMalloc(&a, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&o, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(a, in[0].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    const int blocks = (n + kThreads - 1) / kThreads;
    block_reverse<<<blocks, kThreads>>>(a, o, n);
    CUDA_CHECK(cudaGetLastError());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < reps; ++i) block_reverse<<<blocks, kThreads>>>(a, o, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), o, n * sizeof(float), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(o));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("block_reverse n=%d: %.4f ms, %.1f GB/s\n", n, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
