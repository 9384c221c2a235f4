// histogram.hip: a 256-bin histogram privatised in LDS: each block counts into shared bins with LDS
// atomics, then adds its 256 totals to the global bins (256 global atomics per block, not one per element).
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

constexpr int BINS = 256;

__global__ void histogram(const uint32_t* values, int n, unsigned int* bins) {
    __shared__ unsigned int local[BINS];
    for (int b = threadIdx.x; b < BINS; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&local[values[i] % BINS], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < BINS; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    uint32_t* values;
    unsigned int* bins;
    HIP_CHECK(hipMalloc(&values, n * sizeof(uint32_t)));
    HIP_CHECK(hipMalloc(&bins, BINS * sizeof(unsigned int)));
    HIP_CHECK(hipMemcpy(values, in[0].u32(), n * sizeof(uint32_t), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(bins, 0, BINS * sizeof(unsigned int)));
    int cus = 0;
    HIP_CHECK(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, 0));
    histogram<<<cus * 4, 256>>>(values, n, bins);
    HIP_CHECK(hipGetLastError());
    std::vector<uint32_t> out(BINS);
    HIP_CHECK(hipMemcpy(out.data(), bins, BINS * sizeof(unsigned int), hipMemcpyDeviceToHost));
    std::vector<uint32_t> want(BINS, 0);
    for (int i = 0; i < n; ++i) ++want[in[0].u32()[i] % BINS];
    int bad = 0;
    for (int b = 0; b < BINS; ++b) bad += out[b] != want[b];
    HIP_CHECK(hipFree(values));
    HIP_CHECK(hipFree(bins));
    xio::Writer(argv[2]).u32(out.data(), BINS);
    std::printf("histogram n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
