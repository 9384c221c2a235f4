"""Static __shared__ bounds with neighbours of the same shape: an index past a [16][16] tile that runs past its
same-shaped neighbour too still names the tile it indexes (the element `index` of which variable holds the address),
and a member access past a static __shared__ struct array (st[64].x) is caught, and so is exactly one past its end
through its address or a whole-element copy ((&st[64])->z, P s = st[64]), which the compiler's own bounds check lets
through (the simulator lays out an unused pad after each static __shared__ variable); in-bounds indexes and a read
of the next variable are clean.
One build each; the index is the program's argument (fresh random values each run)."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

HEAD = "#include <hip/hip_runtime.h>\n#include <cstdio>\n#include <cstdlib>\n"
TILES = HEAD + """__global__ void k(float* out, int row) {
    __shared__ float a[16][16];
    __shared__ float b[16][16];
    a[threadIdx.x / 16][threadIdx.x % 16] = 1.0f;
    b[threadIdx.x / 16][threadIdx.x % 16] = 2.0f;
    __syncthreads();
    if (threadIdx.x == 0) a[row][3] = 7.0f;   // BUG
    __syncthreads();
    out[threadIdx.x] = a[threadIdx.x / 16][threadIdx.x % 16] + b[threadIdx.x / 16][threadIdx.x % 16];
}
int main(int argc, char** argv) {
    float* o;
    hipMalloc(&o, 1024);
    k<<<1, 256>>>(o, std::atoi(argv[1]));
    float h[256];
    hipMemcpy(h, o, sizeof h, hipMemcpyDeviceToHost);
    std::printf("out %.1f\\n", h[0]);
    return 0;
}
"""
STRUCTS = HEAD + """struct P { float x, y, z; };
__global__ void k(float* out, int i) {
    __shared__ P st[64];
    __shared__ P other[64];
    st[threadIdx.x] = P{1.0f, 0.0f, 0.0f};
    other[threadIdx.x] = P{2.0f, 0.0f, 0.0f};
    __syncthreads();
    if (threadIdx.x == 0) st[i].x = 5.0f;   // BUG
    __syncthreads();
    out[threadIdx.x] = st[threadIdx.x].x + other[threadIdx.x].x;
}
int main(int argc, char** argv) {
    float* o;
    hipMalloc(&o, 256);
    k<<<1, 64>>>(o, std::atoi(argv[1]));
    float h[64];
    hipMemcpy(h, o, sizeof h, hipMemcpyDeviceToHost);
    std::printf("out %.1f\\n", h[1]);
    return 0;
}
"""

#: The host side of PAST_END and ONE_DECLARATION: k(out, i, mode) on one block of 64, from argv; prints out[1].
K_MAIN = """int main(int argc, char** argv) {
    float* o;
    hipMalloc(&o, 256);
    k<<<1, 64>>>(o, std::atoi(argv[1]), std::atoi(argv[2]));
    float h[64];
    hipMemcpy(h, o, sizeof h, hipMemcpyDeviceToHost);
    std::printf("out %.1f\\n", h[1]);
    return 0;
}
"""

PAST_END = HEAD + """struct P { float x, y, z; };
__global__ void k(float* out, int i, int mode) {
    __shared__ P st[64];
    __shared__ P other[64];
    st[threadIdx.x] = P{1.0f, 0.0f, 3.0f};
    other[threadIdx.x] = P{2.0f, 0.0f, 4.0f};
    __syncthreads();
    float v = 0.0f;
    if (mode == 0) v = (&st[i])->z;   // BUG
    if (mode == 1) { P s = st[i]; v = s.x + s.y + s.z; }   // BUG 1
    if (mode == 2) v = other[i].z;
    out[threadIdx.x] = v;
}
""" + K_MAIN

ONE_DECLARATION = HEAD + """__global__ void k(float* out, int i, int mode) {
    __shared__ float a[64], b[64];
    a[threadIdx.x] = 1.0f;
    b[threadIdx.x] = 2.0f;
    __syncthreads();
    const float* p = a;
    float v = 0.0f;
    if (mode == 0) v = p[i];   // BUG
    if (mode == 1) v = b[i];
    out[threadIdx.x] = v;
}
""" + K_MAIN


def _build(src: str):
    src = f"// {random.getrandbits(64):x}\n" + src
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    return res, next(i for i, ln in enumerate(src.splitlines(), 1) if "// BUG" in ln)


def _finding(res, index: int):
    done = build.run(res, [str(index)])
    return done, simulate.findings(done.stderr)


def test_a_row_index_past_a_tile_and_its_same_shaped_neighbour_names_the_tile():
    res, line = _build(TILES)
    for index in (random.randrange(33, 200), random.randrange(16, 33), -random.randrange(1, 200)):
        done, found = _finding(res, index)
        assert done.returncode == simulate.STOPPED_EXIT, (index, done.stderr)
        assert found and found[0][0] == "memcheck" and found[0][1].startswith(f"line {line}:"), (index, found)
        assert "__shared__ float a[16][16]" in found[0][1] and f"at index {index}" in found[0][1], (index, found)
    done, found = _finding(res, random.randrange(0, 16))          # control: in bounds
    assert done.returncode == 0 and found == [], done.stderr
    assert "out 8.0" in done.stdout or "out 3.0" in done.stdout


def test_a_member_past_a_static_shared_struct_array_is_caught():
    res, line = _build(STRUCTS)
    for index in (64, random.randrange(65, 300), -random.randrange(1, 100)):
        done, found = _finding(res, index)
        assert done.returncode == simulate.STOPPED_EXIT, (index, done.stderr)
        assert found and found[0][0] == "memcheck" and found[0][1].startswith(f"line {line}:"), (index, found)
        assert "__shared__ P st[64]" in found[0][1] and f"at index {index}" in found[0][1], (index, found)
    done, found = _finding(res, random.randrange(0, 64))          # control: in bounds
    assert done.returncode == 0 and found == [], done.stderr
    assert "out 3.0" in done.stdout


def test_one_past_the_end_of_a_static_shared_struct_array_through_its_address_or_a_copy_is_caught():
    res, line = _build(PAST_END)
    copy_line = line + 1
    for mode, at in ((0, line), (1, copy_line)):
        done = build.run(res, ["64", str(mode)])
        found = simulate.findings(done.stderr)
        assert done.returncode == simulate.STOPPED_EXIT, (mode, done.stderr)
        assert found and found[0][0] == "memcheck" and found[0][1].startswith(f"line {at}:"), (mode, found)
        assert "__shared__ P st[64]" in found[0][1] and "at index 64" in found[0][1], (mode, found)
        assert "past its end" in found[0][1], (mode, found)
    for mode, expect in ((0, "out 3.0"), (1, "out 4.0"), (2, "out 4.0")):   # controls: in bounds; the next variable
        done = build.run(res, [str(random.randrange(0, 64)), str(mode)])
        assert done.returncode == 0 and simulate.findings(done.stderr) == [], (mode, done.stderr)
        assert expect in done.stdout, (mode, done.stdout)


def test_one_past_the_first_of_two_arrays_declared_together_is_caught():
    """`__shared__ float a[64], b[64];` is laid out as two declarations, each with its pad: one past `a` through a
    pointer is a finding naming `a`, not a read of `b[0]`; in bounds and `b` itself are clean."""
    res, line = _build(ONE_DECLARATION)
    done = build.run(res, ["64", "0"])
    found = simulate.findings(done.stderr)
    assert done.returncode == simulate.STOPPED_EXIT, done.stderr
    assert found and found[0][0] == "memcheck" and found[0][1].startswith(f"line {line}:"), found
    assert "__shared__ float a[64]" in found[0][1] and "past its end" in found[0][1], found
    for mode, expect in ((0, "out 1.0"), (1, "out 2.0")):     # controls: in bounds through p; the array b
        done = build.run(res, [str(random.randrange(0, 64)), str(mode)])
        assert done.returncode == 0 and simulate.findings(done.stderr) == [], (mode, done.stderr)
        assert expect in done.stdout, (mode, done.stdout)
