// A kernel that never ends (a bug: the loop bound never changes). The sandbox's timeout stops it.
#include <hip/hip_runtime.h>
#include <cstdio>

__global__ void spin(volatile int* flag) { while (*flag == 0) { } }

int main() {
  int* d; if (hipMalloc(&d, sizeof(int)) != hipSuccess) { fprintf(stderr, "no GPU: hipMalloc failed\n"); return 1; }
  hipMemset(d, 0, sizeof(int));
  printf("launching a kernel that never ends\n"); fflush(stdout);
  hipLaunchKernelGGL(spin, dim3(1), dim3(64), 0, 0, d);
  hipDeviceSynchronize();
  printf("unreachable\n");
  return 0;
}
