// Each thread takes the value of its warp's lane 0. On NVIDIA a warp is 32 threads, so a block of 64 has two
// leaders; on a 64-lane wavefront it has one, and the sum below changes. Nothing here spells 32: a static
// scan cannot see it, a run can.
#include <cstdio>
#ifndef BLOCK
#error "build with -DBLOCK=64"
#endif

__global__ void take_leader(int *out, int scale)
{
    int v = (int)threadIdx.x * scale + 1;
    int leader = __shfl_sync(0xffffffff, v, 0);
    out[threadIdx.x] = leader;
}

int main(int argc, char **argv)
{
    int scale = argc > 1 ? atoi(argv[1]) : 3;
    int *d = 0, h[BLOCK];
    cudaMalloc((void **)&d, sizeof h);
    take_leader<<<1, BLOCK>>>(d, scale);
    cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    long sum = 0;
    for (int i = 0; i < BLOCK; ++i)
        sum += h[i];
    printf("sum of leaders: %ld\n", sum);
    cudaFree(d);
    return 0;
}
