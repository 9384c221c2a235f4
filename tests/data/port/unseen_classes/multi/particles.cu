// The program: defines the particle type, then includes its kernels' source.
#include <cstdio>
#include <cuda_runtime.h>

struct Particle { float x, v; };

#include "step_kernels.cu"

int main() {
    Particle* p;
    cudaMalloc(&p, 128 * sizeof(Particle));
    step<<<1, 128>>>(p, 0.1f);
    cudaDeviceSynchronize();
    printf("done\n");
    return 0;
}
