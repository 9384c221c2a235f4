// A launch formatted by an editor with spaces inside the chevrons: nvcc accepts it.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }

int main() {
    float* x;
    cudaMalloc(&x, 256 * sizeof(float));
    scale << <1, 256 >> > (x, 2.0f);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
