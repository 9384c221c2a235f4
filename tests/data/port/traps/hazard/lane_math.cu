// Lane and warp indices computed for 32-lane warps.
#include <cstdio>
#define WARP_SIZE 32   // HAZARD

__global__ void per_warp(const int* in, int* out) {
    int lane = threadIdx.x % 32;   // HAZARD
    int warp = threadIdx.x / 32;   // HAZARD
    int wid = threadIdx.x / WARP_SIZE;   // counted at its #define
    if (lane == 0) out[blockIdx.x * 8 + warp] = in[wid];
}

int main() { printf("ok\n"); return 0; }
