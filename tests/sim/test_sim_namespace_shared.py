"""A ``__shared__`` variable at namespace scope is LDS the sanitizer knows, as a function's static one is: one past
its end through a pointer is a memcheck finding naming it, a read by one wavefront of what another wrote with no
barrier between is a racecheck finding, a read of a word no lane wrote is an initcheck finding; the same program in
bounds, with the barrier, or reading what was written, is clean. (Before, such a variable was not tracked at all:
its note, a namespace-scope thread_local's initialiser, never ran.) One build; the mode and index are the program's
arguments (fresh random values each run)."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

SOURCE = """#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
namespace tiles {
__shared__ float g[128];
}
__shared__ float other[128];
using tiles::g;
__global__ void past(float* out, int i) {
    g[threadIdx.x] = 1.0f + threadIdx.x;
    other[threadIdx.x] = 2.0f;
    __syncthreads();
    const float* p = g;
    out[threadIdx.x] = p[i] + other[threadIdx.x];   // BUG past
}
__global__ void race(float* out, int barrier) {
    g[threadIdx.x] = 1.0f + threadIdx.x;
    if (barrier) __syncthreads();
    if (threadIdx.x >= 64) out[threadIdx.x] = g[threadIdx.x - 64];   // BUG race
}
__global__ void unwritten(float* out, int skip) {
    if (threadIdx.x != skip) g[threadIdx.x] = 1.0f + threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0) out[0] = g[5];   // BUG unwritten
}
int main(int argc, char** argv) {
    float* o;
    hipMalloc(&o, 128 * sizeof(float));
    hipMemset(o, 0, 128 * sizeof(float));
    const int mode = std::atoi(argv[1]), arg = std::atoi(argv[2]);
    if (mode == 0) past<<<1, 128>>>(o, arg);
    if (mode == 1) race<<<1, 128>>>(o, arg);
    if (mode == 2) unwritten<<<1, 128>>>(o, arg);
    float h[128];
    hipMemcpy(h, o, sizeof h, hipMemcpyDeviceToHost);
    std::printf("out %.1f %.1f\\n", h[0], h[70]);
    return 0;
}
"""


@pytest.fixture(scope="module")
def program():
    src = f"// {random.getrandbits(64):x}\n" + SOURCE
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    lines = {tag: next(n for n, ln in enumerate(src.splitlines(), 1) if f"// BUG {tag}" in ln)
             for tag in ("past", "race", "unwritten")}
    return res, lines


def _run(res, mode: int, arg: int):
    done = build.run(res, [str(mode), str(arg)])
    return done, simulate.findings(done.stderr)


def test_one_past_a_namespace_scope_shared_array_is_caught_and_names_it(program):
    res, lines = program
    done, found = _run(res, 0, 128)
    assert done.returncode == simulate.STOPPED_EXIT, done.stderr
    assert found and found[0][0] == "memcheck" and found[0][1].startswith(f"line {lines['past']}:"), found
    assert "g[128]" in found[0][1] and "past its end" in found[0][1], found
    i = random.randrange(0, 128)                       # control: in bounds
    done, found = _run(res, 0, i)
    assert done.returncode == 0 and found == [], done.stderr
    assert f"out {1.0 + i + 2.0:.1f} {1.0 + i + 2.0:.1f}" in done.stdout, done.stdout


def test_a_race_between_wavefronts_on_a_namespace_scope_shared_array_is_caught(program):
    res, lines = program
    done, found = _run(res, 1, 0)
    races = [text for tool, text in found if tool == "racecheck"]
    assert races and races[0].startswith(f"line {lines['race']}:") and "LDS g" in races[0], found
    done, found = _run(res, 1, 1)                      # control: the barrier between the write and the read
    assert done.returncode == 0 and found == [], done.stderr
    assert "out 0.0 7.0" in done.stdout, done.stdout


def test_an_unwritten_word_of_a_namespace_scope_shared_array_is_caught(program):
    res, lines = program
    done, found = _run(res, 2, 5)                      # lane 5 never writes g[5]
    assert any(tool == "initcheck" and text.startswith(f"line {lines['unwritten']}:") for tool, text in found), found
    done, found = _run(res, 2, random.choice([i for i in range(128) if i != 5]))   # control: g[5] written
    assert done.returncode == 0 and found == [], done.stderr
    assert "out 6.0" in done.stdout, done.stdout
