// transpose.cu: out = in^T through a shared-memory tile. Port to HIP and remove the LDS bank conflicts.
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

constexpr int TILE = 32;
constexpr int ROWS = 8;  // each thread moves TILE / ROWS elements

__global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[static_cast<size_t>(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += ROWS)
        if (x < rows && y + j < cols) out[static_cast<size_t>(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[0].i32()[0], cols = in[0].i32()[1];
    const size_t bytes = static_cast<size_t>(rows) * cols * sizeof(float);
    float *a, *t;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&t, bytes));
    CUDA_CHECK(cudaMemcpy(a, in[1].f32(), bytes, cudaMemcpyHostToDevice));
    dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    cudaEvent_t start, stop;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    transpose<<<grid, block>>>(a, t, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    const int reps = 20;
    CUDA_CHECK(cudaEventRecord(start));
    for (int r = 0; r < reps; ++r) transpose<<<grid, block>>>(a, t, rows, cols);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaEventRecord(stop));
    CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(static_cast<size_t>(rows) * cols);
    CUDA_CHECK(cudaMemcpy(out.data(), t, bytes, cudaMemcpyDeviceToHost));
    size_t bad = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) bad += out[static_cast<size_t>(c) * rows + r] != in[1].f32()[static_cast<size_t>(r) * cols + c];
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(t));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("transpose %dx%d: %.4f ms, %.1f GB/s: %s\n", rows, cols, ms, 2.0 * bytes / ms / 1e6, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
