// A warp reduction whose full mask is a const global (as many CUDA codes write it).
#include <cstdio>
#include <cuda_runtime.h>

const unsigned FULL_MASK = 0xffffffff;

__global__ void warp_sum(const float* in, float* out) {
    float v = in[threadIdx.x];
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        v += __shfl_down_sync(FULL_MASK, v, offset);
    if (threadIdx.x == 0) *out = v;
}

int main() {
    float *in, *out;
    cudaMalloc(&in, 64 * sizeof(float));
    cudaMalloc(&out, sizeof(float));
    warp_sum<<<1, 64>>>(in, out);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
