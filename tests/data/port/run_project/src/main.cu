#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#include "util.h"
#include "kernels.cuh"

// an error-name switch written for an old CUDA: one enumerator has no HIP counterpart
static const char *error_kind(cudaError_t e)
{
    switch (e) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "bad value";
    case cudaErrorInvalidHostPointer:
        return "bad host pointer";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    default:
        return "other";
    }
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    unsigned seed = argc > 2 ? (unsigned)strtoul(argv[2], 0, 10) : 1u;
    int *h = make_input(n, seed);
    int *d = 0, *d_total = 0, total = 0;
    cudaMalloc((void **)&d, n * sizeof(int));
    cudaMalloc((void **)&d_total, sizeof(int));
    cudaMemcpy(d, h, n * sizeof(int), cudaMemcpyHostToDevice);
    cudaMemset(d_total, 0, sizeof(int));
    cudaBindTexture(0, tex_in, d, n * sizeof(int));
    gather_sum<<<(n + 31) / 32, 32>>>(d_total, n);
    cudaError_t err = cudaDeviceSynchronize();
    cudaMemcpy(&total, d_total, sizeof(int), cudaMemcpyDeviceToHost);
    cudaUnbindTexture(tex_in);
    printf("status: %s\n", error_kind(err));
    printf("n=%d checksum=%d\n", n, checksum(h, n));
    printf("sum=%d\n", total);
    cudaFree(d);
    cudaFree(d_total);
    free(h);
    return 0;
}
