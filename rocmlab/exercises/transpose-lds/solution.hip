// transpose.hip: out = in^T through an LDS tile padded by one column, so that reading a tile column
// touches 32 different banks instead of one.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
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

constexpr int TILE = 32;
constexpr int ROWS = 8;  // each thread moves TILE / ROWS elements

__global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];  // +1: a column read hits 32 banks, not one
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
    HIP_CHECK(hipMalloc(&a, bytes));
    HIP_CHECK(hipMalloc(&t, bytes));
    HIP_CHECK(hipMemcpy(a, in[1].f32(), bytes, hipMemcpyHostToDevice));
    dim3 block(TILE, ROWS), grid((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    transpose<<<grid, block>>>(a, t, rows, cols);
    HIP_CHECK(hipGetLastError());
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int r = 0; r < reps; ++r) transpose<<<grid, block>>>(a, t, rows, cols);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(static_cast<size_t>(rows) * cols);
    HIP_CHECK(hipMemcpy(out.data(), t, bytes, hipMemcpyDeviceToHost));
    size_t bad = 0;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) bad += out[static_cast<size_t>(c) * rows + r] != in[1].f32()[static_cast<size_t>(r) * cols + c];
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(t));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("transpose %dx%d: %.4f ms, %.1f GB/s: %s\n", rows, cols, ms, 2.0 * bytes / ms / 1e6, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
