// oob_write.hip: an off-by-one bound lets the last thread write one element past the buffer. Small overruns
// like this land in the same page and usually go unnoticed; OOB_FAR=1 makes the stray write land
// 1 GiB away, where no mapping exists, so the GPU faults. Build with -g to get the line in a report.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>

__global__ void fill_ramp(float* out, int n, long long far) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i + (i == n ? far : 0)] = 2.0f * i;
}

int main() {
    const int n = 1000;
    const long long far = std::getenv("OOB_FAR") ? (1LL << 28) : 0;
    float* d = nullptr;
    if (hipMalloc(&d, n * sizeof(float)) != hipSuccess) { std::printf("hipMalloc failed\n"); return 2; }
    std::printf("fill_ramp: %d floats, the thread i == n writes %lld floats past the end\n", n, far + 0);
    std::fflush(stdout);
    hipLaunchKernelGGL(fill_ramp, dim3((n + 255) / 256), dim3(256), 0, 0, d, n, far);
    hipError_t launch = hipGetLastError();
    hipError_t sync = hipDeviceSynchronize();
    std::printf("launch: %s; synchronize: %s\n", hipGetErrorString(launch), hipGetErrorString(sync));
    (void)hipFree(d);
    return sync == hipSuccess ? 0 : 1;
}
