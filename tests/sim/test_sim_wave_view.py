"""The view of one wave instruction's accesses (lane -> address -> LDS bank) from the simulator's trace."""

from __future__ import annotations

import random

import pytest

from rocmlab.course import wave_view
from rocmlab.hip import simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

SRC = """#include <hip/hip_runtime.h>
__global__ void column(float* out) {
    __shared__ float tile[64][ROW];
    tile[threadIdx.x][0] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = tile[threadIdx.x][0];   // the traced read
}
int main() {
    float* out;
    hipMalloc(&out, 64 * sizeof(float));
    column<<<1, 64>>>(out);
    return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"""


def test_a_column_read_shows_every_lane_on_one_bank_and_the_padded_one_spread():
    line = next(i for i, ln in enumerate(SRC.splitlines(), 1) if "the traced read" in ln)
    for row, want in ((32, 32), (33, 1), (random.choice([34, 36]), None)):
        traced = wave_view.trace_program(SRC.replace("ROW", str(row)))
        inst = next(t for t in traced if t["line"] == line and t["space"] == "lds")
        r = wave_view.rows(inst)
        assert [x[0] for x in r] == list(range(64))
        assert all(x[1] == x[0] * row * 4 for x in r)                    # lane l reads tile[l][0]
        assert all(x[2] == (x[0] * row) % 32 for x in r)                 # its bank
        import math
        degree = math.gcd(row, 32)
        assert want is None or degree == want
        assert max(x[3] for x in r) == degree, r[:4]
        assert "traced by the wave64 simulator" in wave_view.html(inst)
