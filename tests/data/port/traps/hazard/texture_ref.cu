// A texture reference (removed in CUDA 12 / ROCm 6) and a texture-object fetch (no image instructions on MI300).
#include <cstdio>

texture<float, 1, cudaReadModeElementType> tex_ref;   // HAZARD

__global__ void fetch(cudaTextureObject_t obj, float* out) {
    out[threadIdx.x] = tex1Dfetch<float>(obj, threadIdx.x);   // HAZARD
}

int main() { printf("ok\n"); return 0; }
