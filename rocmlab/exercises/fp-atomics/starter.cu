// scatter_add.cu: out[idx[r], :] += g[r, :] for every row r (the backward of an embedding lookup).
// One thread per (row, column); rows that share an index collide, so the adds are float atomics.
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

__global__ void scatter_add(const int* idx, const float* g, float* out, int rows, int dim) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * dim) return;
    const int row = (int)(i / dim), col = (int)(i % dim);
    atomicAdd(&out[(size_t)idx[row] * dim + col], g[i]);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[2].i32()[0], dim = in[2].i32()[1], vocab = in[2].i32()[2];
    int* idx; float *g, *out;
    CUDA_CHECK(cudaMalloc(&idx, sizeof(int) * rows));
    CUDA_CHECK(cudaMalloc(&g, sizeof(float) * rows * dim));
    CUDA_CHECK(cudaMalloc(&out, sizeof(float) * vocab * dim));
    CUDA_CHECK(cudaMemcpy(idx, in[0].i32(), sizeof(int) * rows, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(g, in[1].f32(), sizeof(float) * rows * dim, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(out, 0, sizeof(float) * vocab * dim));
    const size_t n = (size_t)rows * dim;
    scatter_add<<<(unsigned)((n + 255) / 256), 256>>>(idx, g, out, rows, dim);
    CUDA_CHECK(cudaGetLastError());
    std::vector<float> host((size_t)vocab * dim);
    CUDA_CHECK(cudaMemcpy(host.data(), out, sizeof(float) * host.size(), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(idx));
    CUDA_CHECK(cudaFree(g));
    CUDA_CHECK(cudaFree(out));
    xio::Writer(argv[2]).f32(host.data(), host.size());
    std::printf("scatter_add %d rows of %d into %d: done\n", rows, dim, vocab);
    return 0;
}
