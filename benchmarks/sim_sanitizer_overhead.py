"""The wave64 simulator's sanitizer (initcheck, racecheck, memcheck) costs: one exercise's grade (compile, run,
compare of its solution, the build cached) with the checks on and off, alternated in the same run.

    python benchmarks/sim_sanitizer_overhead.py [--exercise block-reduction] [--reps 3] [--out DIR]

"Off" is the runtime switch ROCMLAB_SIM_CHECKS=0: the program is the same (its loads and stores still call the
sanitizer, which returns at once), so the ratio is the cost of the checks themselves. Goal: at most 1.5x.
Measured on the CPU simulator only (never a GPU time)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path


def grade_once(exercise: str, checks: bool) -> float:
    from rocmlab import grader

    os.environ["ROCMLAB_SIM_CHECKS"] = "1" if checks else "0"
    t0 = time.monotonic()
    r = grader.check(exercise, grader.load(exercise).solution, only=("compile", "run", "compare"))
    took = time.monotonic() - t0
    if r.check("runs").status != "passed":
        raise SystemExit(f"{exercise}: the solution did not pass its run check: {r.check('runs').message}")
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exercise", default="block-reduction")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    grade_once(a.exercise, True)          # warm: builds cached
    on, off = [], []
    for _ in range(a.reps):               # alternated, so a busy machine weighs on both alike
        on.append(grade_once(a.exercise, True))
        off.append(grade_once(a.exercise, False))
    res = {"exercise": a.exercise, "backend": "cpu: wave64 simulator", "on_s": on, "off_s": off,
           "median_on_s": statistics.median(on), "median_off_s": statistics.median(off),
           "ratio": statistics.median(on) / statistics.median(off), "goal": 1.5, "cpus": os.cpu_count()}
    print(f"{a.exercise} grade (compile cached, run, compare) on the CPU simulator: checks on "
          f"{res['median_on_s']:.2f} s, off {res['median_off_s']:.2f} s: {res['ratio']:.2f}x (goal <= 1.5x)")
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "sim_sanitizer_overhead.json").write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
