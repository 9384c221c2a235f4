// vector_add.cu: c = a + b. It checks no CUDA call and no launch for errors (a failure goes unnoticed).
// Your task: port it to HIP AND check every HIP call and the launch (hipify renames the API; it adds no check).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

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
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&c, bytes);
    cudaMemcpy(a, in[0].f32(), bytes, cudaMemcpyHostToDevice);
    cudaMemcpy(b, in[1].f32(), bytes, cudaMemcpyHostToDevice);

    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add<<<grid, block>>>(a, b, c, n);

    std::vector<float> out(n);
    cudaMemcpy(out.data(), c, bytes, cudaMemcpyDeviceToHost);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);

    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != in[0].f32()[i] + in[1].f32()[i];
    xio::Writer(argv[2]).f32(out.data(), n);
    std::printf("vector_add n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
