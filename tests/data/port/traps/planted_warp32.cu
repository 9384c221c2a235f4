// Planted warp-32 traps (written for rocmlab's tests). Each trap line ends with "TRAP <rule>".
// Every other line is correct on a 64-lane wavefront and must not be flagged.
#include <cuda_runtime.h>
#include <stdint.h>
#include "planted_common.cuh"

#define LOG2_WARP_SIZE 5U                                   // TRAP hard-coded-warp-log2
#define WARP_SZ 32                                          // TRAP hard-coded-warp-size
#define FULL_WARP_MASK 0xffffffff                           // TRAP full-mask-32
constexpr int kWarpSize = 32;                               // TRAP hard-coded-warp-size

__global__ void planted(const int *in, int *out, int blockSize, int maskLength) {
  int tid = threadIdx.x;
  int lane = tid & 31;                                      // TRAP lane-arithmetic-32
  int lane2 = threadIdx.x & 0x1f;                           // TRAP lane-arithmetic-32
  int warp = blockSize / 32;                                // TRAP lane-arithmetic-32
  int warp2 = tid >> 5;                                     // TRAP lane-arithmetic-32
  int lane3 = threadIdx.x % (32);                           // TRAP lane-arithmetic-32
  int nwarps = (blockDim.x + 31) / 32u;                     // TRAP lane-arithmetic-32
  int shift = 32 - maskLength;                              // TRAP warp-32-minus
  int v = in[tid];
  unsigned ballot = __ballot_sync(__activemask(), v > 0);   // TRAP ballot-in-32-bits
  int32_t b2 = __ballot_sync(__activemask(), v > 1);        // TRAP ballot-in-32-bits
  uint32_t b3 = __ballot_sync(__activemask(), v > 2);       // TRAP ballot-in-32-bits
  unsigned long long good = __ballot_sync(__activemask(), v > 3);
  int count = __popc(good);                                 // TRAP popc-on-mask
  int count2 = __popcll(good);
  unsigned mask = 0xffffffffu;                              // TRAP full-mask-32
  v += __shfl_sync(mask, v, 0);                             // TRAP shfl-sync-32-bit-mask
  v += __shfl_down_sync(FULL_WARP_MASK, v, 1);              // TRAP shfl-sync-32-bit-mask
  v += __shfl_xor_sync(0xffffffff, v, 1);                   // TRAP shfl-sync-32-bit-mask
  v += __shfl_sync(__activemask(), v, 0, 32);               // TRAP shuffle-width-32
  v += __shfl_down(v, 16);                                  // TRAP lane-offset-16-or-32
  for (int i = 1; i < 32; i *= 2) v += __shfl_up(v, i);     // TRAP lane-loop-32
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor(v, o);    // TRAP lane-offset-16-or-32
  for (int o = warpSize / 2; o > 0; o /= 2) v += __shfl_down(v, o);
  for (int i = 1; i < warpSize; i *= 2) v += __shfl_up(v, i);
  int ok_lane = threadIdx.x % warpSize;
  int ok_warp = threadIdx.x / warpSize;
  unsigned long long full = ~0ull;
  v += __shfl_sync(full, v, 0);
  out[tid] = v + lane + lane2 + warp + warp2 + lane3 + nwarps + shift + ballot + b2 + b3 + count + count2 + ok_lane + ok_warp;
}

int main() {
  int warp_size = 32;                                       // TRAP hard-coded-warp-size
  int bytes = 1024 / 32;
  return warp_size + bytes;
}
