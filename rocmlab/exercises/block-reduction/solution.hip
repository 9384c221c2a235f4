// block_sum.hip: the sum of a float array at close to memory bandwidth, for any wavefront size.
//   - vectorised loads: each thread reads float4 (16 bytes), four of them in flight per loop trip;
//   - a grid-stride loop over a grid sized to the device (CUs x 8 blocks), not to n;
//   - a wavefront reduction with __shfl_down starting at warpSize / 2 (64 lanes on MI300X, 32 on NVIDIA);
//   - one slot of shared memory per wavefront, then one atomicAdd per block.
// `block_sum INPUT OUTPUT` grades; `block_sum --bench MIB` times MIB MiB of generated data (benchmarks/).
#include <hip/hip_runtime.h>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),       \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr int kBlock = 256;
constexpr int kMaxWaves = 1024 / 32;  // enough slots for any block size and wavefront size >= 32

__device__ inline float wave_sum(float v) {
    for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    return v;
}

__global__ void block_sum(const float* __restrict__ x, size_t n, float* out) {
    const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
    size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    const size_t n4 = n / 4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    float v = 0.f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = x4[i], b = x4[i + stride], c = x4[i + 2 * stride], d = x4[i + 3 * stride];
        v += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w)) +
             ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
        float4 a = x4[i];
        v += (a.x + a.y) + (a.z + a.w);
    }
    for (size_t t = n4 * 4 + static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += stride) v += x[t];

    __shared__ float partial[kMaxWaves];
    const int lane = threadIdx.x % warpSize, wave = threadIdx.x / warpSize;
    v = wave_sum(v);
    if (lane == 0) partial[wave] = v;
    __syncthreads();
    if (wave == 0) {
        const int waves = (blockDim.x + warpSize - 1) / warpSize;
        v = wave_sum(lane < waves ? partial[lane] : 0.f);
        if (lane == 0) atomicAdd(out, v);
    }
}

__global__ void fill(float* x, size_t n) {  // values in [0.5, 1.5), never uniform
    for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += static_cast<size_t>(gridDim.x) * blockDim.x) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
        h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13;
        x[i] = 0.5f + static_cast<float>(h >> 8) * (1.0f / 16777216.0f);
    }
}

static int grid_for_device() {
    int cus = 0;
    HIP_CHECK(hipDeviceGetAttribute(&cus, hipDeviceAttributeMultiprocessorCount, 0));
    return cus * 8;
}

static float time_sum(const float* x, size_t n, float* sum, int grid, int reps, float* result) {
    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    HIP_CHECK(hipMemsetAsync(sum, 0, sizeof(float)));  // warm-up
    block_sum<<<grid, kBlock>>>(x, n, sum);
    HIP_CHECK(hipGetLastError());
    HIP_CHECK(hipEventRecord(start));
    for (int r = 0; r < reps; ++r) {
        HIP_CHECK(hipMemsetAsync(sum, 0, sizeof(float)));
        block_sum<<<grid, kBlock>>>(x, n, sum);
        HIP_CHECK(hipGetLastError());
    }
    HIP_CHECK(hipEventRecord(stop));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    HIP_CHECK(hipMemcpy(result, sum, sizeof(float), hipMemcpyDeviceToHost));  // the timed run's own result
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    return ms / reps;
}

static int bench(size_t mib, int reps) {
    const size_t n = mib * (1u << 20) / sizeof(float);
    float *x, *sum;
    HIP_CHECK(hipMalloc(&x, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&sum, sizeof(float)));
    const int grid = grid_for_device();
    fill<<<grid, kBlock>>>(x, n);
    HIP_CHECK(hipGetLastError());
    float result = 0.f;
    const float ms = time_sum(x, n, sum, grid, reps, &result);
    double want = 0.0;
    for (size_t i = 0; i < n; ++i) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
        h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13;
        want += static_cast<double>(0.5f + static_cast<float>(h >> 8) * (1.0f / 16777216.0f));
    }
    const double rel = std::fabs(result - want) / want;
    std::printf("{\"bytes\": %zu, \"ms\": %.6f, \"tbs\": %.4f, \"sum\": %.8g, \"expected\": %.8g, \"rel_err\": %.3g, \"ok\": %s}\n",
                n * sizeof(float), ms, n * sizeof(float) / (ms * 1e-3) / 1e12, result, want, rel, rel < 1e-3 ? "true" : "false");
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(sum));
    return rel < 1e-3 ? 0 : 1;
}

int main(int argc, char** argv) {
    if (argc >= 3 && std::strcmp(argv[1], "--bench") == 0) return bench(std::strtoull(argv[2], nullptr, 10), argc > 3 ? std::atoi(argv[3]) : 50);
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const size_t n = in[0].size();
    float *x, *sum;
    HIP_CHECK(hipMalloc(&x, n * sizeof(float)));
    HIP_CHECK(hipMalloc(&sum, sizeof(float)));
    HIP_CHECK(hipMemcpy(x, in[0].f32(), n * sizeof(float), hipMemcpyHostToDevice));
    float result = 0.f;
    const float ms = time_sum(x, n, sum, grid_for_device(), 10, &result);

    double want = 0.0, scale = 0.0;
    for (size_t i = 0; i < n; ++i) { want += in[0].f32()[i]; scale += std::fabs(in[0].f32()[i]); }
    const bool ok = std::fabs(result - want) <= 1e-4 * scale;
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(sum));
    xio::Writer w(argv[2]);
    w.scalar(result);
    w.scalar(ms);
    std::printf("block_sum n=%zu: %.6g (host %.6g), %.4f ms: %s\n", n, result, want, ms, ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
