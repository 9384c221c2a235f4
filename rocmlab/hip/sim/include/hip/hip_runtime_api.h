// hip/hip_runtime_api.h of rocmlab's CPU simulator: the host API subset the course uses.
// Memory is host memory (hipMalloc buffers sit against guard pages), streams run in order at once,
// events record order and never a time, graphs are captured and replayed.
#pragma once
#ifndef HIPSIM_HIP_RUNTIME_API_H
#define HIPSIM_HIP_RUNTIME_API_H
#include <stddef.h>
#include <stdint.h>
#include <tuple>
#include <type_traits>
#include <utility>
#include "hip_runtime.h"

enum hipError_t {
    hipSuccess = 0, hipErrorInvalidValue = 1, hipErrorOutOfMemory = 2, hipErrorMemoryAllocation = 2,
    hipErrorNotInitialized = 3, hipErrorInvalidConfiguration = 9, hipErrorInvalidSymbol = 13,
    hipErrorInvalidDevicePointer = 17, hipErrorInvalidMemcpyDirection = 21, hipErrorNoDevice = 100,
    hipErrorInvalidDevice = 101, hipErrorInvalidResourceHandle = 400, hipErrorInvalidHandle = 400,
    hipErrorNotReady = 600, hipErrorLaunchFailure = 719, hipErrorNotSupported = 801,
    hipErrorStreamCaptureUnsupported = 900, hipErrorStreamCaptureInvalidated = 901, hipErrorUnknown = 999,
};
enum hipMemcpyKind { hipMemcpyHostToHost = 0, hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2,
                     hipMemcpyDeviceToDevice = 3, hipMemcpyDefault = 4 };
enum hipStreamCaptureMode { hipStreamCaptureModeGlobal = 0, hipStreamCaptureModeThreadLocal = 1,
                            hipStreamCaptureModeRelaxed = 2 };
enum hipStreamCaptureStatus { hipStreamCaptureStatusNone = 0, hipStreamCaptureStatusActive = 1,
                              hipStreamCaptureStatusInvalidated = 2 };
enum hipDeviceAttribute_t {
    hipDeviceAttributeMaxThreadsPerBlock, hipDeviceAttributeMaxBlockDimX, hipDeviceAttributeMaxBlockDimY,
    hipDeviceAttributeMaxBlockDimZ, hipDeviceAttributeMaxGridDimX, hipDeviceAttributeMaxGridDimY,
    hipDeviceAttributeMaxGridDimZ, hipDeviceAttributeMaxSharedMemoryPerBlock, hipDeviceAttributeTotalConstantMemory,
    hipDeviceAttributeWarpSize, hipDeviceAttributeMaxRegistersPerBlock, hipDeviceAttributeClockRate,
    hipDeviceAttributeMemoryClockRate, hipDeviceAttributeMemoryBusWidth, hipDeviceAttributeMultiprocessorCount,
    hipDeviceAttributeComputeCapabilityMajor, hipDeviceAttributeComputeCapabilityMinor,
    hipDeviceAttributeL2CacheSize, hipDeviceAttributeMaxThreadsPerMultiProcessor,
    hipDeviceAttributeMaxSharedMemoryPerMultiprocessor, hipDeviceAttributeSharedMemPerBlockOptin,
};
#define hipStreamDefault 0u
#define hipStreamNonBlocking 1u
#define hipEventDefault 0u
#define hipEventBlockingSync 1u
#define hipEventDisableTiming 2u
#define hipHostMallocDefault 0u
#define hipHostMallocPortable 1u
#define hipHostMallocMapped 2u
#define hipHostMallocWriteCombined 4u
#define hipMemAttachGlobal 1u
#define hipDeviceScheduleAuto 0u

struct hipDeviceProp_t {
    char name[256];
    char gcnArchName[256];
    size_t totalGlobalMem, sharedMemPerBlock, totalConstMem, l2CacheSize, sharedMemPerMultiprocessor;
    size_t maxSharedMemoryPerMultiProcessor, memPitch, textureAlignment;
    int regsPerBlock, warpSize, maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3], clockRate;
    int memoryClockRate, memoryBusWidth, multiProcessorCount, major, minor, maxThreadsPerMultiProcessor;
    int computeMode, concurrentKernels, pciBusID, pciDeviceID, pciDomainID, isMultiGpuBoard, integrated;
    int canMapHostMemory, managedMemory, cooperativeLaunch, ECCEnabled, asyncEngineCount, unifiedAddressing;
};

