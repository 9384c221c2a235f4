"""Kernels that are wrong on MI300X (each with its corrected control), for the wave64 simulator's tests
(tests/sim/test_sim_hardware_cases.py). Each program prints ``result: RIGHT`` or ``result: WRONG`` (its output
against a host reference) and exits 1 when wrong, as a learner's self-checking program does; the simulator's
sanitizer must name the bug (``tool``) at the line marked ``// BUG`` whatever the program prints or returns.

``BUG``/``FIX`` are the two spellings of the marked line: ``case.source(fixed)`` writes one of them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

HEAD = "#include <hip/hip_runtime.h>\n#include <cstdio>\n#include <cstdlib>\n#include <cstring>\n#include <unistd.h>\n"


@dataclass(frozen=True)
class Case:
    name: str
    tool: str          # the sanitizer's first finding on the buggy form (alternatives separated by "|")
    text: str          # the program, with {BUG} where the buggy and the fixed forms differ
    bug: str
    fix: str
    gpu: str           # what MI300X does with the buggy form

    def source(self, fixed: bool, seed: int | None = None) -> str:
        seed = random.getrandbits(31) if seed is None else seed
        return f"// {seed:x}\n" + HEAD + self.text.replace("{BUG}", self.fix if fixed else self.bug) \
            .replace("SEED", str(seed % 1000 + 1))

    def bug_line(self, fixed: bool = False) -> int:
        src = self.source(fixed, 0)
        return next(i for i, ln in enumerate(src.splitlines(), 1) if "// BUG" in ln)


_CHECK = """
    int bad = 0;
    for (int i = 0; i < N; ++i) bad += h[i] != want[i];
    std::printf("result: %s (%d of %d differ)\\n", bad ? "WRONG" : "RIGHT", bad, N);
    return bad ? 1 : 0;
}
"""

CASES = (
    Case("global race: += from every block on one word", "racecheck", """
