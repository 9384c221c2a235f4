// scale_rows.hip: out[r][c] = in[r][c] * w[r] for a rows x cols float matrix (row-major), coalesced:
// consecutive lanes take consecutive 16-byte pieces of a row.
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

// One thread per 4 consecutive elements of a row: a wavefront reads 64 x 16 B = 1 KiB in one piece
// (global_load_dwordx4), where the column walk touched a different cache line in every lane.
__global__ void scale_rows(const float* in, const float* w, float* out, int rows, int cols) {
    const size_t t = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;   // index of a float4
    if (t >= static_cast<size_t>(rows) * cols / 4) return;
    const int r = static_cast<int>(4 * t / cols);
    const float4 v = reinterpret_cast<const float4*>(in)[t];
    const float s = w[r];
    reinterpret_cast<float4*>(out)[t] = make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[0].i32()[0], cols = in[0].i32()[1];
    if (cols % 4) { std::fprintf(stderr, "scale_rows: cols must be a multiple of 4\n"); return 2; }
    const size_t n = static_cast<size_t>(rows) * cols;
    float *a, *w, *o;
    HIP_CHECK(hipMalloc(&a, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&w, rows * sizeof(float)));
    HIP_CHECK(hipMalloc(&o, n * sizeof(float)));
    HIP_CHECK(hipMemcpy(a, in[1].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(w, in[2].f32(), rows * sizeof(float), hipMemcpyHostToDevice));
    const int blocks = static_cast<int>((n / 4 + kThreads - 1) / kThreads);
    scale_rows<<<blocks, kThreads>>>(a, w, o, rows, cols);
    HIP_CHECK(hipGetLastError());
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    const int reps = 20;
    HIP_CHECK(hipEventRecord(start));
    for (int i = 0; i < reps; ++i) scale_rows<<<blocks, kThreads>>>(a, w, o, rows, cols);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    ms /= reps;
    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), o, n * sizeof(float), hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(a));
    HIP_CHECK(hipFree(w));
    HIP_CHECK(hipFree(o));
    xio::Writer wr(argv[2]);
    wr.f32(out.data(), out.size());
    wr.scalar(ms);
    std::printf("scale_rows %dx%d: %.4f ms, %.1f GB/s\n", rows, cols, ms, 2.0 * n * sizeof(float) / ms / 1e6);
    return 0;
}
