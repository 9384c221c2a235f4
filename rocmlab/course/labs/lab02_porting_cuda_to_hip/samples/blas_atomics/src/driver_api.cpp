// Driver-API start-up: init, pick device 0, make a context and allocate.
#include <cuda.h>
#include <cstdio>
#include "ops.h"

int driver_init(size_t bytes) {
  if (cuInit(0) != CUDA_SUCCESS) return 1;
  CUdevice dev;
  if (cuDeviceGet(&dev, 0) != CUDA_SUCCESS) return 1;
  CUcontext ctx;
  if (cuCtxCreate(&ctx, 0, dev) != CUDA_SUCCESS) return 1;
  CUdeviceptr p;
  CUresult r = cuMemAlloc(&p, bytes);
  if (r == CUDA_SUCCESS) cuMemFree(p);
  cuCtxDestroy(ctx);
  return r == CUDA_SUCCESS ? 0 : 1;
}
