// A warp-vote program whose host sizes its result array and checks the results per warp of 32.
#include <cstdio>
#include <cstdlib>

__global__ void any_positive(const int* in, int* per_warp) {
    int r = __any(in[blockIdx.x * blockDim.x + threadIdx.x] > 0);
    if (threadIdx.x % warpSize == 0) per_warp[(blockIdx.x * blockDim.x + threadIdx.x) / warpSize] = r;
}

int main() {
    int n = 1024;
    int warp_size = 32;   // HAZARD
    int nwarps = n / warp_size;   // counted at the definition of warp_size
    int* h = (int*)malloc(nwarps * sizeof(int));
    int* d_in; int* d_out;
    cudaMalloc(&d_in, n * sizeof(int));
    cudaMalloc(&d_out, nwarps * sizeof(int));
    any_positive<<<n / 256, 256>>>(d_in, d_out);
    cudaMemcpy(h, d_out, nwarps * sizeof(int), cudaMemcpyDeviceToHost);
    for (int w = 0; w < nwarps; ++w)
        if (h[w] != 1) { printf("warp %d wrong\n", w); return 1; }
    return 0;
}
