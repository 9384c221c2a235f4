// Whole-grid sum in one launch: tiles of 32 reduce, then a grid-wide barrier.
#include <cooperative_groups.h>
#include "../common/cuda_check.h"
#include "kernels.cuh"

namespace cg = cooperative_groups;

__global__ void grid_sum(const float* x, float* partial, float* out, int n) {
  cg::grid_group grid = cg::this_grid();
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> tile = cg::tiled_partition<32>(block);  // expect-trap: cg-tile-32
  float v = 0.f;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) v += x[i];
  for (int o = tile.size() / 2; o > 0; o /= 2) v += tile.shfl_down(v, o);
  if (tile.thread_rank() == 0) atomicAdd(&partial[blockIdx.x], v);
  grid.sync();
  if (grid.thread_rank() == 0) {
    float s = 0.f;
    for (unsigned int b = 0; b < gridDim.x; ++b) s += partial[b];
    *out = s;
  }
}

void launch_grid_sum(const float* x, float* partial, float* out, int n, cudaStream_t s) {
  int blocks = 0, threads = 256;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, grid_sum, threads, 0));
  void* args[] = {(void*)&x, (void*)&partial, (void*)&out, (void*)&n};
  CHECK(cudaLaunchCooperativeKernel((void*)grid_sum, dim3(blocks), dim3(threads), args, 0, s));
}
