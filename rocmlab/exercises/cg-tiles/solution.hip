// group_absmax.hip: the scale of every group of 32 values for int8 quantisation: scale[g] = max |x| / 127.
// One tile of 32 threads per group, from cooperative groups: cg::tiled_partition<kGroup>(block). A tile is a
// size the program chooses, not the hardware's warp: on a 64-lane wavefront (MI300X) two tiles share it, on
// a 32-lane warp (NVIDIA, RDNA) one tile is the warp. tile.shfl_down and tile.shfl stay inside the tile on
// both, and tile.thread_rank() / tile.meta_group_rank() replace `% 32` and `/ 32`.
#include <hip/hip_runtime.h>
#include <hip/hip_cooperative_groups.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

namespace cg = cooperative_groups;

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),       \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr int kGroup = 32;      // the quantisation group: a tile size, independent of warpSize
constexpr int kThreads = 256;

__global__ void group_absmax(const float* x, float* scale, int groups) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<kGroup> tile = cg::tiled_partition<kGroup>(block);
    const int g = blockIdx.x * (kThreads / kGroup) + static_cast<int>(block.thread_rank() / tile.size());
    const int r = static_cast<int>(tile.thread_rank());
    float m = g < groups ? fabsf(x[static_cast<size_t>(g) * kGroup + r]) : 0.f;
    for (int offset = static_cast<int>(tile.size()) / 2; offset > 0; offset /= 2) m = fmaxf(m, tile.shfl_down(m, offset));
    if (r == 0 && g < groups) scale[g] = m / 127.f;
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int groups = static_cast<int>(in[0].size() / kGroup);
    float *x, *scale;
    HIP_CHECK(hipMalloc(&x, sizeof(float) * in[0].size()));
    HIP_CHECK(hipMalloc(&scale, sizeof(float) * groups));
    HIP_CHECK(hipMemcpy(x, in[0].f32(), sizeof(float) * in[0].size(), hipMemcpyHostToDevice));
    const int blocks = static_cast<int>((static_cast<size_t>(groups) * kGroup + kThreads - 1) / kThreads);
    group_absmax<<<blocks, kThreads>>>(x, scale, groups);
    HIP_CHECK(hipGetLastError());
    std::vector<float> out(groups);
    HIP_CHECK(hipMemcpy(out.data(), scale, sizeof(float) * groups, hipMemcpyDeviceToHost));
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(scale));
    xio::Writer(argv[2]).f32(out.data(), out.size());
    std::printf("group_absmax: %d groups of %d\n", groups, kGroup);
    return 0;
}
