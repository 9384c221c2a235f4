// vector_add.cu: c = a + b, with every CUDA call checked. Port this file to HIP.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define CUDA_CHECK(expr)                                                                   \
    do {                                                                                   \
        cudaError_t err_ = (expr);                                                         \
        if (err_ != cudaSuccess) {                                                         \
            std::fprintf(stderr, "CUDA error %s at %s:%d: %s\n", cudaGetErrorName(err_),   \
                         __FILE__, __LINE__, cudaGetErrorString(err_));                    \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

__global__ void vector_add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    const size_t bytes = n * sizeof(float);

    float *a, *b, *c;
    CUDA_CHECK(cudaMalloc(&a, bytes));
    CUDA_CHECK(cudaMalloc(&b, bytes));
    CUDA_CHECK(cudaMalloc(&c, bytes));
    CUDA_CHECK(cudaMemcpy(a, in[0].f32(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b, in[1].f32(), bytes, cudaMemcpyHostToDevice));

    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add<<<grid, block>>>(a, b, c, n);
    CUDA_CHECK(cudaGetLastError());

    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), c, bytes, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));

    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != in[0].f32()[i] + in[1].f32()[i];
    xio::Writer(argv[2]).f32(out.data(), n);
    std::printf("vector_add n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