struct ihipStream_t;
struct ihipEvent_t;
struct ihipGraph_t;
struct ihipGraphExec_t;
typedef ihipStream_t* hipStream_t;
typedef ihipEvent_t* hipEvent_t;
typedef ihipGraph_t* hipGraph_t;
typedef ihipGraphExec_t* hipGraphExec_t;
typedef void* hipGraphNode_t;
typedef int hipDevice_t;

const char* hipGetErrorString(hipError_t e);
const char* hipGetErrorName(hipError_t e);
hipError_t hipGetLastError();
hipError_t hipPeekAtLastError();
hipError_t hipGetDeviceCount(int* n);
hipError_t hipSetDevice(int d);
hipError_t hipGetDevice(int* d);
hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d);
hipError_t hipDeviceGetAttribute(int* v, hipDeviceAttribute_t a, int d);
hipError_t hipDeviceSynchronize();
hipError_t hipDeviceReset();
hipError_t hipRuntimeGetVersion(int* v);
hipError_t hipDriverGetVersion(int* v);
hipError_t hipMemGetInfo(size_t* free_b, size_t* total_b);
hipError_t hipMalloc(void** p, size_t bytes);
hipError_t hipMallocManaged(void** p, size_t bytes, unsigned flags = hipMemAttachGlobal);
hipError_t hipHostMalloc(void** p, size_t bytes, unsigned flags = 0);
hipError_t hipMallocHost(void** p, size_t bytes);
hipError_t hipHostAlloc(void** p, size_t bytes, unsigned flags);
hipError_t hipFree(void* p);
hipError_t hipHostFree(void* p);
hipError_t hipFreeHost(void* p);
hipError_t hipMallocAsync(void** p, size_t bytes, hipStream_t s);
hipError_t hipFreeAsync(void* p, hipStream_t s);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipMemcpyAsync(void* dst, const void* src, size_t bytes, hipMemcpyKind kind, hipStream_t s = nullptr);
hipError_t hipMemset(void* dst, int value, size_t bytes);
hipError_t hipMemsetAsync(void* dst, int value, size_t bytes, hipStream_t s = nullptr);
hipError_t hipMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                       hipMemcpyKind kind);
hipError_t hipStreamCreate(hipStream_t* s);
hipError_t hipStreamCreateWithFlags(hipStream_t* s, unsigned flags);
hipError_t hipStreamCreateWithPriority(hipStream_t* s, unsigned flags, int priority);
hipError_t hipStreamDestroy(hipStream_t s);
hipError_t hipStreamSynchronize(hipStream_t s);
hipError_t hipStreamQuery(hipStream_t s);
hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned flags = 0);
hipError_t hipEventCreate(hipEvent_t* e);
hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned flags);
hipError_t hipEventDestroy(hipEvent_t e);
hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr);
hipError_t hipEventSynchronize(hipEvent_t e);
hipError_t hipEventQuery(hipEvent_t e);
hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t stop);
hipError_t hipStreamBeginCapture(hipStream_t s, hipStreamCaptureMode mode);
hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* g);
hipError_t hipStreamIsCapturing(hipStream_t s, hipStreamCaptureStatus* st);
hipError_t hipGraphInstantiate(hipGraphExec_t* e, hipGraph_t g, hipGraphNode_t* err_node = nullptr,
                               char* log = nullptr, size_t log_size = 0);
hipError_t hipGraphInstantiateWithFlags(hipGraphExec_t* e, hipGraph_t g, unsigned long long flags);
hipError_t hipGraphLaunch(hipGraphExec_t e, hipStream_t s);
hipError_t hipGraphExecDestroy(hipGraphExec_t e);
hipError_t hipGraphDestroy(hipGraph_t g);
hipError_t hipGraphGetNodes(hipGraph_t g, hipGraphNode_t* nodes, size_t* n);
hipError_t hipFuncSetAttribute(const void* f, int attr, int value);

