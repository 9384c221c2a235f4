// A warp reduction run by every warp of the block: it covers 32 lanes of a 64-lane wavefront.
#include <cstdio>

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2)   // HAZARD
        v += __shfl_down(v, offset);
    return v;
}

__global__ void block_sum(const float* in, float* out) {
    float v = warp_sum(in[blockIdx.x * blockDim.x + threadIdx.x]);
    float w = __shfl_xor(v, 1, 32);   // HAZARD
    if (threadIdx.x % warpSize == 0) atomicAdd(out, v + w * 0.0f);
}

int main() { printf("ok\n"); return 0; }
