// stencil7.cu: out[i] = sum over j = -3..3 of W[j] * in[i + j] (zero outside), each block staging its
// part of the input in shared memory (LDS on AMD). It is correct, and slow on MI300X: find why, then fix it.
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
constexpr int R = 3;                       // the stencil's radius
constexpr int kMaxTile = 12 * 1024;        // "room for any block size": 48 KB, the most a static array may take

__constant__ float W[2 * R + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

__global__ void stencil7(const float* in, float* out, int n) {
    __shared__ float tile[kMaxTile];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int t = threadIdx.x + R;
    tile[t] = i < n ? in[i] : 0.f;
    if (threadIdx.x < R) {                 // the halo on both sides
        const int lo = i - R, hi = i + blockDim.x;
        tile[threadIdx.x] = lo >= 0 && lo < n ? in[lo] : 0.f;
        tile[t + blockDim.x] = hi < n ? in[hi] : 0.f;
    }
    __syncthreads();
    if (i >= n) return;
    float acc = 0.f;
    for (int j = -R; j <= R; ++j) acc += W[j + R] * tile[t + j];
    out[i] = acc;
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
    stencil7<<<blocks, kThreads>>>(a, o, n);
    CUDA_CHECK(cudaGetLastError());
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < reps; ++i) stencil7<<<blocks, kThreads>>>(a, o, n);
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
    std::printf("stencil7 n=%d: %.4f ms, %.1f GB/s\n", n, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
