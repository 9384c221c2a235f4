// What a program prints and the names it looks up are its own: the port leaves string literals and comments as
// written (cudaMalloc in this comment too), and reports a CUDA name in a string the program looks up at run time.
#include <cstdio>
#include <cstring>
#include <dlfcn.h>

struct ErrorName { cudaError_t code; const char* name; };
static const ErrorName kNames[] = {{cudaSuccess, "cudaSuccess"}, {cudaErrorInvalidValue, "cudaErrorInvalidValue"}};

__global__ void fill(int* p) { p[threadIdx.x] = threadIdx.x; }

int main() {
  int* d = 0;
  cudaError_t err = cudaMalloc((void**)&d, 32 * sizeof(int));
  printf("Time using cudaMalloc: done\n");                  // printed as written
  fill<<<1, 32>>>(d);
  int h[32];
  cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
  for (const ErrorName& e : kNames)
    if (e.code == err) printf("status %s, h[31]=%d\n", e.name, h[31]);
  void* self = dlopen(NULL, RTLD_LAZY);
  void* sym = self ? dlsym(self, "cudaGetDeviceCount") : 0;   // looked up by its CUDA name: reported
  printf("lookup %s\n", sym ? "found" : "absent");
  cudaFree(d);
  return 0;
}
