// block_reverse.hip: out = in with every block of 256 elements reversed (the last block may be shorter),
// through LDS. A thread reads the element another thread (in another wavefront) wrote: the block must wait
// at a barrier between the writes and the reads.
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

__global__ void block_reverse(const float* in, float* out, int n) {
    __shared__ float tile[kThreads];
    const int base = blockIdx.x * kThreads;
    const int len = min(kThreads, n - base);     // the last block may be shorter
    const int t = threadIdx.x;
    if (t < len) tile[t] = in[base + t];
    __syncthreads();                             // every write to tile lands before any read of it
    if (t < len) out[base + t] = tile[len - 1 - t];
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
    block_reverse<<<blocks, kThreads>>>(a, o, n);
    HIP_CHECK(hipGetLastError());
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int i = 0; i < reps; ++i) block_reverse<<<blocks, kThreads>>>(a, o, n);
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
    std::printf("block_reverse n=%d: %.4f ms, %.1f GB/s\n", n, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
