"""Counters from the wave64 simulator, named as gfx942's are, for kernels whose counts can be derived by hand:
an LDS transpose with a random row padding (bank conflicts follow gcd(pad, 32)) and a copy with a random stride
(128-byte lines per wave instruction)."""

from __future__ import annotations

import math
import random

import pytest

from rocmlab.hip import simulate
from rocmlab.profile import counters

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

PROGRAM = """#include <hip/hip_runtime.h>
#define PAD PADDING
__global__ void transpose(const float* in, float* out) {
    __shared__ float tile[32][32 + PAD];
    int x = threadIdx.x, y = threadIdx.y;          // 32 x 8 threads: 4 waves, 4 rows each
    for (int r = y; r < 32; r += 8) tile[r][x] = in[r * 32 + x];
    __syncthreads();
    for (int r = y; r < 32; r += 8) out[r * 32 + x] = tile[x][r];
}
__global__ void copy(const float* in, float* out, int stride) {
    int i = threadIdx.x;
    out[i * stride] = in[i * stride];
}
int main() {
    float *in, *out;
    const size_t n = 64 * 64 * 64;
    hipMalloc(&in, n * sizeof(float));
    hipMalloc(&out, n * sizeof(float));
    hipMemset(in, 0, n * sizeof(float));
    transpose<<<1, dim3(32, 8)>>>(in, out);
    copy<<<1, 64>>>(in, out, STRIDE);
    return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"""


def _counts(pad: int, stride: int) -> counters.SimulatedCounts:
    src = PROGRAM.replace("PADDING", str(pad)).replace("STRIDE", str(stride))
    return counters.simulate_counts(src)


def test_bank_conflicts_and_lines_are_what_the_hand_count_gives():
    pad, stride = random.choice([0, 2, 4, 8, 16]), random.choice([2, 3, 8, 32, 64])
    for p, s in ((pad, stride), (1, 1)):           # a random case, and the padded / coalesced control
        c = _counts(p, s)
        t, k = c.kernel("transpose"), c.kernel("copy")
        assert t["SQ_WAVES"] == 4 and t["SQ_INSTS_LDS"] == 32, t
        assert t["SQ_INSTS_VMEM_RD"] == 16 and t["SQ_INSTS_VMEM_WR"] == 16, t
        # stores tile[r][x]: a half-wave writes one row, 32 banks, no conflict. Loads tile[x][r]: word x*(32+p)+r,
        # bank (x*p + r) % 32, so gcd(p, 32) words share a bank: gcd - 1 extra cycles per half-wave, 16 loads
        want = 16 * 2 * (math.gcd(p, 32) - 1)
        assert t["SQ_LDS_BANK_CONFLICT"] == want, (p, t)
        assert t["TCP_TOTAL_CACHE_ACCESSES_sum"] == 32 * 2, t     # every half-wave reads or writes one 128 B row
        lines = len({(i * s * 4) // 128 for i in range(64)})      # 64 lanes, 4 bytes each, s floats apart
        assert k["TCP_TOTAL_CACHE_ACCESSES_sum"] == 2 * lines, (s, k)
        assert k["bytes_read"] == k["bytes_written"] == 256 and k["active_lanes"] == 128, k
    assert c.label == "counted by the wave64 simulator" and c.backend == "cpu: wave64 simulator"


def test_an_unknown_kernel_name_says_which_were_launched():
    c = _counts(1, 1)
    with pytest.raises(KeyError, match="launched: transpose, copy"):
        c.kernel("nope")
