// vector_add.hip: c = a + b, with every HIP call checked.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d: %s\n", hipGetErrorName(err_),     \
                         __FILE__, __LINE__, hipGetErrorString(err_));                     \
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
    HIP_CHECK(hipMalloc(&a, bytes));
    HIP_CHECK(hipMalloc(&b, bytes));
    HIP_CHECK(hipMalloc(&c, bytes));
    HIP_CHECK(hipMemcpy(a, in[0].f32(), bytes, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(b, in[1].f32(), bytes, hipMemcpyHostToDevice));

    const int block = 256;
    const int grid = (n + block - 1) / block;
    vector_add<<<grid, block>>>(a, b, c, n);
    HIP_CHECK(hipGetLastError());

    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), c, bytes, hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(b));
    HIP_CHECK(hipFree(c));

    int bad = 0;
    for (int i = 0; i < n; ++i) bad += out[i] != in[0].f32()[i] + in[1].f32()[i];
    xio::Writer(argv[2]).f32(out.data(), n);
    std::printf("vector_add n=%d: %s\n", n, bad ? "FAILED" : "PASSED");
    return bad ? 1 : 0;
}
