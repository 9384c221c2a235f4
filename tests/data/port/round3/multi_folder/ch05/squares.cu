// A chapter's program: the shared header one folder up, a helper's source beside it, a subfolder's kernels.
#include "../common/book.h"
#include "../common/checksum.h"
#include "dwt/kernels.cuh"

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1000;
  int k = argc > 2 ? atoi(argv[2]) : 3;
  int *h = (int*)malloc(n * sizeof(int)), *d_in, *d_out;
  for (int i = 0; i < n; i++) h[i] = i % 97;
  HANDLE_ERROR(cudaMalloc((void**)&d_in, n * sizeof(int)));
  HANDLE_ERROR(cudaMalloc((void**)&d_out, n * sizeof(int)));
  HANDLE_ERROR(cudaMemcpy(d_in, h, n * sizeof(int), cudaMemcpyHostToDevice));
  square_plus<<<(n + 127) / 128, 128>>>(d_in, d_out, n, k);
  HANDLE_ERROR(cudaMemcpy(h, d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  printf("n=%d k=%d checksum=%llu last=%d\n", n, k, checksum(h, n), h[n - 1]);
  cudaFree(d_in);
  cudaFree(d_out);
  free(h);
  return 0;
}
