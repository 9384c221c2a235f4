// count_above.hip: per block of 256 elements, how many exceed a threshold, with wavefront votes.
// __ballot returns a 64-bit mask (one bit per lane of a 64-lane wavefront); count it with __popcll.
#include <hip/hip_runtime.h>
#include <cstdint>
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
constexpr int kMaxWaves = kBlock / 32;  // slots for the smallest wavefront (32); 64 uses half

__global__ void count_above(const float* x, int n, float threshold, unsigned int* counts) {
    __shared__ unsigned int wave_counts[kMaxWaves];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool pred = i < n && x[i] > threshold;
    unsigned long long mask = __ballot(pred);
    int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    if (lane == 0) wave_counts[wave] = __popcll(mask);
    __syncthreads();
    if (threadIdx.x == 0) {
        const int waves = (blockDim.x + warpSize - 1) / warpSize;
        unsigned int total = 0;
        for (int w = 0; w < waves; ++w) total += wave_counts[w];
        counts[blockIdx.x] = total;
    }
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    const float threshold = in[1].f32()[0];
    const int blocks = (n + kBlock - 1) / kBlock;
    float* x;
    unsigned int* counts;
    HIP_CHECK(hipMalloc(&x, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&counts, blocks * sizeof(unsigned int)));
    HIP_CHECK(hipMemcpy(x, in[0].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    count_above<<<blocks, kBlock>>>(x, n, threshold, counts);
    HIP_CHECK(hipGetLastError());
    std::vector<uint32_t> out(blocks);
    HIP_CHECK(hipMemcpy(out.data(), counts, blocks * sizeof(unsigned int), hipMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        uint32_t want = 0;
        for (int i = b * kBlock; i < n && i < (b + 1) * kBlock; ++i) want += in[0].f32()[i] > threshold;
        bad += out[b] != want;
    }
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(counts));
    xio::Writer(argv[2]).u32(out.data(), blocks);
    std::printf("count_above n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
