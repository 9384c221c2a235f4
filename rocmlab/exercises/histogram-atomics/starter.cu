// histogram.cu: a 256-bin histogram with global atomics. Port to HIP and privatise the bins in LDS.
#include <cuda_runtime.h>
#include <cstdint>
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

constexpr int BINS = 256;

__global__ void histogram(const uint32_t* values, int n, unsigned int* bins) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        atomicAdd(&bins[values[i] % BINS], 1u);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    uint32_t* values;
    unsigned int* bins;
    CUDA_CHECK(cudaMalloc(&values, n * sizeof(uint32_t)));
    CUDA_CHECK(cudaMalloc(&bins, BINS * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(values, in[0].u32(), n * sizeof(uint32_t), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(bins, 0, BINS * sizeof(unsigned int)));
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    histogram<<<sms * 4, 256>>>(values, n, bins);
    CUDA_CHECK(cudaGetLastError());
    std::vector<uint32_t> out(BINS);
    CUDA_CHECK(cudaMemcpy(out.data(), bins, BINS * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    std::vector<uint32_t> want(BINS, 0);
    for (int i = 0; i < n; ++i) ++want[in[0].u32()[i] % BINS];
    int bad = 0;
    for (int b = 0; b < BINS; ++b) bad += out[b] != want[b];
    CUDA_CHECK(cudaFree(values));
    CUDA_CHECK(cudaFree(bins));
    xio::Writer(argv[2]).u32(out.data(), BINS);
    std::printf("histogram n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
