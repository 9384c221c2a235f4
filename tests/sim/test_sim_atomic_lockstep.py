"""Atomics take part in lockstep whether the sanitizer's checks are on or off: the 64 lanes of a wavefront perform
their k-th atomic before any performs its (k+1)-th, as a wavefront issues one atomic instruction for its lanes. Two
atomicAdds per lane on one counter return values 64 apart (MI300X's answer), and a float sum built by two atomics per
lane adds in the same order, with the checks on and off; the control, lanes running ahead (HIPSIM_LOCKSTEP=0), gets
1 apart. Fresh random inputs each run."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

PROGRAM = """#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
__global__ void k(unsigned* c, unsigned* gap, float* f, const float* v) {
    const int t = threadIdx.x;
    const unsigned a = atomicAdd(c, 1u);
    const unsigned b = atomicAdd(c, 1u);
    gap[t] = b - a;
    atomicAdd(f, v[t]);
    atomicAdd(f, v[t + 256]);
}
int main(int argc, char** argv) {
    unsigned *c, *gap;
    float *f, *v;
    hipMalloc(&c, 4); hipMalloc(&gap, 256 * 4); hipMalloc(&f, 4); hipMalloc(&v, 512 * 4);
    hipMemset(c, 0, 4); hipMemset(f, 0, 4);
    float hv[512];
    std::srand(std::atoi(argv[1]));
    for (int i = 0; i < 512; ++i) hv[i] = (std::rand() % 100000) * 1e-3f * (i % 3 ? 1.0f : 1e4f);
    hipMemcpy(v, hv, sizeof hv, hipMemcpyHostToDevice);
    k<<<1, 256>>>(c, gap, f, v);
    unsigned h[256];
    float sum;
    hipMemcpy(h, gap, sizeof h, hipMemcpyDeviceToHost);
    hipMemcpy(&sum, f, 4, hipMemcpyDeviceToHost);
    int apart64 = 0, apart1 = 0;
    for (int i = 0; i < 256; ++i) { apart64 += h[i] == 64; apart1 += h[i] == 1; }
    std::printf("apart64 %d apart1 %d sum %.9g\\n", apart64, apart1, sum);
    return 0;
}
"""


def test_atomics_are_in_lockstep_with_the_checks_on_and_off():
    res = build.compile(f"// {random.getrandbits(64):x}\n" + PROGRAM, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    seed = str(random.randrange(1, 1 << 30))
    out = {}
    for checks in ("1", "0"):
        done = build.run(res, [seed], env={"HIPSIM_CHECKS": checks})
        assert done.returncode == 0 and simulate.findings(done.stderr) == [], done.stderr
        assert "apart64 256 apart1 0 " in done.stdout, (checks, done.stdout)
        out[checks] = done.stdout
    assert out["1"] == out["0"]                          # the float sum too: the same order of adds
    done = build.run(res, [seed], env={"HIPSIM_CHECKS": "0", "HIPSIM_LOCKSTEP": "0"})   # control: lanes run ahead
    assert done.returncode == 0 and "apart64 0 apart1 256 " in done.stdout, done.stdout
