// block_sum.cu: the sum of a float array with warp shuffles and one atomic per block.
// Correct on NVIDIA (warps of 32). Port it to HIP so that it is also correct on MI300X (wavefronts of 64).
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

__global__ void block_sum(const float* x, int n, float* out) {
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? warp_sums[lane] : 0.f;
        for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffff, v, offset);
        if (lane == 0) atomicAdd(out, v);
    }
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *x, *sum;
    CUDA_CHECK(cudaMalloc(&x, n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&sum, sizeof(float)));
    CUDA_CHECK(cudaMemcpy(x, in[0].f32(), n * sizeof(float), cudaMemcpyHostToDevice));

    const int block = 256, grid = (n + block - 1) / block;
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    const int reps = 10;
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r) {
        CUDA_CHECK(cudaMemsetAsync(sum, 0, sizeof(float)));
        block_sum<<<grid, block>>>(x, n, sum);
        CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f, result = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    CUDA_CHECK(cudaMemcpy(&result, sum, sizeof(float), cudaMemcpyDeviceToHost));

    double want = 0.0, scale = 0.0;
    for (int i = 0; i < n; ++i) { want += in[0].f32()[i]; scale += std::fabs(in[0].f32()[i]); }
    const bool ok = std::fabs(result - want) <= 1e-4 * scale;
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(sum));
    xio::Writer w(argv[2]);
    w.scalar(result);
    w.scalar(ms);
    std::printf("block_sum n=%d: %.6g (host %.6g), %.4f ms: %s\n", n, result, want, ms, ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
