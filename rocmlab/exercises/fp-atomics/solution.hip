// scatter_add.hip: out[idx[r], :] += g[r, :] for every row r (the backward of an embedding lookup).
// One thread per (row, column); rows that share an index collide, so the adds are float atomics.
// unsafeAtomicAdd: the hardware float add (global_atomic_add_f32) on every CDNA target. Plain atomicAdd
// gives the same instruction on gfx942 (MI300X) but a compare-and-swap loop on gfx90a (MI200), where the
// hardware add is not safe on fine-grained (host-coherent) memory. `out` comes from hipMalloc
// (coarse-grained), where the hardware add is correct.
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

__global__ void scatter_add(const int* idx, const float* g, float* out, int rows, int dim) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)rows * dim) return;
    const int row = (int)(i / dim), col = (int)(i % dim);
    unsafeAtomicAdd(&out[(size_t)idx[row] * dim + col], g[i]);
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int rows = in[2].i32()[0], dim = in[2].i32()[1], vocab = in[2].i32()[2];
    int* idx; float *g, *out;
    HIP_CHECK(hipMalloc(&idx, sizeof(int) * rows));
    HIP_CHECK(hipMalloc(&g, sizeof(float) * rows * dim));
    HIP_CHECK(hipMalloc(&out, sizeof(float) * vocab * dim));
    HIP_CHECK(hipMemcpy(idx, in[0].i32(), sizeof(int) * rows, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(g, in[1].f32(), sizeof(float) * rows * dim, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemset(out, 0, sizeof(float) * vocab * dim));
    const size_t n = (size_t)rows * dim;
    scatter_add<<<(unsigned)((n + 255) / 256), 256>>>(idx, g, out, rows, dim);
    HIP_CHECK(hipGetLastError());
    std::vector<float> host((size_t)vocab * dim);
    HIP_CHECK(hipMemcpy(host.data(), out, sizeof(float) * host.size(), hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(idx));
    HIP_CHECK(hipFree(g));
    HIP_CHECK(hipFree(out));
    xio::Writer(argv[2]).f32(host.data(), host.size());
    std::printf("scatter_add %d rows of %d into %d: done\n", rows, dim, vocab);
    return 0;
}
