"""Racecheck between the wavefronts of one block on global memory (the failing cases and their fixes are in
hardware_cases.py: += by two waves, a read and an overwrite with no barrier). Here the accesses it must NOT call a race:
two waves writing different bytes of one word, one wave writing and re-reading its own words, and a word written in
one barrier interval and read by another wave many barriers later; with a failing control in the same program shape.
And a write-after-read race where the second wavefront's read is a re-read of words the block already read (the
sanitizer's fast path for re-reads still notes it for this check): caught, with a barrier and own words as controls."""

from __future__ import annotations

import random

import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

PROGRAM = """#include <hip/hip_runtime.h>
#include <cstdio>
__global__ void k(const float* x, unsigned char* bytes, float* mine, float* late, float* y, int barriers) {
    const int t = threadIdx.x, wave = t / 64, lane = t % 64;
    if (lane == 0) bytes[wave] = static_cast<unsigned char>(wave + 1);   // 4 waves, 4 bytes of one word
    mine[t] = x[t];                                                       // each lane its own word ...
    mine[t] = mine[t] * 2.0f;                                             // ... re-read and rewritten by its wave
    if (wave == 0) late[lane] = x[lane] + 1.0f;
    for (int b = 0; b < barriers; ++b) __syncthreads();
    if (wave == 3) y[lane] = late[lane];                                  // LATE: another wave, after the barriers
}
int main() {
    const int N = 256;
    float hx[N], h[N];
    for (int i = 0; i < N; ++i) hx[i] = SEED + i;
    float *x, *mine, *late, *y;
    unsigned char* bytes;
    hipMalloc(&x, sizeof hx); hipMalloc(&mine, sizeof hx); hipMalloc(&late, 64 * 4); hipMalloc(&y, 64 * 4);
    hipMalloc(&bytes, 4);
    hipMemcpy(x, hx, sizeof hx, hipMemcpyHostToDevice);
    k<<<1, N>>>(x, bytes, mine, late, y, BARRIERS);
    unsigned char hb[4];
    hipMemcpy(hb, bytes, 4, hipMemcpyDeviceToHost);
    hipMemcpy(h, mine, sizeof h, hipMemcpyDeviceToHost);
    int bad = 0;
    for (int i = 0; i < N; ++i) bad += h[i] != 2.0f * hx[i];
    for (int i = 0; i < 4; ++i) bad += hb[i] != i + 1;
    hipMemcpy(h, y, 64 * 4, hipMemcpyDeviceToHost);
    for (int i = 0; i < 64; ++i) bad += h[i] != hx[i] + 1.0f;
    std::printf("bad %d\\n", bad);
    return 0;
}
"""


def _run(barriers: int):
    seed = random.randrange(1, 1000)
    src = f"// {random.getrandbits(64):x}\n" + PROGRAM.replace("SEED", str(seed)).replace("BARRIERS", str(barriers))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    done = build.run(res)
    late = next(i for i, ln in enumerate(src.splitlines(), 1) if "// LATE" in ln)
    return done, late


def test_disjoint_bytes_own_words_and_a_read_many_barriers_later_are_not_races():
    done, _ = _run(random.randrange(17, 40))        # more barriers than any small interval counter could tell apart
    assert done.returncode == 0, done.stderr
    assert "bad 0" in done.stdout
    assert simulate.findings(done.stderr) == [], done.stderr


def test_control_the_same_read_with_no_barrier_is_a_race_on_its_line():
    done, late = _run(0)
    found = simulate.findings(done.stderr)
    assert [f for f in found if f[0] == "racecheck" and f[1].startswith(f"line {late}:")], done.stderr
    assert "another wavefront of this block writes" in done.stderr
    assert len(found) == 1, done.stderr                # the bytes and the own words stay clean


REREAD = """#include <hip/hip_runtime.h>
#include <cstdio>
#include <cstdlib>
__global__ void k(float* x, float* y, int n, int mode) {
    const int t = threadIdx.x, lane = t % 64, wave = t / 64;
    const float v = x[mode == 2 ? t : lane];       // READ: wave 1 re-reads what wave 0 read (mode 2: its own words)
    volatile float* own = y + t;
    for (int r = 0; r < n; ++r) *own = v + r;      // many rounds: wave 1 runs (and reads) before wave 0 goes on
    if (mode == 1) __syncthreads();
    if (wave == 0) x[lane] = v * 2.0f;   // BUG: overwrites what wave 1 read, with no barrier between
}
int main(int argc, char** argv) {
    const int n = std::atoi(argv[1]), mode = std::atoi(argv[2]);
    float h[128];
    for (int i = 0; i < 128; ++i) h[i] = SEED + i;
    float *x, *y;
    hipMalloc(&x, sizeof h);
    hipMalloc(&y, sizeof h);
    hipMemcpy(x, h, sizeof h, hipMemcpyHostToDevice);
    k<<<1, 128>>>(x, y, n, mode);
    hipMemcpy(h, x, sizeof h, hipMemcpyDeviceToHost);
    std::printf("x %.1f %.1f\\n", h[1], h[65]);
    return 0;
}
"""


def test_a_write_after_another_wavefronts_re_read_is_a_race_with_controls():
    seed = random.randrange(1, 1000)
    src = f"// {random.getrandbits(64):x}\n" + REREAD.replace("SEED", str(seed))
    res = build.compile(src, toolchain=simulate.KIND)
    assert res.ok, res.summary()
    bug = next(i for i, ln in enumerate(src.splitlines(), 1) if "// BUG" in ln)
    rounds = str(random.randrange(300, 400))           # more than a wavefront's turn (256 rounds)
    done = build.run(res, [rounds, "0"])
    found = simulate.findings(done.stderr)
    assert found and found[0][0] == "racecheck" and found[0][1].startswith(f"line {bug}:"), done.stderr
    assert "another wavefront of this block reads" in found[0][1], found
    expect = f"x {2.0 * (seed + 1):.1f} {seed + 65:.1f}"
    assert expect in done.stdout, (expect, done.stdout)
    for mode in ("1", "2"):                            # controls: a barrier before the write; each wave its own words
        done = build.run(res, [rounds, mode])
        assert done.returncode == 0 and simulate.findings(done.stderr) == [], (mode, done.stderr)
        assert expect in done.stdout, (mode, done.stdout)
