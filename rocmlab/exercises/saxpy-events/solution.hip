// saxpy.hip: z = a * x + y, the kernel timed with HIP events.
#include <hip/hip_runtime.h>
#include <cmath>
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
    HIP_CHECK(hipMalloc(&x, bytes));
    HIP_CHECK(hipMalloc(&y, bytes));
    HIP_CHECK(hipMalloc(&z, bytes));
    HIP_CHECK(hipMemcpy(x, in[1].f32(), bytes, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(y, in[2].f32(), bytes, hipMemcpyHostToDevice));

    int cus = 0;
    HIP_CHECK(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, 0));
    const int block = 256, grid = cus * 8;
    saxpy<<<grid, block>>>(a, x, y, z, n);  // warm-up, and the result we check
    HIP_CHECK(hipGetLastError());

    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int r = 0; r < reps; ++r) saxpy<<<grid, block>>>(a, x, y, z, n);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;

    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), z, bytes, hipMemcpyDeviceToHost));
    int bad = 0;
    for (int i = 0; i < n; ++i) {
        float want = a * in[1].f32()[i] + in[2].f32()[i];
        bad += std::fabs(out[i] - want) > 1e-5f * (1.f + std::fabs(want));
    }
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(y));
    HIP_CHECK(hipFree(z));
    xio::Writer w(argv[2]);
    w.f32(out.data(), n);
    w.scalar(ms);
    std::printf("saxpy n=%d: %.4f ms, %.1f GB/s: %s\n", n, ms, 12.0 * n / ms / 1e6, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
