// Streams pipeline: chunks are copied, histogrammed and counted on 4 streams in flight.
#include <cstdio>
#include <vector>
#include "../common/cuda_check.h"
#include "../kernels/kernels.cuh"

int main() {
  if (device_count() == 0) {
    std::printf("no GPU: nothing to run\n");
    return 0;
  }
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  bool native_fp64_atomics = prop.major * 10 + prop.minor >= 60;  // expect-trap: compute-capability
  std::printf("%s, fp64 atomics: %d\n", prop.name, (int)native_fp64_atomics);

  const int nstreams = 4, chunk = 1 << 20, n = nstreams * chunk;
  unsigned char* host = nullptr;
  CHECK(cudaMallocHost(&host, n));
  for (int i = 0; i < n; ++i) host[i] = (unsigned char)((i * 2654435761u) >> 24);
  unsigned char* dev = nullptr;
  unsigned int* bins = nullptr;
  CHECK(cudaMalloc(&dev, n));
  CHECK(cudaMalloc(&bins, 256 * sizeof(unsigned int)));
  CHECK(cudaMemset(bins, 0, 256 * sizeof(unsigned int)));

  cudaStream_t streams[nstreams];
  cudaEvent_t done[nstreams];
  for (int s = 0; s < nstreams; ++s) {
    CHECK(cudaStreamCreateWithFlags(&streams[s], cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&done[s], cudaEventDisableTiming));
  }
  for (int s = 0; s < nstreams; ++s) {
    CHECK(cudaMemcpyAsync(dev + s * chunk, host + s * chunk, chunk, cudaMemcpyHostToDevice, streams[s]));
    launch_histogram(dev + s * chunk, chunk, bins, streams[s]);
    CHECK(cudaEventRecord(done[s], streams[s]));
    CHECK(cudaStreamWaitEvent(streams[0], done[s], 0));
  }
  run_graph(dev, n, bins, streams[0]);
  std::vector<unsigned int> h(256);
  CHECK(cudaMemcpyAsync(h.data(), bins, 256 * sizeof(unsigned int), cudaMemcpyDeviceToHost, streams[0]));
  CHECK(cudaStreamSynchronize(streams[0]));
  unsigned long long total = 0;
  for (unsigned int b : h) total += b;
  std::printf("counted %llu bytes (expected %d)\n", total, 2 * n);
  for (int s = 0; s < nstreams; ++s) {
    CHECK(cudaEventDestroy(done[s]));
    CHECK(cudaStreamDestroy(streams[s]));
  }
  CHECK(cudaFree(dev));
  CHECK(cudaFree(bins));
  CHECK(cudaFreeHost(host));
  return total == 2ull * n ? 0 : 1;
}
