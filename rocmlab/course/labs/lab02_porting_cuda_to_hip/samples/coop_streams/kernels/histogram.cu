// 256-bin byte histogram with shared-memory atomics, and a flag counter built on ballots.
#include "kernels.cuh"

__global__ void histogram256(const unsigned char* data, int n, unsigned int* bins) {
  __shared__ unsigned int local[256];
  for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < 256; b += blockDim.x) atomicAdd(&bins[b], local[b]);
}

__global__ void count_flags(const int* flags, int n, unsigned long long* total, int* max_seen) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int pred = (i < n) && flags[i] != 0;
  unsigned int votes = __ballot_sync(0xffffffff, pred);  // expect-trap: ballot-in-32-bits, shfl-sync-32-bit-mask
  if ((threadIdx.x & 31) == 0) {  // expect-trap: lane-arithmetic-32
    atomicAdd(total, (unsigned long long)__popc(votes));  // expect-trap: popc-on-mask
    atomicMax(max_seen, __popc(votes));  // expect-trap: popc-on-mask
  }
}

void launch_histogram(const unsigned char* data, int n, unsigned int* bins, cudaStream_t s) {
  histogram256<<<64, 256, 0, s>>>(data, n, bins);
}

void launch_count_flags(const int* flags, int n, unsigned long long* total, int* max_seen, cudaStream_t s) {
  count_flags<<<(n + 255) / 256, 256, 0, s>>>(flags, n, total, max_seen);
}
