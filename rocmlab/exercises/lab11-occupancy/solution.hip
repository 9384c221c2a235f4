// stencil7.hip: out[i] = sum over j = -3..3 of W[j] * in[i + j] (zero outside), each block staging its
// part of the input in LDS. The tile is sized for the block (256 + 2 R floats, about 1 KB), not for "any block":
// an MI300X CU has 64 KB of LDS, so a 48 KB tile let one block (4 waves) live on a CU at a time.
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

constexpr int kThreads = 256;
constexpr int R = 3;                       // the stencil's radius

__constant__ float W[2 * R + 1] = {0.05f, 0.1f, 0.2f, 0.3f, 0.2f, 0.1f, 0.05f};

__global__ void __launch_bounds__(kThreads) stencil7(const float* in, float* out, int n) {
    __shared__ float tile[kThreads + 2 * R];
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int t = threadIdx.x + R;
    tile[t] = i < n ? in[i] : 0.f;
    if (threadIdx.x < R) {                 // the halo on both sides
        const int lo = i - R, hi = i + blockDim.x;
        tile[threadIdx.x] = lo >= 0 && lo < n ? in[lo] : 0.f;
        tile[t + blockDim.x] = hi < n ? in[hi] : 0.f;
    }
    __syncthreads();
    if (i >= n) return;
    float acc = 0.f;
    for (int j = -R; j <= R; ++j) acc += W[j + R] * tile[t + j];
    out[i] = acc;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *a, *o;
    HIP_CHECK(hipMalloc(&a, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&o, n * sizeof(float)));
    HIP_CHECK(hipMemcpy(a, in[0].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    const int blocks = (n + kThreads - 1) / kThreads;
    stencil7<<<blocks, kThreads>>>(a, o, n);
    HIP_CHECK(hipGetLastError());
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int i = 0; i < reps; ++i) stencil7<<<blocks, kThreads>>>(a, o, n);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), o, n * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(o));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("stencil7 n=%d: %.4f ms, %.1f GB/s\n", n, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
