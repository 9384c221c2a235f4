"""Kernels that are wrong on MI300X (each with its corrected control), for the wave64 simulator's tests
(tests/sim/test_sim_hardware_cases.py). Each program prints ``result: RIGHT`` or ``result: WRONG`` (its output
against a host reference) and exits 1 when wrong, as a learner's self-checking program does; the simulator's
sanitizer must name the bug (``tool``) at the line marked ``// BUG`` whatever the program prints or returns.

``BUG``/``FIX`` are the two spellings of the marked line: ``case.source(fixed)`` writes one of them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

HEAD = """#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
// each case's host side: a device buffer (a copy of a host array, or unset), and the result copied back and judged
template <class T> T* device(int n, const T* from = nullptr) {
    T* d;
    hipMalloc(&d, n * sizeof(T));
    if (from) hipMemcpy(d, from, n * sizeof(T), hipMemcpyHostToDevice);
    return d;
}
template <class T> int judge(const T* out, const T* want, int n) {
    T* h = new T[n];
    hipMemcpy(h, out, n * sizeof(T), hipMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < n; ++i) bad += std::memcmp(&h[i], &want[i], sizeof(T)) != 0;
    std::printf("result: %s (%d of %d differ)\\n", bad ? "WRONG" : "RIGHT", bad, n);
    return bad ? 1 : 0;
}
"""


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


CASES = (
    Case("global race: += from every block on one word", "racecheck", """
__global__ void total(const float* x, float* out) {
    if (threadIdx.x == 0) { {BUG} }   // BUG
}
int main() {
    const int B = 8;
    float hx[B], zero[1] = {0}, want[1] = {0};
    for (int i = 0; i < B; ++i) { hx[i] = SEED + i; want[0] += hx[i]; }
    float *x = device(B, hx), *out = device(1, zero);
    total<<<B, 64>>>(x, out);
    return judge(out, want, 1);
}
""", "out[0] += x[blockIdx.x];", "atomicAdd(out, x[blockIdx.x]);",
         "blocks run at once: their load-add-store sequences interleave and updates are lost"),
    Case("atomics on memory nothing initialised", "initcheck", """
__global__ void count(int* out) { atomicAdd(out, 1); }   // BUG (no hipMemset)
int main() {
    int want[1] = {4 * 64};
    int* out = device<int>(1);
    {BUG}
    count<<<4, 64>>>(out);
    return judge(out, want, 1);
}
""", "", "hipMemset(out, 0, sizeof(int));",
         "the atomics add to whatever the allocation held (often zero: right by luck)"),
    Case("a pageable host pointer given to a kernel", "memcheck", """
__global__ void twice(const float* in, float* out) { out[threadIdx.x] = 2.0f * in[threadIdx.x]; }   // BUG
int main() {
    const int N = 64;
    float* hin = static_cast<float*>(std::malloc(N * sizeof(float)));
    float want[N];
    for (int i = 0; i < N; ++i) { hin[i] = SEED + i; want[i] = 2.0f * hin[i]; }
    float *din = device(N, hin), *out = device<float>(N), *in = hin;
    {BUG}
    twice<<<1, N>>>(in, out);
    return judge(out, want, N);
}
""", "", "in = din;",
         "Memory access fault by GPU: pageable host memory is not mapped for the GPU (XNACK off)"),
    Case("hipBLAS given host pointers", "memcheck", """
#include <hipblas/hipblas.h>
int main() {
    const int N = 16, n = 4;
    float ha[N], hb[N], want[N];
    for (int i = 0; i < N; ++i) { ha[i] = SEED + i; hb[i] = i % 3; }
    for (int c = 0; c < n; ++c) for (int r = 0; r < n; ++r) {
        want[r + c * n] = 0; for (int k = 0; k < n; ++k) want[r + c * n] += ha[r + k * n] * hb[k + c * n]; }
    float *a = device(N, ha), *b = device(N, hb), *c = device<float>(N);
    hipblasHandle_t blas; hipblasCreate(&blas);
    const float one = 1.0f, zero = 0.0f;
    const float* A = {BUG};
    hipblasSgemm(blas, HIPBLAS_OP_N, HIPBLAS_OP_N, n, n, n, &one, A, n, b, n, &zero, c, n);   // BUG
    return judge(c, want, N);
}
""", "ha", "a",
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
    int want[1] = {64};
    int* out = device<int>(1);
    lanes<<<1, 64>>>(out);
    return judge(out, want, 1);
}
""", "c += 1;", "atomicAdd(&c, 1);",
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
    unsigned want[1] = {1u | 2u << 8};
    unsigned* out = device<unsigned>(1);
    bytes<<<1, 128>>>(out);
    return judge(out, want, 1);
}
""", "0", "wave",
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
    float want[1] = {3.0f};
    float* out = device<float>(1);
    halves<<<1, 128>>>(out);
    return judge(out, want, 1);
}
""", "wave == 0", "wave < 2",
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
    int hin[N], want[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    for (int i = 0; i < N; ++i) want[i] = hin[N - 1 - i];
    int *in = device(N, hin), *out = device<int>(N);
    flip<<<1, N>>>(in, out);
    return judge(out, want, N);
}
""", "", "__syncthreads();",
         "the other wave may not have written its half yet"),
    Case("__builtin_popcount of a 64-lane __ballot", "synccheck", """
