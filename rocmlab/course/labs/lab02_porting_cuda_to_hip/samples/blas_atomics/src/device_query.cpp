// Prints what the runtime says about device 0.
#include <cuda_runtime.h>
#include <cstdio>
#include "ops.h"

void describe_device() {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return;
  std::printf("%s: %d SMs, %zu bytes shared per SM, warp %d\n", prop.name, prop.multiProcessorCount,
              prop.sharedMemPerMultiprocessor, prop.warpSize);  // expect-trap: device-prop-field
}
