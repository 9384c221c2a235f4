"""The CPU simulator's cross-lane operations against a reference computed here, in Python, on random inputs.

Every intrinsic runs on full wavefronts, on partial ones (a block that is not a multiple of 64 threads: the
lanes past its end do not exist, so they are inactive), and divergently (only some lanes call it; the others
have returned, or wait at a barrier): as on CDNA, inactive lanes contribute nothing, reading one gives 0
(ds_bpermute), and __ballot shows the exec mask. The reference follows HIP's own index arithmetic
(amd_warp_functions.h)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest

from rocmlab.hip import build, simulate

pytestmark = pytest.mark.skipif(bool(simulate.problem()), reason=simulate.problem() or "simulator available")

SOURCE = (Path(__file__).parents[1] / "data" / "sim" / "wave_ops.hip").read_text()
W = 64

OPS = {"shfl": 0, "shfl_up": 1, "shfl_down": 2, "shfl_xor": 3, "ballot": 4, "any": 5, "all": 6, "activemask": 7,
       "lane_id": 8, "popcll_ballot": 9, "shfl_down_sync": 10, "shfl_xor_sync_full": 11, "tile32_shfl_down": 12,
       "tile16_shfl": 13, "tile32_ballot": 14, "tile16_any": 15, "tile8_all": 16, "shfl_xor_double": 17,
       "ballot_sync": 18, "shfl_int64": 19, "tile32_ranks": 20, "warpsize": 21}


@pytest.fixture(scope="module")
def program():
    res = build.compile(SOURCE, toolchain=simulate.KIND, name="sim-wave-ops")
    assert res.ok, res.summary()
    return res


def run(program, op, val, arg, act, *, block, width=W, barrier=0):
    n = len(val)
    with tempfile.TemporaryDirectory() as d:
        inp, outp = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        head = np.array([n, OPS[op], width, barrier, block], np.int32)
        np.concatenate([head, val, arg, act]).astype(np.int32).tofile(inp)
        done = build.run(program, [inp, outp], timeout_s=60)
        assert done.returncode == 0, done.stderr
        assert "[cpu: wave64 simulator]" in done.stderr
        return np.fromfile(outp, np.int64)


def exec_masks(act, block):
    """Per thread: its wavefront's first global index and the exec mask (active lanes that exist)."""
    n = len(act)
    base, mask = [0] * n, [0] * n
    for b0 in range(0, n, block):
        for w0 in range(b0, b0 + block, W):
            end = min(w0 + W, b0 + block)
            m = 0
            for t in range(w0, end):
                if act[t]:
                    m |= 1 << (t - w0)
            base[w0:end] = [w0] * (end - w0)
            mask[w0:end] = [m] * (end - w0)
    return base, mask


def reference(op, val, arg, act, block, width=W):
    base, mask = exec_masks(act, block)
    val, arg, act = [int(x) for x in val], [int(x) for x in arg], [int(x) for x in act]
    out = np.full(len(val), -7777, np.int64)
    for t in range(len(val)):
        if act[t]:
            r = lane_value(op, t, val, arg, base[t], mask[t], width, block)
            out[t] = r if r < (1 << 63) else r - (1 << 64)
    return out


