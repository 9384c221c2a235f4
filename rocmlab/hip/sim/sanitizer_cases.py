"""Self-checking HIP programs with a bug the simulator's sanitizer reports and a GPU hides (the fidelity table's
sanitizer rows, ``benchmarks/sim_fidelity.py``). Each prints ``result: RIGHT`` or ``result: WRONG`` (its output
against a host reference): on a GPU that line is all there is; on the simulator the findings come with it.
"""

from __future__ import annotations

from dataclasses import dataclass

_MAIN = """
int main() {
    const int n = 512;
    float h[n], o[256], want[256];
    for (int i = 0; i < n; ++i) h[i] = 1.0f + (i % 17);
    float *in, *out;
    if (hipMalloc(&in, n * sizeof(float)) != hipSuccess || hipMalloc(&out, 256 * sizeof(float)) != hipSuccess) return 1;
    if (hipMemcpy(in, h, COPY * sizeof(float), hipMemcpyHostToDevice) != hipSuccess) return 1;
    LAUNCH
    if (hipDeviceSynchronize() != hipSuccess) { std::printf("result: launch failed\\n"); return 1; }
    if (hipMemcpy(o, out, sizeof o, hipMemcpyDeviceToHost) != hipSuccess) return 1;
    for (int i = 0; i < 256; ++i) want[i] = WANT;
    int bad = 0;
    for (int i = 0; i < 256; ++i) bad += o[i] != want[i];
    std::printf("result: %s (%d of 256 differ)\\n", bad ? "WRONG" : "RIGHT", bad);
    return 0;
}
"""


@dataclass(frozen=True)
class SanitizerCase:
    name: str
    tool: str            # the check that should report it on the simulator
    source: str
    gpu: str             # what a GPU does with it (why it hides the bug)


def _program(kernel: str, launch: str, want: str, copy: str = "n") -> str:
    return ("#include <hip/hip_runtime.h>\n#include <cstdio>\n" + kernel
            + _MAIN.replace("LAUNCH", launch).replace("WANT", want).replace("COPY", copy))


CASES = (
    SanitizerCase("race: no barrier between waves", "racecheck", _program(
        """__global__ void rev(const float* in, float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = in[threadIdx.x];
    out[threadIdx.x] = tile[255 - threadIdx.x];      // reads another wavefront's write, no __syncthreads()
}
""", "rev<<<1, 256>>>(in, out);", "h[255 - i]"),
        "right or wrong by the waves' timing; nothing reports it (compute-sanitizer racecheck would, on NVIDIA)"),
    SanitizerCase("uninitialised LDS read (right by luck)", "initcheck", _program(
        """__global__ void ones(const float* in, float* out) {
    __shared__ float s[256];
    if (blockIdx.x == 0) s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (blockIdx.x == 1) out[threadIdx.x] = s[threadIdx.x];   // block 1 never wrote s
}
""", "ones<<<2, 256>>>(in, out);", "1.0f"),
        "block 1 reads what an earlier block or kernel left in that CU's LDS: right or wrong from run to run"),
    SanitizerCase("device memory nothing wrote", "initcheck", _program(
        """__global__ void copy(const float* in, float* out) {
    out[threadIdx.x] = in[256 + threadIdx.x];          // only in[0..255] was copied in
}
""", "copy<<<1, 256>>>(in, out);", "h[256 + i]", copy="256"),
        "reads whatever the allocation held (often zeros, or an earlier program's data)"),
    SanitizerCase("out-of-bounds read", "memcheck", _program(
        """__global__ void shifted(const float* in, float* out) {
    out[threadIdx.x] = in[threadIdx.x + 300];          // in has 512 floats: lanes 212..255 read past it
}
""", "shifted<<<1, 256>>>(in, out);", "i + 300 < n ? h[i + 300] : 0.0f"),
        "reads past the buffer inside the same page: no fault, whatever lies there"),
)
