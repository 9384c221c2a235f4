"""A learner's edit-compile-feedback loop: how long one HIP cell takes to build, against plain hipcc.

    python benchmarks/compile_latency.py [--repeats 5] [--target gfx942] [--out DIR]

In one run, in a cache of its own, interleaved (A B C A B C ...), each with a fresh nonce in the source so
that every build is cold:
  - plain hipcc, full build (compile and link), the same source, compiler and sandbox: the baseline;
  - rocmlab's default path (``build.compile(src)``): where the program cannot run here (no GPU for the
    target), the device code compiled and the host code checked at the same time, no link, each half
    reading the HIP runtime headers from its precompiled header (rocmlab.hip.runtime_pch);
  - the same without the precompiled headers (the default path before them);
  - before the fast path: what every cell built before it, hipcc's one-step full build through rocmlab
    (``link=True`` without the precompiled headers);
  - rocmlab with ``link=True`` now (the full build from its two halves, each with its precompiled header:
    what the grader's run checks need on a CPU);
  - a warm cache hit of the same cell.
Before the rounds, the first two cells of a fresh cache are timed once each: the first is built without
precompiled headers (a flag set's first use), the second builds them.
Prints medians and each path's ratio to plain hipcc (median of the per-round ratios: the machine's
speed drifts), with the backend and toolchain that produced them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rocmlab.hip import build  # noqa: E402
from rocmlab.hip import compile as driver  # noqa: E402
from rocmlab.hip import runtime_pch  # noqa: E402
from rocmlab.hip.toolchain import offline_root  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402
from hip_cache import CELL  # noqa: E402  (the same vector-add cell as benchmarks/hip_cache.py)


def cell() -> str:
    return CELL.format(nonce=uuid.uuid4().hex)


def plain_hipcc(tc, src: str, target: str) -> float:
    with tempfile.TemporaryDirectory(prefix="plain-") as d:
        Path(d, "t.hip").write_text(src)
        cmd = [tc.compiler, "-x", "hip", f"--offload-arch={target}", "-O3", "t.hip", "-o", "t"]
        t0 = time.perf_counter()
        done = driver.run(tc, cmd, cwd=d)
        took = time.perf_counter() - t0
        if not done.ok:
            raise SystemExit(f"plain hipcc failed: {done.stderr[-500:]}")
        return took


def timed(src: str, target: str, **kw) -> float:
    t0 = time.perf_counter()
    r = build.compile(src, target=target, **kw)
    took = time.perf_counter() - t0
    if not r.ok:
        raise SystemExit(f"build failed: {r.summary()}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--target", default="gfx942")
    ap.add_argument("--out", default=None, help="folder for compile_latency_<backend>.txt (a copy of the table)")
    a = ap.parse_args()
    if a.repeats < 1:
        ap.error("--repeats must be at least 1")
    plat = current()
    tc, fix = driver.choose("hip", a.target)
    if tc is None:
        print(f"cannot measure: {fix}")
        return 2
    default_kind = "check" if not build._can_run(tc, a.target, "exe", plat)[0] and tc.kind != "nvcc" else "exe"
    os.environ.setdefault("ROCMLAB_ROCM_ROOT", str(offline_root()))      # the compiler stays where it is
    os.environ["ROCMLAB_HOME"] = tempfile.mkdtemp(prefix="compile-latency-")   # a cache of its own, empty
    first, second = timed(cell(), a.target), timed(cell(), a.target)
    applies = runtime_pch.applies
    before = "before the fast path: rocmlab's one-step full build"
    rows = {"plain hipcc (full)": [], before: [], "rocmlab default": [], "rocmlab default without the PCH": [],
            "rocmlab link=True": [], "rocmlab warm": []}
    for _ in range(a.repeats):
        src = cell()
        rows["plain hipcc (full)"].append(plain_hipcc(tc, src, a.target))
        src = cell()
        rows["rocmlab default"].append(timed(src, a.target))
        rows["rocmlab warm"].append(timed(src, a.target))
        runtime_pch.applies = lambda *_: False
        try:
            rows["rocmlab default without the PCH"].append(timed(cell(), a.target))
            rows[before].append(timed(cell(), a.target, link=True))
        finally:
            runtime_pch.applies = applies
        src = cell()
        rows["rocmlab link=True"].append(timed(src, a.target, link=True))
    base = rows["plain hipcc (full)"]
    lines = [f"compile latency of one HIP cell [{plat.backend}: {plat.device_name}], {tc.label}, target {a.target}, "
             f"{a.repeats} rounds; rocmlab's default path here builds '{default_kind}'",
             "", "| path | median s | min s | max s | ratio to plain hipcc (median of rounds) |", "|---|---|---|---|---|"]
    for name, xs in rows.items():
        ratio = statistics.median(x / b for x, b in zip(xs, base, strict=True))
        lines.append(f"| {name} | {statistics.median(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} | {ratio:.3f} |")
    med = statistics.median(base)
    lines.append(f"\nan empty cache: the first cell {first:.3f} s ({first / med:.3f} of plain hipcc's median), "
                 f"the second, which builds the two precompiled headers, {second:.3f} s ({second / med:.3f})")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / f"compile_latency_{plat.backend}.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
