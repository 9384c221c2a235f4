// Which lanes of each wavefront see an even thread index? __ballot answers with one bit per lane:
// 64 bits on MI300X (wave64), 32 on NVIDIA (warp 32). Prints warpSize and the first wave's mask.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void ballot_even(unsigned long long* masks, int* wave_size) {
  unsigned long long m = __ballot(threadIdx.x % 2 == 0);   // 64-bit on AMD, 32 bits used on NVIDIA
  if (threadIdx.x % warpSize == 0) masks[threadIdx.x / warpSize] = m;
  if (threadIdx.x == 0) *wave_size = warpSize;
}

int main() {
  unsigned long long* dm; int* dw;
  if (hipMalloc(&dm, 16 * sizeof(unsigned long long)) != hipSuccess || hipMalloc(&dw, sizeof(int)) != hipSuccess) {
    fprintf(stderr, "no GPU: hipMalloc failed\n"); return 1;
  }
  hipLaunchKernelGGL(ballot_even, dim3(1), dim3(128), 0, 0, dm, dw);
  unsigned long long h[16] = {0}; int ws = 0;
  hipMemcpy(h, dm, sizeof(h), hipMemcpyDeviceToHost);
  hipMemcpy(&ws, dw, sizeof(int), hipMemcpyDeviceToHost);
  printf("warpSize %d\nwaves in a 128-thread block %d\nmask of wave 0 0x%llx\n", ws, 128 / ws, h[0]);
  hipFree(dm); hipFree(dw);
  return 0;
}
