"""What one grade costs, by the checks it runs: the vector-add solution graded N times (each source new, so each
really compiles) with only the static and compile checks, then with all checks; wall time and the whole machine's
busy CPU (from /proc/stat: sandboxed compilers are not this process's children to count), medians, and the ratio
of all checks to static+compile measured in the same run. Run it on a quiet machine.

    python benchmarks/grade_cost.py [N]        # N = 8 by default

To compare two versions of rocmlab on one machine, run it from each checkout in turn (PYTHONPATH=CHECKOUT).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

from grade_workers import machine_cpu, offline_toolchain


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=8, help="grades per row (default 8)")
    n = ap.parse_args().n
    if n < 1:
        ap.error(f"N={n}: give at least 1")
    tc = offline_toolchain()
    if tc is None:
        print("no offline HIP toolchain: run ./go setup")
        return 1
    os.environ["ROCMLAB_HOME"] = tempfile.mkdtemp(prefix="grade-cost-")
    from rocmlab import grader
    from rocmlab.grader.spec import load
    from rocmlab.machine.detect import current

    plat = current()
    solution = load("vector-add").solution
    for i in range(2):   # before timing: the simulator's runtime, and the precompiled headers (built on a second use)
        grader.check("vector-add", f"// warm-up {i}\n" + solution)
    hz = os.sysconf("SC_CLK_TCK")
    rows = {}
    for name, only in (("static+compile", ["static", "compile"]), ("all checks", None)):
        wall, cpu = [], []
        for i in range(n):
            t0, j0 = time.monotonic(), machine_cpu()[0]
            r = grader.check("vector-add", f"// learner {i} {time.time_ns()}\n" + solution, only=only)
            wall.append(time.monotonic() - t0)
            cpu.append((machine_cpu()[0] - j0) / hz)
        rows[name] = (statistics.median(wall), statistics.median(cpu), f"{r.earned:g}/{sum(c.max_points for c in r.checks):g}")
    print(f"one vector-add grade, {n} each, median  [{plat.backend}: {plat.device_name}; {os.cpu_count()} cores; "
          f"{tc.label}]")
    for name, (w, c, pts) in rows.items():
        print(f"  {name:15s} wall {w:.2f} s, machine CPU {c:.2f} core-s, points {pts}")
    (w0, c0, _), (w1, c1, _) = rows["static+compile"], rows["all checks"]
    print(f"  all checks / static+compile: wall {w1 / w0:.2f}x, CPU {c1 / c0:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