def lane_value(op, t, val, arg, base, ex, width, block):
    """What lane ``t`` gets from ``op``: its wavefront starts at ``base``, ``ex`` is the exec mask."""
    self_, a = t - base, arg[t]
    ballot = sum(1 << k for k in range(W) if (ex >> k) & 1 and arg[base + k] & 1)

    def read(lane):             # ds_bpermute: lane mod 64; an inactive (or missing) lane gives 0
        lane &= 63
        return val[base + lane] if (ex >> lane) & 1 else 0

    def shfl(src, w):
        return read(src + (self_ & ~(w - 1)))

    def down(d, w):
        return read(self_ if (self_ & (w - 1)) + d >= w else self_ + d)

    def up(d, w):
        i = self_ - d
        return read(self_ if i < (self_ & ~(w - 1)) else i)

    def xor(m, w):
        i = self_ ^ m
        return read(self_ if i >= ((self_ + w) & ~(w - 1)) else i)

    def tile(nt):                # (ballot, exec) of this lane's tile of nt lanes
        tb = self_ & ~(nt - 1)
        lanes = ((1 << nt) - 1) << tb
        return (ballot & lanes) >> tb, (ex & lanes) >> tb

    local = t % block
    return {
        "shfl": lambda: shfl(a, width), "shfl_up": lambda: up(a, width), "shfl_down": lambda: down(a, width),
        "shfl_xor": lambda: xor(a, width), "ballot": lambda: ballot, "any": lambda: int(ballot != 0),
        "all": lambda: int(ballot == ex), "activemask": lambda: ex, "lane_id": lambda: self_,
        "popcll_ballot": lambda: bin(ballot).count("1"), "shfl_down_sync": lambda: down(a, width),
        "shfl_xor_sync_full": lambda: xor(a, width), "tile32_shfl_down": lambda: down(a, 32),
        "tile16_shfl": lambda: shfl(a, 16), "tile32_ballot": lambda: tile(32)[0],
        "tile16_any": lambda: int(tile(16)[0] != 0), "tile8_all": lambda: int(tile(8)[0] == tile(8)[1]),
        "shfl_xor_double": lambda: xor(a, width), "ballot_sync": lambda: ballot, "shfl_int64": lambda: shfl(a, width),
        "tile32_ranks": lambda: local % 32 * 1000 + local // 32, "warpsize": lambda: 64,
    }[op]()


def inputs(rng, n, op, mode):
    val = rng.integers(-(1 << 20), 1 << 20, n)
    lim = {"shfl": (-8, 80), "shfl_up": (0, 70), "shfl_down": (0, 70), "shfl_xor": (0, 64), "tile16_shfl": (-4, 40),
           "tile32_shfl_down": (0, 40), "shfl_down_sync": (0, 70), "shfl_xor_sync_full": (0, 64),
           "shfl_xor_double": (0, 64), "shfl_int64": (-8, 80)}.get(op, (0, 1 << 20))
    arg = rng.integers(lim[0], lim[1], n)
    if op in ("shfl_xor", "shfl_xor_double", "shfl_xor_sync_full") and rng.random() < 0.5:
        arg = np.full(n, int(rng.choice([1, 2, 4, 8, 16, 32])))     # the butterfly every reduction uses
    act = np.ones(n, np.int64) if mode != "divergent" else (rng.random(n) < 0.6).astype(np.int64)
    return val, arg, act


CASES = [(op, mode) for op in OPS if op != "shfl_xor_sync_full" for mode in ("full", "partial", "divergent")] + [
    ("shfl_xor_sync_full", "full"), ("shfl", "divergent-barrier"), ("ballot", "divergent-barrier"),
    ("shfl_down", "width16"), ("shfl_up", "width8-partial")]


@pytest.mark.parametrize("op,mode", CASES, ids=[f"{o}-{m}" for o, m in CASES])
def test_wave_op_matches_the_reference(program, op, mode):
    rng = np.random.default_rng()
    block = {"partial": 100, "width8-partial": 72}.get(mode, 256 if rng.random() < 0.5 else 192)
    n = block * 3
    val, arg, act = inputs(rng, n, op, "divergent" if mode.startswith("divergent") else mode)
    width = {"width16": 16, "width8-partial": 8}.get(mode, W)
    got = run(program, op, val, arg, act, block=block, width=width, barrier=int(mode == "divergent-barrier"))
    want = reference(op, val, arg, act, block, width)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, f"{op} ({mode}): {bad.size} lanes differ, first {bad[:5]}: got {got[bad[:5]]}, want {want[bad[:5]]}"


def test_the_reference_can_fail(program):
    """A control: the reference of a wavefront of 32 differs from what the simulator does."""
    rng = np.random.default_rng()
    val, arg, act = inputs(rng, 256, "shfl_down", "full")
    arg[:] = 16
    got = run(program, "shfl_down", val, arg, act, block=256)
    assert (got == reference("shfl_down", val, arg, act, 256)).all()
    assert not (got == reference("shfl_down", val, arg, act, 256, width=32)).all()


def test_partial_and_divergent_cases_are_counted():
    partial = [c for c in CASES if "partial" in c[1]]
    divergent = [c for c in CASES if "divergent" in c[1]]
    assert len(CASES) >= 60 and len(partial) >= 20 and len(divergent) >= 20
