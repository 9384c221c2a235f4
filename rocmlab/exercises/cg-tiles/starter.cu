// group_absmax.cu: the scale of every group of 32 values for int8 quantisation: scale[g] = max |x| / 127.
// One warp of 32 threads per group: a butterfly of __shfl_xor_sync over the warp's 32 lanes.
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

constexpr int kGroup = 32;
constexpr int kThreads = 256;

__global__ void group_absmax(const float* x, float* scale, int groups) {
    const int g = (blockIdx.x * blockDim.x + threadIdx.x) / 32;   // one warp per group
    const int lane = threadIdx.x % 32;
    float m = g < groups ? fabsf(x[(size_t)g * kGroup + lane]) : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffff, m, offset));
    if (lane == 0 && g < groups) scale[g] = m / 127.f;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int groups = (int)(in[0].size() / kGroup);
    float *x, *scale;
    CUDA_CHECK(cudaMalloc(&x, sizeof(float) * in[0].size()));
    CUDA_CHECK(cudaMalloc(&scale, sizeof(float) * groups));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), sizeof(float) * in[0].size(), cudaMemcpyHostToDevice));
    const int blocks = (int)(((size_t)groups * kGroup + kThreads - 1) / kThreads);
    group_absmax<<<blocks, kThreads>>>(x, scale, groups);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out(groups);
    CUDA_CHECK(cudaMemcpy(out.data(), scale, sizeof(float) * groups, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(scale));
    xio::Writer(argv[2]).f32(out.data(), out.size());
    std::printf("group_absmax: %d groups of %d\n", groups, kGroup);
    return 0;
}
