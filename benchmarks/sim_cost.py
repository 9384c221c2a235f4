"""What the wave64 simulator's instrumentation costs, per exercise: each reference solution's program, run on the
exercise's own graded inputs, three ways in the same run (alternated, median of --reps):

- on:   the graded build, checks on (initcheck, racecheck, memcheck; lanes in lockstep at every store);
- off:  the same program with the checks switched off (HIPSIM_CHECKS=0: its accesses still call the runtime,
        which keeps the lanes in lockstep and returns);
- bare: the same source built without the runtime's calls (no checks, no lockstep: lanes run ahead; its atomics
        still make their one call, which HIPSIM_LOCKSTEP=0 keeps from switching lanes).

    python benchmarks/sim_cost.py [--reps 3] [--exercise NAME ...] [--out FILE]

Goals (issue 51): on <= 1.5x off, off <= 1.3x bare. Program wall time on the CPU simulator (never a GPU time)."""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rocmlab.grader import libs  # noqa: E402
from rocmlab.grader import rlx as gio  # noqa: E402
from rocmlab.grader.static import include_dir  # noqa: E402
from rocmlab.grader.spec import load  # noqa: E402
from rocmlab.hip import build, simulate  # noqa: E402


def _builds(ex):
    extra, _ = libs.flags(ex.libraries, False)
    flags = ["-I", include_dir(), *extra]
    graded = build.compile(ex.solution, toolchain=simulate.KIND, flags=flags, name=f"{ex.id}-cost")
    bare = build.compile(ex.solution, toolchain=simulate.KIND, flags=[*flags, simulate.BARE_FLAG], name=f"{ex.id}-bare")
    for b in (graded, bare):
        if not b.ok:
            raise SystemExit(f"{ex.id}: {b.summary()}")
    return graded, bare


def _run(res, inp: str, out_dir: str, env: dict) -> float:
    out = os.path.join(out_dir, f"out-{time.monotonic_ns()}.bin")
    t0 = time.monotonic()
    done = build.run(res, [inp, out], timeout_s=120, env=env)
    took = time.monotonic() - t0
    if done.returncode != 0:
        raise SystemExit(f"{res.name}: exited {done.returncode}: {done.stderr[-600:]}")
    return took


def measure(name: str, reps: int) -> dict:
    ex = load(name)
    graded, bare = _builds(ex)
    ref = ex.reference_module()
    inputs = ref.make_inputs(np.random.default_rng(1), dict(ex.sizes["run"]))
    with tempfile.TemporaryDirectory() as d:
        inp = os.path.join(d, "input.bin")
        gio.write_arrays(inp, inputs.values())
        ways = {"on": (graded, {"HIPSIM_CHECKS": "1"}), "off": (graded, {"HIPSIM_CHECKS": "0"}),
                "bare": (bare, {"HIPSIM_CHECKS": "0", "HIPSIM_LOCKSTEP": "0"})}   # (its atomics' one call: no switch)
        times = {k: [] for k in ways}
        _run(graded, inp, d, ways["on"][1])                      # warm (page cache, symbolizer)
        for _ in range(reps):
            for k, (res, env) in ways.items():
                times[k].append(_run(res, inp, d, env))
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"exercise": name, **med, "on/off": med["on"] / med["off"], "off/bare": med["off"] / med["bare"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--exercise", nargs="*", default=[])
    ap.add_argument("--out", default="", help="also write the table to this file")
    a = ap.parse_args()
    root = Path(__file__).resolve().parents[1] / "rocmlab" / "exercises"
    names = a.exercise or sorted(p.name for p in root.iterdir() if (p / "spec.yaml").exists())
    lines = []

    def say(text: str) -> None:
        print(text, flush=True)
        lines.append(text)

    say(f"# python benchmarks/sim_cost.py --reps {a.reps}" + (f" --exercise {' '.join(a.exercise)}" if a.exercise else ""))
    say(f"{'exercise':22} {'on s':>7} {'off s':>7} {'bare s':>7} {'on/off':>7} {'off/bare':>8}   (goals 1.5x, 1.3x)")
    met = [0, 0, 0]
    for n in names:
        try:
            r = measure(n, a.reps)
        except SystemExit as exc:
            say(f"{n:22} not measured: {exc}")
            continue
        met[0] += 1
        met[1] += r["on/off"] <= 1.5
        met[2] += r["off/bare"] <= 1.3
        say(f"{n:22} {r['on']:7.2f} {r['off']:7.2f} {r['bare']:7.2f} {r['on/off']:7.2f} {r['off/bare']:8.2f}")
    say(f"goals met: on/off <= 1.5x on {met[1]} of {met[0]} exercises, off/bare <= 1.3x on {met[2]} of {met[0]}")
    say(f"[cpu: wave64 simulator] {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end; program "
        "wall time incl. the sandbox's start (same for all three)")
    if a.out:
        Path(a.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
