// Host code that prints what the device reports: reading warpSize at run time is the right thing.
#include <cstdio>
#include <cuda_runtime.h>

int main() {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    printf("device %s: warp size %d, %d SMs\n", prop.name, prop.warpSize, prop.multiProcessorCount);
    int threads = 256;
    int warps_per_block = threads / prop.warpSize;
    printf("%d warps per block of %d threads\n", warps_per_block, threads);
    return 0;
}
