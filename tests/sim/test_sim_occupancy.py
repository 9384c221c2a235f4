"""Occupancy on the simulator (rocmlab.hip.sim.launch_occupancy) against the offline compiler's gfx942 listing:
the LDS the simulated launch used is the compiler's LDS for the kernel, and the waves per SIMD of a launch the
kernel's ``__launch_bounds__`` names are the compiler's ``Occupancy``; dynamic shared memory counts as static LDS
of the same size would. Control: without ``__launch_bounds__`` the compiler assumes 1024 threads, and the
launch of 256 gets another figure (so the comparison can fail)."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import compile as hip_compile
from rocmlab.hip import simulate
from rocmlab.hip.sim import launch_occupancy
from rocmlab.profile import counters

pytestmark = pytest.mark.skipif(bool(simulate.problem() or hip_compile.available("gfx942")),
                                reason=simulate.problem() or hip_compile.available("gfx942") or "available")

PROGRAM = """#include <hip/hip_runtime.h>
__global__ void __launch_bounds__(BLOCK) k_lds(const float* in, float* out) {
    __shared__ float tile[FLOATS];
    for (int i = threadIdx.x; i < FLOATS; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x * 7) % FLOATS];
}
__global__ void __launch_bounds__(BLOCK) k_dyn(const float* in, float* out) {
    extern __shared__ float dyn[];
    for (int i = threadIdx.x; i < FLOATS; i += blockDim.x) dyn[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = dyn[(threadIdx.x * 7) % FLOATS];
}
__global__ void k_unbounded(const float* in, float* out) {     // 16 KB, no __launch_bounds__
    __shared__ float tile[4096];
    for (int i = threadIdx.x; i < 4096; i += blockDim.x) tile[i] = in[i];
    __syncthreads();
    out[threadIdx.x] = tile[(threadIdx.x * 7) % 4096];
}
int main() {
    float *in, *out;
    hipMalloc(&in, 16384 * sizeof(float));
    hipMalloc(&out, 1024 * sizeof(float));
    hipMemset(in, 0, 16384 * sizeof(float));
    k_lds<<<2, BLOCK>>>(in, out);
    k_dyn<<<1, BLOCK, FLOATS * sizeof(float)>>>(in, out);
    k_unbounded<<<1, 256>>>(in, out);
    return hipDeviceSynchronize() == hipSuccess ? 0 : 1;
}
"""


def test_simulated_launch_occupancy_is_the_compilers_for_gfx942():
    block = random.choice([64, 128, 256, 512])
    floats = random.choice([512, 3000, 6144, 8192, 12288])
    src = PROGRAM.replace("BLOCK", str(block)).replace("FLOATS", str(floats))
    run = counters.simulate_counts(src)
    lds = launch_occupancy.from_run(src, run.stderr, "k_lds")
    assert lds.launch.workgroup_size == block and lds.launch.lds_dynamic_bytes == 0, lds
    assert lds.launch.lds_static_bytes == lds.compiler_lds_bytes == 4 * floats, lds
    assert lds.waves_per_simd == lds.compiler_occupancy, (block, floats, lds)
    dyn = launch_occupancy.from_run(src, run.stderr, "k_dyn")
    assert dyn.launch.lds_static_bytes == 0 and dyn.launch.lds_dynamic_bytes == 4 * floats, dyn
    assert dyn.compiler_lds_bytes == 0 and dyn.waves_per_simd == lds.compiler_occupancy, (block, floats, dyn)
    # control: the compiler's figure for an unbounded kernel is for 1024 threads; the launch of 256 gets 4
    free = launch_occupancy.from_run(src, run.stderr, "k_unbounded")
    assert free.launch.lds_bytes == free.compiler_lds_bytes == 16384, free
    assert free.compiler_occupancy == 8 and free.waves_per_simd == 4 and free.limiting == "LDS", free
    assert free.counts()["waves_per_simd"] == 4
    with pytest.raises(KeyError, match="launched: k_lds, k_dyn, k_unbounded"):
        launch_occupancy.from_run(src, run.stderr, "nope")