__global__ void total(const float* x, float* out) {
    if (threadIdx.x == 0) { {BUG} }   // BUG
}
int main() {
    const int N = 1, B = 8;
    float hx[B], h[N], want[N] = {0};
    for (int i = 0; i < B; ++i) { hx[i] = SEED + i; want[0] += hx[i]; }
    float *x, *out;
    hipMalloc(&x, sizeof hx); hipMalloc(&out, sizeof h);
    hipMemcpy(x, hx, sizeof hx, hipMemcpyHostToDevice);
    hipMemset(out, 0, sizeof h);
    total<<<B, 64>>>(x, out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "out[0] += x[blockIdx.x];", "atomicAdd(out, x[blockIdx.x]);",
         "blocks run at once: their load-add-store sequences interleave and updates are lost"),
    Case("atomics on memory nothing initialised", "initcheck", """
__global__ void count(int* out) { atomicAdd(out, 1); }   // BUG (no hipMemset)
int main() {
    const int N = 1;
    int h[N], want[N] = {4 * 64};
    int* out;
    hipMalloc(&out, sizeof h);
    {BUG}
    count<<<4, 64>>>(out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "", "hipMemset(out, 0, sizeof h);",
         "the atomics add to whatever the allocation held (often zero: right by luck)"),
    Case("a pageable host pointer given to a kernel", "memcheck", """
__global__ void twice(const float* in, float* out) { out[threadIdx.x] = 2.0f * in[threadIdx.x]; }   // BUG
int main() {
    const int N = 64;
    float* hin = static_cast<float*>(std::malloc(N * sizeof(float)));
    float h[N], want[N];
    for (int i = 0; i < N; ++i) { hin[i] = SEED + i; want[i] = 2.0f * hin[i]; }
    float *din, *out, *in = hin;
    hipMalloc(&din, N * sizeof(float)); hipMalloc(&out, N * sizeof(float));
    hipMemcpy(din, hin, N * sizeof(float), hipMemcpyHostToDevice);
    {BUG}
    twice<<<1, N>>>(in, out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "", "in = din;",
         "Memory access fault by GPU: pageable host memory is not mapped for the GPU (XNACK off)"),
    Case("hipBLAS given host pointers", "memcheck", """
#include <hipblas/hipblas.h>
int main() {
    const int N = 16, n = 4;
    float ha[N], hb[N], h[N], want[N];
    for (int i = 0; i < N; ++i) { ha[i] = SEED + i; hb[i] = i % 3; }
    for (int c = 0; c < n; ++c) for (int r = 0; r < n; ++r) {
        want[r + c * n] = 0; for (int k = 0; k < n; ++k) want[r + c * n] += ha[r + k * n] * hb[k + c * n]; }
    float *a, *b, *c;
    hipMalloc(&a, sizeof ha); hipMalloc(&b, sizeof hb); hipMalloc(&c, sizeof h);
    hipMemcpy(a, ha, sizeof ha, hipMemcpyHostToDevice); hipMemcpy(b, hb, sizeof hb, hipMemcpyHostToDevice);
    hipblasHandle_t blas; hipblasCreate(&blas);
    const float one = 1.0f, zero = 0.0f;
    const float* A = {BUG};
    hipblasSgemm(blas, HIPBLAS_OP_N, HIPBLAS_OP_N, n, n, n, &one, A, n, b, n, &zero, c, n);   // BUG
    hipMemcpy(h, c, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "ha", "a",
         "the library's kernel faults on the host address (Memory access fault by GPU)"),
    Case("non-atomic += of one LDS word by every lane of a wavefront", "racecheck", """
__global__ void lanes(int* out) {
    __shared__ int c;
    if (threadIdx.x == 0) c = 0;
    __syncthreads();
    {BUG}   // BUG
    __syncthreads();
    if (threadIdx.x == 0) out[0] = c;
}
int main() {
    const int N = 1;
    int h[N], want[N] = {64};
    int* out;
    hipMalloc(&out, sizeof h);
    lanes<<<1, 64>>>(out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "c += 1;", "atomicAdd(&c, 1);",
         "the 64 lanes load together and store together: c ends at 1, not 64"),
    Case("two waves write one byte of an LDS word", "racecheck", """
__global__ void bytes(unsigned* out) {
    __shared__ unsigned char b[4];
    const int wave = threadIdx.x / 64, lane = threadIdx.x % 64;
    if (lane == 0) b[{BUG}] = static_cast<unsigned char>(wave + 1);   // BUG
    __syncthreads();
    if (threadIdx.x == 0) { unsigned w; std::memcpy(&w, b, 4); out[0] = b[0] | b[1] << 8; (void)w; }
}
int main() {
    const int N = 1;
    unsigned h[N], want[N] = {1u | 2u << 8};
    unsigned* out;
    hipMalloc(&out, sizeof h);
    bytes<<<1, 128>>>(out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "0", "wave",
         "both waves store byte 0: which lands last differs from run to run (the fix: different bytes, no race)"),
    Case("fp16 halves of one LDS word from two waves; a read of the half nothing wrote", "initcheck", """
__global__ void halves(float* out) {
    __shared__ _Float16 h2[2];
    const int wave = threadIdx.x / 64, lane = threadIdx.x % 64;
    if (lane == 0 && {BUG}) h2[wave] = static_cast<_Float16>(wave + 1);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = static_cast<float>(h2[0]) + static_cast<float>(h2[1]);   // BUG
}
int main() {
    const int N = 1;
    float h[N], want[N] = {3.0f};
    float* out;
    hipMalloc(&out, sizeof h);
    halves<<<1, 128>>>(out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "wave == 0", "wave < 2",
         "the unwritten half holds what an earlier block or kernel left in LDS"),
    Case("volatile __shared__ (builds and runs); read before the barrier", "racecheck|initcheck", """
__global__ void flip(const int* in, int* out) {
    volatile __shared__ int s[128];
    s[threadIdx.x] = in[threadIdx.x];
    {BUG}
    out[threadIdx.x] = s[127 - threadIdx.x];   // BUG
}
int main() {
    const int N = 128;
    int hin[N], h[N], want[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    for (int i = 0; i < N; ++i) want[i] = hin[N - 1 - i];
    int *in, *out;
    hipMalloc(&in, sizeof hin); hipMalloc(&out, sizeof h);
    hipMemcpy(in, hin, sizeof hin, hipMemcpyHostToDevice);
    flip<<<1, N>>>(in, out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "", "__syncthreads();",
         "the other wave may not have written its half yet"),
)

CASES += (
    Case("__builtin_popcount of a 64-lane __ballot", "synccheck", """
__global__ void positives(const int* x, int* out) {
    const int n = {BUG}(__ballot(x[threadIdx.x] > 0));   // BUG
    if (threadIdx.x % 64 == 0) atomicAdd(out, n);
}
int main() {
    const int N = 1, T = 256;
    int hx[T], h[N], want[N] = {0};
    for (int i = 0; i < T; ++i) { hx[i] = (i * 7 + SEED) % 5 - 1; want[0] += hx[i] > 0; }
    int *x, *out;
    hipMalloc(&x, sizeof hx); hipMalloc(&out, sizeof h);
    hipMemcpy(x, hx, sizeof hx, hipMemcpyHostToDevice);
    hipMemset(out, 0, sizeof h);
    positives<<<1, T>>>(x, out);
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "__builtin_popcount", "__builtin_popcountll",
         "__builtin_popcount takes 32 bits: lanes 32-63 of the ballot are not counted"),
)

CASES += (
    Case("float4 copy of a source nothing wrote", "initcheck", """
__global__ void copy4(const float4* in, float4* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 256;
    float hin[N], h[N], want[N];
    for (int i = 0; i < N; ++i) { hin[i] = SEED + i; want[i] = hin[i]; }
    float *in, *out;
    hipMalloc(&in, sizeof hin); hipMalloc(&out, sizeof h);
    hipMemcpy(in, hin, {BUG} * sizeof(float), hipMemcpyHostToDevice);
    copy4<<<1, N / 4>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
""" + _CHECK, "N / 2", "N",
         "the copy reads whatever the allocation held past the copied half"),
    Case("float4 copy 12 bytes past the end of its buffer", "memcheck", """
__global__ void copy4(const float4* in, float4* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 256, HAVE = {BUG};
    float hin[N], h[N], want[N];
    for (int i = 0; i < N; ++i) { hin[i] = i < HAVE ? SEED + i : 0.0f; want[i] = hin[i]; }
    float *in, *out;
    hipMalloc(&in, HAVE * sizeof(float)); hipMalloc(&out, sizeof h);
    hipMemcpy(in, hin, HAVE * sizeof(float), hipMemcpyHostToDevice);
    copy4<<<1, N / 4>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    hipMemcpy(h, out, sizeof h, hipMemcpyDeviceToHost);
    for (int i = N - 3; i < N; ++i) h[i] = want[i] = 0.0f;   // what lies past the buffer: not judged
""" + _CHECK, "N - 3", "N",
         "the last lane reads 12 bytes past the buffer inside its page: no fault, whatever lies there"),
)

BY_NAME = {c.name: c for c in CASES}