__global__ void positives(const int* x, int* out) {
    const int n = {BUG}(__ballot(x[threadIdx.x] > 0));   // BUG
    if (threadIdx.x % 64 == 0) atomicAdd(out, n);
}
int main() {
    const int T = 256;
    int hx[T], zero[1] = {0}, want[1] = {0};
    for (int i = 0; i < T; ++i) { hx[i] = (i * 7 + SEED) % 5 - 1; want[0] += hx[i] > 0; }
    int *x = device(T, hx), *out = device(1, zero);
    positives<<<1, T>>>(x, out);
    return judge(out, want, 1);
}
""", "__builtin_popcount", "__builtin_popcountll",
         "__builtin_popcount takes 32 bits: lanes 32-63 of the ballot are not counted"),
    Case("float4 copy of a source nothing wrote", "initcheck", """
__global__ void copy4(const float4* in, float4* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 256;
    float hin[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    float *in = device<float>(N), *out = device<float>(N);
    hipMemcpy(in, hin, {BUG} * sizeof(float), hipMemcpyHostToDevice);
    copy4<<<1, N / 4>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    return judge(out, hin, N);
}
""", "N / 2", "N",
         "the copy reads whatever the allocation held past the copied half"),
    Case("float4 copy 12 bytes past the end of its buffer", "memcheck", """
__global__ void copy4(const float4* in, float4* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 256, HAVE = {BUG};
    float hin[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    float *in = device(HAVE, hin), *out = device<float>(N);
    copy4<<<1, N / 4>>>(reinterpret_cast<const float4*>(in), reinterpret_cast<float4*>(out));
    return judge(out, hin, HAVE);   // what lies past the buffer: not judged
}
""", "N - 3", "N",
         "the last lane reads 12 bytes past the buffer inside its page: no fault, whatever lies there"),
)

# Static __shared__ arrays: an index outside an extent (issue 51)
CASES += (
    Case("an index past a static __shared__ array", "memcheck", """
__global__ void shift(const float* in, float* out) {
    __shared__ float tile[256];
    tile[threadIdx.x] = in[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = threadIdx.x < 255 ? tile[threadIdx.x + 1] : tile[{BUG}];   // BUG
}
int main() {
    const int N = 256;
    float hin[N], want[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    for (int i = 0; i < N; ++i) want[i] = hin[(i + 1) % N];
    float *in = device(N, hin), *out = device<float>(N);
    shift<<<1, N>>>(in, out);
    return judge(out, want, N);
}
""", "threadIdx.x + 1", "0",
         "tile[256] is the next LDS variable's first word or past the block's LDS: a wrong value, no fault"),
    Case("a row index past a 2-D __shared__ tile", "memcheck", """
__global__ void down(const float* in, float* out) {
    __shared__ float a[16][16], b[16][16];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    a[ty][tx] = in[threadIdx.x];
    b[ty][tx] = 0.0f;
    __syncthreads();
    out[threadIdx.x] = a[{BUG}][tx] + a[0][16 * ty + tx] - a[ty][tx];   // BUG
}
int main() {
    const int N = 256;
    float hin[N], want[N];
    for (int i = 0; i < N; ++i) hin[i] = SEED + i;
    for (int i = 0; i < N; ++i) want[i] = hin[(i + 16) % N];
    float *in = device(N, hin), *out = device<float>(N);
    down<<<1, N>>>(in, out);
    return judge(out, want, N);
}
""", "ty + 1", "(ty + 1) % 16",
         "a[16][tx] reads b[0][tx] (the next variable): 0, not the wrapped row (a[0][16 * ty + tx] runs along the "
         "rows inside a: the same on the GPU, no finding)"),
)

# Struct copies, traced as the ISA issues them: one access of the struct's width (issue 51)
_STRUCTS = """struct P3 { float x, y, z; };
struct Q4 { float a, b, c, d; };
"""
CASES += (
    Case("a 12-byte struct copy of an element nothing wrote", "initcheck", _STRUCTS + """
__global__ void copy(const P3* in, P3* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 64;
    P3 hin[N];
    for (int i = 0; i < N; ++i) hin[i] = P3{SEED + 1.0f * i, 2.0f * i, 3.0f};
    P3 *in = device<P3>(N), *out = device<P3>(N);
    hipMemcpy(in, hin, ({BUG}) * sizeof(P3), hipMemcpyHostToDevice);
    copy<<<1, N>>>(in, out);
    return judge(out, hin, N);
}
""", "N - 1", "N",
         "the last lane copies whatever the allocation held"),
    Case("a 16-byte struct copy past the end of its buffer", "memcheck", _STRUCTS + """
__global__ void copy(const Q4* in, Q4* out) { out[threadIdx.x] = in[threadIdx.x]; }   // BUG
int main() {
    const int N = 64, HAVE = {BUG};
    Q4 hin[N];
    for (int i = 0; i < N; ++i) hin[i] = Q4{SEED + 1.0f * i, 1.0f, 2.0f, 3.0f * i};
    Q4 *in = device(HAVE, hin), *out = device<Q4>(N);
    copy<<<1, N>>>(in, out);
    return judge(out, hin, HAVE);   // what lies past the buffer: not judged
}
""", "N - 1", "N",
         "the last lane reads the 16 bytes after the buffer inside its page: no fault, whatever lies there"),
    Case("struct copies from every block to one slot", "racecheck", _STRUCTS + """
__global__ void last(const Q4* in, Q4* out) {
    if (threadIdx.x == 0) out[{BUG}] = in[blockIdx.x];   // BUG
}
int main() {
    const int B = 8;
    Q4 hin[B];
    for (int i = 0; i < B; ++i) hin[i] = Q4{SEED + 1.0f * i, 1.0f, 2.0f, 3.0f};
    Q4 *in = device(B, hin), *out = device<Q4>(B);
    last<<<B, 64>>>(in, out);
    return judge(out, hin, 1);
}
""", "0", "blockIdx.x",
         "blocks run in any order: which block's struct lands in out[0] differs from run to run"),
    Case("memcpy of a struct nothing wrote", "initcheck", _STRUCTS + """
__global__ void copy(const P3* in, P3* out) { std::memcpy(&out[threadIdx.x], &in[threadIdx.x], sizeof(P3)); }   // BUG
int main() {
    const int N = 64;
    P3 hin[N];
    for (int i = 0; i < N; ++i) hin[i] = P3{SEED + 1.0f * i, 1.0f, 2.0f};
    P3 *in = device<P3>(N), *out = device<P3>(N);
    hipMemcpy(in, hin, ({BUG}) * sizeof(P3), hipMemcpyHostToDevice);
    copy<<<1, N>>>(in, out);
    return judge(out, hin, N);
}
""", "N / 2", "N",
         "half the lanes copy whatever the allocation held"),
    Case("two waves of one block += one global word", "racecheck", """
__global__ void total(const float* x, float* out) {
    if (threadIdx.x % 64 == 0) { {BUG} }   // BUG
}
int main() {
    const int W = 4;
    float hx[W], zero[1] = {0}, want[1] = {0};
    for (int i = 0; i < W; ++i) { hx[i] = SEED + i; want[0] += hx[i]; }
    float *x = device(W, hx), *out = device(1, zero);
    total<<<1, 64 * W>>>(x, out);
    return judge(out, want, 1);
}
""", "out[0] += x[threadIdx.x / 64];", "atomicAdd(out, x[threadIdx.x / 64]);",
         "the block's wavefronts run at once: their load-add-store sequences interleave and updates are lost"),
    Case("a wave reads global words another wave of its block wrote, no barrier", "racecheck", """
__global__ void twice(const float* x, float* tmp, float* y) {
    const int t = threadIdx.x;
    if (t < 64) tmp[t] = 2.0f * x[t];
    {BUG} if (t >= 64) y[t - 64] = tmp[t - 64] + 1.0f;   // BUG
}
int main() {
    const int N = 64;
    float hx[N], want[N], zero[N] = {0};
    for (int i = 0; i < N; ++i) { hx[i] = SEED + i; want[i] = 2.0f * hx[i] + 1.0f; }
    float *x = device(N, hx), *tmp = device(N, zero), *y = device(N, zero);
    twice<<<1, 2 * N>>>(x, tmp, y);
    return judge(y, want, N);
}
""", "", "__syncthreads();",
         "wavefront 1 may read tmp before wavefront 0 has written it: it reads 0 (or leftovers)"),
    Case("a wave overwrites global words another wave of its block still reads, no barrier", "racecheck", """
__global__ void rotate(float* buf, float* y) {
    const int t = threadIdx.x;
    if (t < 64) y[t] = buf[t];
    {BUG} if (t >= 64) buf[t - 64] = -1.0f;   // BUG
}
int main() {
    const int N = 64;
    float hb[N], zero[N] = {0};
    for (int i = 0; i < N; ++i) hb[i] = SEED + i;
    float *buf = device(N, hb), *y = device(N, zero);
    rotate<<<1, 2 * N>>>(buf, y);
    return judge(y, hb, N);
}
""", "", "__syncthreads();",
         "wavefront 1 may overwrite buf before wavefront 0 has read it: y gets -1"),
)

BY_NAME = {c.name: c for c in CASES}
