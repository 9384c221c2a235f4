// overlap.hip: y = x * x + 1, in chunks on several streams so that copies and kernels overlap.
#include <hip/hip_runtime.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                   \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                         \
        if (err_ != hipSuccess) {                                                         \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),     \
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
    HIP_CHECK(hipHostMalloc(&hx, bytes, hipHostMallocDefault));  // pinned: async copies need it
    HIP_CHECK(hipHostMalloc(&hy, bytes, hipHostMallocDefault));
    HIP_CHECK(hipMalloc(&dx, bytes));
    HIP_CHECK(hipMalloc(&dy, bytes));
    std::memcpy(hx, in[0].f32(), bytes);
    hipStream_t streams[kStreams];
    for (int s = 0; s < kStreams; ++s) HIP_CHECK(hipStreamCreate(&streams[s]));
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));

    const int chunk = (n + kStreams - 1) / kStreams;
    HIP_CHECK(hipEventRecord(start));
    for (int s = 0; s < kStreams; ++s) {
        const int off = s * chunk, len = std::min(chunk, n - off);
        if (len <= 0) break;
        HIP_CHECK(hipMemcpyAsync(dx + off, hx + off, len * sizeof(float), hipMemcpyHostToDevice, streams[s]));
        square_plus_one<<<(len + 255) / 256, 256, 0, streams[s]>>>(dx + off, dy + off, len);
        HIP_CHECK(hipGetLastError());
        HIP_CHECK(hipMemcpyAsync(hy + off, dy + off, len * sizeof(float), hipMemcpyDeviceToHost, streams[s]));
    }
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipDeviceSynchronize());
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));

    int bad = 0;
    for (int i = 0; i < n; ++i) {
        const float v = in[0].f32()[i], want = v * v + 1.0f;
        bad += std::fabs(hy[i] - want) > 1e-6f * want;
    }
    xio::Writer w(argv[2]);
    w.f32(hy, n);
    w.scalar(ms);
    w.save();
    for (int s = 0; s < kStreams; ++s) HIP_CHECK(hipStreamDestroy(streams[s]));
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipHostFree(hx));
    HIP_CHECK(hipHostFree(hy));
    HIP_CHECK(hipFree(dx));
    HIP_CHECK(hipFree(dy));
    std::printf("overlap n=%d in %d streams: %.4f ms: %s\n", n, kStreams, ms, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
