#ifndef KERNELS_CUH
#define KERNELS_CUH
#include <cstdio>

// the input is read through a 1D texture reference (removed in CUDA 12 / ROCm 6)
texture<int, 1, cudaReadModeElementType> tex_in;

__global__ void gather_sum(int *total, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int v = i < n ? tex1Dfetch(tex_in, i) : 0;
    unsigned mask = __activemask();
    __syncwarp(mask);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        printf("active mask of block 0: %x\n", mask);
    atomicAdd(total, v);
}
#endif
