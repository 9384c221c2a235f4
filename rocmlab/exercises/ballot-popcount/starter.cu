// count_above.cu: per block of 256 elements, how many exceed a threshold, with warp votes.
// The ballot mask is 32 bits and warps are 32 lanes here: port it so that it is right for wavefronts of 64.
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

constexpr int kBlock = 256;

__global__ void count_above(const float* x, int n, float threshold, unsigned int* counts) {
    __shared__ unsigned int warp_counts[kBlock / 32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool pred = i < n && x[i] > threshold;
    unsigned int mask = __ballot_sync(0xffffffff, pred);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_counts[warp] = __popc(mask);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int total = 0;
        for (int w = 0; w < blockDim.x / 32; ++w) total += warp_counts[w];
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
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&counts, blocks * sizeof(unsigned int)));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), n * sizeof(float), cudaMemcpyHostToDevice));
    count_above<<<blocks, kBlock>>>(x, n, threshold, counts);
    CUDA_CHECK(cudaGetLastError());
    std::vector<uint32_t> out(blocks);
    CUDA_CHECK(cudaMemcpy(out.data(), counts, blocks * sizeof(unsigned int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int b = 0; b < blocks; ++b) {
        uint32_t want = 0;
        for (int i = b * kBlock; i < n && i < (b + 1) * kBlock; ++i) want += in[0].f32()[i] > threshold;
        bad += out[b] != want;
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(counts));
    xio::Writer(argv[2]).u32(out.data(), blocks);
    std::printf("count_above n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
