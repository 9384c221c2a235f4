// segment_scan.hip: inclusive prefix sums within each segment of 256 elements, for any wavefront size.
// Every 32 of the CUDA version is warpSize now: lane and wave indices, the shuffle loop, the broadcast
// from the last lane, and the number of wavefront totals to add. The shared array keeps room for
// the smallest wavefront (32), so it is large enough for 64 too.
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),       \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr int kBlock = 256;
constexpr int kMaxWaves = kBlock / 32;

__global__ void segment_scan(const float* x, float* y, int n) {
    __shared__ float wave_total[kMaxWaves];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    float v = i < n ? x[i] : 0.f;
    for (int offset = 1; offset < warpSize; offset *= 2) {
        float t = __shfl_up(v, offset);
        if (lane >= offset) v += t;
    }
    const float total = __shfl(v, warpSize - 1);  // every lane learns its wavefront's total
    if (lane == 0) wave_total[wave] = total;
    __syncthreads();
    float before = 0.f;
    for (int w = 0; w < wave; ++w) before += wave_total[w];
    if (i < n) y[i] = v + before;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *x, *y;
    HIP_CHECK(hipMalloc(&x, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&y, n * sizeof(float)));
    HIP_CHECK(hipMemcpy(x, in[0].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    segment_scan<<<(n + kBlock - 1) / kBlock, kBlock>>>(x, y, n);
    HIP_CHECK(hipGetLastError());
    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), y, n * sizeof(float), hipMemcpyDeviceToHost));
    int bad = 0;
    double acc = 0.0;
    for (int i = 0; i < n; ++i) {
        acc = (i % kBlock == 0 ? 0.0 : acc) + in[0].f32()[i];
        bad += std::fabs(out[i] - acc) > 1e-4 * (1.0 + std::fabs(acc));
    }
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(y));
    xio::Writer(argv[2]).f32(out.data(), n);
    std::printf("segment_scan n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
