// saxpy.cu: z = a * x + y, the kernel timed with the host clock. Port this file to HIP.
// The host clock also counts launch overhead and the synchronisation: time the kernel on the GPU instead.
#include <cuda_runtime.h>
#include <chrono>
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

__global__ void saxpy(float a, const float* x, const float* y, float* z, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        z[i] = a * x[i] + y[i];
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const float a = in[0].f32()[0];
    const int n = static_cast<int>(in[1].size());
    const size_t bytes = n * sizeof(float);
    float *x, *y, *z;
    CUDA_CHECK(cudaMalloc(&x, bytes));
    CUDA_CHECK(cudaMalloc(&y, bytes));
    CUDA_CHECK(cudaMalloc(&z, bytes));
    CUDA_CHECK(cudaMemcpy(x, in[1].f32(), bytes, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(y, in[2].f32(), bytes, cudaMemcpyHostToDevice));

    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int block = 256, grid = sms * 8;
    saxpy<<<grid, block>>>(a, x, y, z, n);  // warm-up, and the result we check
    CUDA_CHECK(cudaGetLastError());

    CUDA_CHECK(cudaDeviceSynchronize());
    const int reps = 20;
    const auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) saxpy<<<grid, block>>>(a, x, y, z, n);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());
    float ms = std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ms /= reps;

    std::vector<float> out(n);
    CUDA_CHECK(cudaMemcpy(out.data(), z, bytes, cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        float want = a * in[1].f32()[i] + in[2].f32()[i];
        bad += std::fabs(out[i] - want) > 1e-5f * (1.f + std::fabs(want));
    }
    CUDA_CHECK(cudaFree(x));
    CUDA_CHECK(cudaFree(y));
    CUDA_CHECK(cudaFree(z));
    xio::Writer w(argv[2]);
    w.f32(out.data(), n);
    w.scalar(ms);
    std::printf("saxpy n=%d: %.4f ms, %.1f GB/s: %s\n", n, ms, 12.0 * n / ms / 1e6, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
