// segment_scan.cu: inclusive prefix sums within each segment of 256 elements, with warp shuffles.
// The warp size is hard-coded as 32 in several places. Find them all and make the kernel correct for warpSize 64.
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

#define WARP_SIZE 32
constexpr int kBlock = 256;

__global__ void segment_scan(const float* x, float* y, int n) {
    __shared__ float warp_total[kBlock / WARP_SIZE];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float v = i < n ? x[i] : 0.f;
    for (int offset = 1; offset < WARP_SIZE; offset *= 2) {
        float t = __shfl_up_sync(0xffffffff, v, offset);
        if (lane >= offset) v += t;
    }
    const float total = __shfl_sync(0xffffffff, v, WARP_SIZE - 1);  // every lane learns its warp's total
    if (lane == 0) warp_total[warp] = total;
    __syncthreads();
    float before = 0.f;
    for (int w = 0; w < warp; ++w) before += warp_total[w];
    if (i < n) y[i] = v + before;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *x, *y;
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&y, n * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    segment_scan<<<(n + kBlock - 1) / kBlock, kBlock>>>(x, y, n);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), y, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0;
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc = (i % kBlock == 0 ? 0.0 : acc) + in[0].f32()[i];
        bad += std::fabs(out[i] - acc) > 1e-4 * (1.0 + std::fabs(acc));
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    xio::Writer(argv[2]).f32(out.data(), n);
    std::printf("segment_scan n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