template <class T> hipError_t hipMalloc(T** p, size_t bytes) { return hipMalloc(reinterpret_cast<void**>(p), bytes); }
template <class T> hipError_t hipMallocManaged(T** p, size_t bytes, unsigned f = hipMemAttachGlobal) {
    return hipMallocManaged(reinterpret_cast<void**>(p), bytes, f);
}
template <class T> hipError_t hipHostMalloc(T** p, size_t bytes, unsigned f = 0) {
    return hipHostMalloc(reinterpret_cast<void**>(p), bytes, f);
}
template <class T> hipError_t hipMallocAsync(T** p, size_t bytes, hipStream_t s) {
    return hipMallocAsync(reinterpret_cast<void**>(p), bytes, s);
}
template <class T> hipError_t hipMemcpyToSymbol(T& sym, const void* src, size_t bytes, size_t off = 0,
                                               hipMemcpyKind k = hipMemcpyHostToDevice) {
    if (off + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpy(reinterpret_cast<char*>(&sym) + off, src, bytes, k);
}
template <class T> hipError_t hipMemcpyFromSymbol(void* dst, const T& sym, size_t bytes, size_t off = 0,
                                                 hipMemcpyKind k = hipMemcpyDeviceToHost) {
    if (off + bytes > sizeof(T)) return hipErrorInvalidValue;
    return hipMemcpy(dst, reinterpret_cast<const char*>(&sym) + off, bytes, k);
}
template <class T> hipError_t hipGetSymbolAddress(void** p, T& sym) { *p = &sym; return hipSuccess; }
#define HIP_SYMBOL(x) x

// --- kernel launches --------------------------------------------------------------------------------
namespace hipsim {
struct LaunchSpec {
    const char* kernel;
    int line;
    dim3 grid, block;
    size_t shared_bytes;
    void (*call)(void* state);     // runs the kernel body for the current thread
    void* state;                   // the kernel and its arguments (copied at launch, as on a GPU)
    void (*destroy)(void* state);
    void* (*clone)(const void* state);
    size_t state_bytes = 0;        // sizeof *state: the kernel reads its arguments there (the sanitizer allows it)
};
// Runs the launch now, or records it into the graph its stream is capturing (it then owns `spec.state`).
hipError_t launch(const LaunchSpec& spec, hipStream_t stream);

template <class... P> struct KernelCall {
    void (*kernel)(P...);
    std::tuple<typename std::decay<P>::type...> args;
    static void call(void* s) { auto* k = static_cast<KernelCall*>(s); std::apply(k->kernel, k->args); }
    static void destroy(void* s) { delete static_cast<KernelCall*>(s); }
    static void* clone(const void* s) { return new KernelCall(*static_cast<const KernelCall*>(s)); }
};

// `k<<<g, b, shm, s>>>(args)` becomes `::hipsim::Launch(k, "k", __LINE__, g, b, shm, s)(args)`.
template <class... P> struct Launch {
    void (*kernel)(P...);
    const char* name;
    int line;
    dim3 grid, block;
    size_t shm;
    hipStream_t stream;
    Launch(void (*k)(P...), const char* n, int l, dim3 g, dim3 b, size_t s = 0, hipStream_t st = nullptr)
        : kernel(k), name(n), line(l), grid(g), block(b), shm(s), stream(st) {}
    template <class... A> void operator()(A&&... a) const {
        static_assert(sizeof...(A) == sizeof...(P), "the kernel is launched with the wrong number of arguments");
        auto* st = new KernelCall<P...>{kernel, std::tuple<typename std::decay<P>::type...>(std::forward<A>(a)...)};
        LaunchSpec spec{name, line, grid, block, shm, &KernelCall<P...>::call, st, &KernelCall<P...>::destroy,
                        &KernelCall<P...>::clone, sizeof(KernelCall<P...>)};
        launch(spec, stream);
    }
};
}  // namespace hipsim

#define hipLaunchKernelGGL(kernel, grid, block, shm, stream, ...) \
    ::hipsim::Launch(kernel, #kernel, __LINE__, grid, block, shm, stream)(__VA_ARGS__)

#endif  // HIPSIM_HIP_RUNTIME_API_H
