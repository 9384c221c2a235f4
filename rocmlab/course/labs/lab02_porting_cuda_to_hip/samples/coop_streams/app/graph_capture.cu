// Captures the histogram into a CUDA graph and ties the buffer's lifetime to the graph.
#include "../common/cuda_check.h"
#include "../kernels/kernels.cuh"

static void release_buffer(void* p) { cudaFree(p); }

void run_graph(const unsigned char* data, int n, unsigned int* bins, cudaStream_t s) {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  void* scratch = nullptr;
  CHECK(cudaMalloc(&scratch, 1 << 20));
  CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  launch_histogram(data, n, bins, s);
  CHECK(cudaStreamEndCapture(s, &graph));
  cudaUserObject_t owner;
  CHECK(cudaUserObjectCreate(&owner, scratch, release_buffer, 1, cudaUserObjectNoDestructorSync));
  CHECK(cudaGraphRetainUserObject(graph, owner, 1, cudaGraphUserObjectMove));
  CHECK(cudaGraphInstantiateWithFlags(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
}
