"""Wave64 traps: small self-checking HIP programs that are right with warps of 32 and wrong on MI300X.

Each prints one line ``NAME: got X, expected Y: PASSED|FAILED`` and exits 0 either way (the verdict is
the line). ``benchmarks/sim_fidelity.py`` runs them on the simulator here and through the HIP->CUDA path on an
NVIDIA GPU; ``tests/sim/whole/test_sim_grader.py`` checks the simulator gives MI300X's (wrong) answer. The graded
wrong submissions (the hard-coded-32 reduction) are in :mod:`rocmlab.grader.wrong`.
"""

from __future__ import annotations

from dataclasses import dataclass

_MAIN = r"""
int main() {
    const int n = 1 << 16;
    std::vector<int> h(n);
    long long want = 0;
    for (int i = 0; i < n; ++i) { h[i] = ((i * 2654435761u) >> 7) % 5 == 0 ? 1 : -1; want += EXPECT; }
    int* x; unsigned long long* out;
    if (hipMalloc(&x, n * sizeof(int)) != hipSuccess || hipMalloc(&out, sizeof(*out)) != hipSuccess) return 1;
    hipMemcpy(x, h.data(), n * sizeof(int), hipMemcpyHostToDevice);
    hipMemset(out, 0, sizeof(*out));
    KERNEL<<<n / 256, 256>>>(x, n, out);
    unsigned long long got = 0;
    hipMemcpy(&got, out, sizeof(got), hipMemcpyDeviceToHost);
    printf("NAME: got %lld, expected %lld: %s\n", (long long)got, want, (long long)got == want ? "PASSED" : "FAILED");
    return 0;
}
"""

_HEAD = "#include <hip/hip_runtime.h>\n#include <cstdio>\n#include <vector>\n"


@dataclass(frozen=True)
class Trap:
    name: str
    source: str
    warp32: str       # what a warp of 32 (the H200 through HIP->CUDA) gives
    mi300x: str       # what MI300X (and the simulator) gives, and why


def _program(name: str, kernel: str, expect: str, kname: str) -> str:
    return _HEAD + kernel + _MAIN.replace("KERNEL", kname).replace("NAME", name).replace("EXPECT", expect)


TRAPS = [
    Trap("ballot-32-bit",
         _program("ballot-32-bit", r"""
// counts the positive values: one ballot per wavefront, its popcount added once per wavefront
__global__ void count_positive(const int* x, int n, unsigned long long* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int mask = __ballot(i < n && x[i] > 0);       // 32 bits: the upper half of a wave64 is lost
    if (threadIdx.x % warpSize == 0) atomicAdd(out, (unsigned long long)__popc(mask));
}
""", "(h[i] > 0)", "count_positive"),
         "PASSED: a 32-bit ballot holds a whole warp", "FAILED: lanes 32-63 of each wavefront are cut off (about half the count)"),
    Trap("ballot-64-bit",
         _program("ballot-64-bit", r"""
// the fix: the ballot is 64 bits wide, counted with __popcll
__global__ void count_positive(const int* x, int n, unsigned long long* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long mask = __ballot(i < n && x[i] > 0);
    if (threadIdx.x % warpSize == 0) atomicAdd(out, (unsigned long long)__popcll(mask));
}
""", "(h[i] > 0)", "count_positive"),
         "PASSED", "PASSED: every lane counted"),
    Trap("leader-broadcast-32",
         _program("leader-broadcast-32", r"""
// every lane takes "the first value of its warp" with __shfl(v, 0): a group of 32 lanes assumed
__global__ void leader_sum(const int* x, int n, unsigned long long* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int first = __shfl(i < n ? x[i] : 0, 0);
    atomicAdd(out, (unsigned long long)(long long)first);
}
""", "h[i - i % 32]", "leader_sum"),
         "PASSED", "FAILED: lanes 32-63 read lane 0 of the wavefront, not lane 32 (use __shfl(v, 0, 32), or a "
                   "tile of 32 from cooperative groups)"),
]
