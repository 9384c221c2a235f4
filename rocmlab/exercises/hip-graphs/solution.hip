// step_graph.hip: 200 steps of a small three-kernel update on a short vector, launched as one HIP graph.
// The three launches of a step are captured from a stream into a graph (hipStreamBeginCapture ...
// hipStreamEndCapture), instantiated once, and the executable graph is launched 200 times: one launch per
// step instead of three, and the runtime has validated the kernels' arguments once. The first graph launch
// is not timed (it uploads the graph). hipGraphInstantiateWithFlags has the same arguments on HIP and CUDA.
#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include "exercise_io.h"

#define HIP_CHECK(expr)                                                                    \
    do {                                                                                   \
        hipError_t err_ = (expr);                                                          \
        if (err_ != hipSuccess) {                                                          \
            std::fprintf(stderr, "HIP error %s at %s:%d\n", hipGetErrorString(err_),       \
                         __FILE__, __LINE__);                                              \
            std::exit(1);                                                                  \
        }                                                                                  \
    } while (0)

constexpr int kSteps = 200;
constexpr int kThreads = 256;

__global__ void scale_add(float* y, const float* x, int n) {       // y = 0.5 y + x
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 0.5f * y[i] + x[i];
}
__global__ void relu(float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] > 0.f ? y[i] : 0.f;
}
__global__ void damp(float* y, const float* x, int n) {           // y = y - 0.25 x
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] - 0.25f * x[i];
}

static void step(float* y, const float* x, int n, hipStream_t s) {
    const int blocks = (n + kThreads - 1) / kThreads;
    scale_add<<<blocks, kThreads, 0, s>>>(y, x, n);
    HIP_CHECK(hipGetLastError());
    relu<<<blocks, kThreads, 0, s>>>(y, n);
    HIP_CHECK(hipGetLastError());
    damp<<<blocks, kThreads, 0, s>>>(y, x, n);
    HIP_CHECK(hipGetLastError());
}

int main(int argc, char** argv) {
    xio::usage_if(argc, argv);
    std::vector<xio::Array> in = xio::load(argv[1]);
    const int n = static_cast<int>(in[0].size());
    float *x, *y;
    HIP_CHECK(hipMalloc(&x, sizeof(float) * n));
    HIP_CHECK(hipMalloc(&y, sizeof(float) * n));
    HIP_CHECK(hipMemcpy(x, in[0].f32(), sizeof(float) * n, hipMemcpyHostToDevice));
    HIP_CHECK(hipMemcpy(y, in[1].f32(), sizeof(float) * n, hipMemcpyHostToDevice));
    hipStream_t s;
    HIP_CHECK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));

    // capture one step: nothing runs during capture, the launches are recorded
    hipGraph_t graph;
    hipGraphExec_t exec;
    HIP_CHECK(hipStreamBeginCapture(s, hipStreamCaptureModeThreadLocal));
    step(y, x, n, s);
    HIP_CHECK(hipStreamEndCapture(s, &graph));
    HIP_CHECK(hipGraphInstantiateWithFlags(&exec, graph, 0));

    hipEvent_t start, stop;
    HIP_CHECK(hipEventCreate(&start));
    HIP_CHECK(hipEventCreate(&stop));
    HIP_CHECK(hipGraphLaunch(exec, s));                       // step 1, uploads the graph (not timed)
    HIP_CHECK(hipEventRecord(start, s));
    for (int t = 1; t < kSteps; ++t) HIP_CHECK(hipGraphLaunch(exec, s));
    HIP_CHECK(hipEventRecord(stop, s));
    HIP_CHECK(hipEventSynchronize(stop));
    float ms = 0.f;
    HIP_CHECK(hipEventElapsedTime(&ms, start, stop));
    std::vector<float> out(n);
    HIP_CHECK(hipMemcpy(out.data(), y, sizeof(float) * n, hipMemcpyDeviceToHost));
    HIP_CHECK(hipGraphExecDestroy(exec));
    HIP_CHECK(hipGraphDestroy(graph));
    HIP_CHECK(hipEventDestroy(start));
    HIP_CHECK(hipEventDestroy(stop));
    HIP_CHECK(hipStreamDestroy(s));
    HIP_CHECK(hipFree(x));
    HIP_CHECK(hipFree(y));
    xio::Writer w(argv[2]);
    w.f32(out.data(), out.size());
    w.scalar(ms);
    std::printf("%d steps as graph launches on n=%d: %.3f ms for %d (%.2f us per step)\n", kSteps, n, ms, kSteps - 1,
                1e3f * ms / (kSteps - 1));
    return 0;
}
