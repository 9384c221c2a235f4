// A block reduction that folds the data to 32 values in shared memory first; the shuffles that follow
// run on the first 32 threads only, which is correct on a 64-lane wavefront too.
#include <cstdio>

#define BLOCK 256
const unsigned FULL_MASK = 0xffffffff;

__device__ float fold32(float v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    return v;
}

__global__ void block_sum(const float* in, float* out) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * BLOCK + tid];
    __syncthreads();
    for (int stride = BLOCK / 2; stride >= 32; stride /= 2) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        float v = s[tid];
        v += __shfl_down_sync(FULL_MASK, v, 16);
        v += __shfl_down_sync(FULL_MASK, v, 8);
        v += __shfl_down_sync(FULL_MASK, v, 4);
        v += __shfl_down_sync(FULL_MASK, v, 2);
        v += __shfl_down_sync(FULL_MASK, v, 1);
        if (tid == 0) out[blockIdx.x] = v;
    }
}

__global__ void block_sum2(const float* in, float* out) {
    __shared__ float s[BLOCK];
    int tid = threadIdx.x;
    s[tid] = in[blockIdx.x * BLOCK + tid];
    __syncthreads();
    for (int stride = BLOCK / 2; stride >= 32; stride /= 2) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid < 32) {
        float v = fold32(s[tid]);
        if (tid == 0) out[blockIdx.x] = v;
    }
}

int main() { printf("ok\n"); return 0; }
