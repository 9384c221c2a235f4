// use_after_free.hip: a buffer is freed and a kernel then writes to it. Whether this faults depends on
// whether the allocator has unmapped the pages; an AddressSanitizer build (xnack+) reports it either way.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void scale(float* x, int n, float s) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = s * x[i];
}

int main() {
    const int n = 1 << 24;   // 64 MiB: a large allocation is returned to the driver when freed
    float* d = nullptr;
    if (hipMalloc(&d, n * sizeof(float)) != hipSuccess) { std::printf("hipMalloc failed\n"); return 2; }
    if (hipMemset(d, 0, n * sizeof(float)) != hipSuccess) { std::printf("hipMemset failed\n"); return 2; }
    if (hipFree(d) != hipSuccess) { std::printf("hipFree failed\n"); return 2; }
    std::printf("scale: writing %d floats into a buffer that was freed\n", n);
    std::fflush(stdout);
    hipLaunchKernelGGL(scale, dim3((n + 255) / 256), dim3(256), 0, 0, d, n, 2.0f);
    hipError_t launch = hipGetLastError();
    hipError_t sync = hipDeviceSynchronize();
    std::printf("launch: %s; synchronize: %s\n", hipGetErrorString(launch), hipGetErrorString(sync));
    return sync == hipSuccess ? 0 : 1;
}
