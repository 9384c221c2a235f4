"""Fidelity and speed of the CPU simulator ([cpu: wave64 simulator]) against a GPU, in one run per machine.

Runs every exercise solution, every wrong submission (rocmlab.grader.wrong) and the wave64 traps
(rocmlab.hip.sim.traps) through the grader / build.run of THIS machine, and prints one table row each:

- on a CPU-only machine the run and compare checks come from the simulator (wavefronts of 64); the script
  also grades once with the simulator turned off (the points a learner got before it existed), times the
  fiber switch (hand-written x86-64 switch against ucontext's swapcontext) and the grading time per exercise;
- on an NVIDIA GPU (the H200) HIP goes through the HIP->CUDA path and nvcc: warps of 32, real GPU runs;
- on an AMD GPU with hipcc: MI300X itself, the column the simulator must match.

Fill the fidelity table (exercise -> H200 -> simulator -> MI300X) from the `--out` folders of two machines:

    PYTHONPATH=. python3 benchmarks/sim_fidelity.py --out results/sim-cpu      # here, no GPU
    PYTHONPATH=. python3 benchmarks/sim_fidelity.py --out results/sim-h200     # on the H200

Writes DIR/results.json (every report) and DIR/table.txt (what is printed). Correctness only: no perf check
points come from the simulator, and the times printed are wall times of whole runs, not kernel times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("ROCMLAB_QUICK", "1")

from rocmlab import grader  # noqa: E402
from rocmlab.grader import checks  # noqa: E402
from rocmlab.grader.wrong import wrong_submissions  # noqa: E402
from rocmlab.hip import build, simulate  # noqa: E402
from rocmlab.hip import compile as driver  # noqa: E402
from rocmlab.hip.sim.traps import TRAPS  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402
from rocmlab.paths import cache_dir  # noqa: E402

SWITCH_BENCH = r"""
#include <hip/hip_runtime.h>
#include <chrono>
#include <cstdio>
__global__ void empty(float* o) { if (threadIdx.x == 9999) o[0] = 1; }
__global__ void meet(float* o) {      // 6 shuffles and a barrier: 7 meeting points per thread
    float v = threadIdx.x;
    for (int k = 32; k > 0; k /= 2) v += __shfl_down(v, k);
    __shared__ float s[16];
    if (threadIdx.x % 64 == 0) s[threadIdx.x / 64] = v;
    __syncthreads();
    if (threadIdx.x == 0) o[blockIdx.x] = s[0];
}
int main() {
    float* o; hipMalloc(&o, 4 * 1024);
    const int blocks = 1024, threads = 256;
    double best_e = 1e30, best_m = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        empty<<<blocks, threads>>>(o);
        auto t1 = std::chrono::steady_clock::now();
        meet<<<blocks, threads>>>(o);
        auto t2 = std::chrono::steady_clock::now();
        best_e = std::min(best_e, std::chrono::duration<double, std::nano>(t1 - t0).count() / (blocks * threads));
        best_m = std::min(best_m, std::chrono::duration<double, std::nano>(t2 - t1).count() / (blocks * threads));
    }
    printf("{\"empty_ns_per_thread\": %.1f, \"meet_ns_per_thread\": %.1f}\n", best_e, best_m);
}
"""


def run_checks(r) -> str:
    marks = []
    for c in r.checks:
        if c.type in ("compile", "run", "compare"):
            marks.append(f"{c.id}={c.status}")
    return " ".join(marks)


def grade_all(plat, rows: list, out: dict, simulated: bool) -> None:
    print(f"\n== solutions ({'simulator' if simulated else plat.label}) ==")
    for ex in grader.exercises():
        t0 = time.monotonic()
        r = grader.check(ex.id, ex.solution, time_limit_s=60)
        took = time.monotonic() - t0
        run = r.check("runs")
        run_s = re.search(r"ran cleanly in ([\d.]+) s", run.message)
        line = (f"{ex.id:<20} {r.earned:>4g}/{r.possible:<4g} {run_checks(r):<55} grade {took:5.1f} s"
                + (f", program {run_s.group(1)} s" if run_s else ""))
        print(line)
        rows.append(line)
        out["solutions"][ex.id] = {"report": r.to_json(), "grade_s": took,
                                   "program_s": float(run_s.group(1)) if run_s else None}
    print("\n== wrong submissions ==")
    for name, w in wrong_submissions().items():
        r = grader.check(w.exercise, w.source, time_limit_s=20)
        c = r.check(w.fails)
        compare = r.check("correct") if any(x.id == "correct" for x in r.checks) else None
        line = (f"{name:<40} {w.exercise:<16} {w.fails}={c.status:<8} "
                f"correct={compare.status if compare else '-':<8} {(compare.message if compare else c.message)[:110]}")
        print(line)
        rows.append(line)
        out["wrong"][name] = r.to_json()


def run_traps(rows: list, out: dict, simulated: bool) -> None:
    print("\n== wave64 traps (self-checking programs) ==")
    for t in TRAPS:
        res = build.compile(t.source, toolchain=simulate.KIND if simulated else None)
        if not res.ok:
            line = f"{t.name:<22} build failed: {res.summary()[:160]}"
        else:
            try:
                done = build.run(res, timeout_s=30)
                line = f"{t.name:<22} {done.stdout.strip()}  (MI300X: {t.mi300x[:60]})"
            except build.CannotRun as exc:
                line = f"{t.name:<22} not run: {str(exc)[:160]}"
        print(line)
        rows.append(line)
        out["traps"][t.name] = line


def before_simulator(rows: list, out: dict) -> None:
    """The points a learner earned on a CPU before the simulator: the same grading with its step turned off."""
    print("\n== points on a CPU: without the simulator -> with it ==")
    real = checks._simulate
    checks._simulate = lambda ctx, spec: None
    try:
        for ex in grader.exercises():
            r = grader.check(ex.id, ex.solution)
            after = out["solutions"][ex.id]["report"]
            earned_after = sum(c["points"] for c in after["checks"])
            line = f"{ex.id:<20} {r.earned:>4g} -> {earned_after:>4g} of {r.possible:g}"
            print(line)
            rows.append(line)
            out["before"][ex.id] = {"before": r.earned, "after": earned_after, "possible": r.possible}
    finally:
        checks._simulate = real


def switch_cost(rows: list, out: dict, work: Path) -> None:
    """ns per GPU thread for an empty kernel and for one with 7 meeting points: the asm switch vs ucontext."""
    tc = driver.find_toolchain(simulate.KIND)
    src = work / "switch.cpp"
    src.write_text(simulate.rewrite(SWITCH_BENCH))
    obj = work / "switch.o"
    r = driver.compile_file(tc, src, obj, flags=["-O2"], cwd=work)
    if not r.ok:
        raise RuntimeError(r.log)
    print("\n== fiber switch: hand-written x86-64 switch vs ucontext (swapcontext), 1 CPU thread ==")
    for name, defines in (("asm switch", []), ("ucontext", ["-DHIPSIM_UCONTEXT"])):
        rt = work / f"runtime-{len(defines)}.o"
        rr = driver.compile_file(tc, simulate.RUNTIME_SOURCE, rt, flags=["-O2", *defines], cwd=simulate.SIM_DIR)
        exe = work / f"switch-{len(defines)}"
        lk = driver.link(tc, [obj, rt], exe, flags=["-pthread"], cwd=work)
        if not (rr.ok and lk.ok):
            raise RuntimeError(rr.log + lk.log)
        done = driver.run_program(tc.kind, tc.root, [str(exe)], scratch=str(work), time_limit=120,
                                  memory_bytes=None, output_bytes=1 << 16, env={"HIPSIM_WORKERS": "1"})
        figures = json.loads(done.stdout.strip().splitlines()[-1])
        line = (f"{name:<12} empty kernel {figures['empty_ns_per_thread']:7.1f} ns/thread, "
                f"7 meeting points {figures['meet_ns_per_thread']:7.1f} ns/thread")
        print(line)
        rows.append(line)
        out["switch"][name] = figures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder for results.json and table.txt")
    ap.add_argument("--skip-before", action="store_true", help="do not grade again without the simulator")
    ap.add_argument("--switch-only", action="store_true", help="only time the fiber switch (CPU)")
    args = ap.parse_args()
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    plat = current()
    simulated = plat.backend == "cpu"
    if simulated and simulate.problem():
        print(f"cannot simulate here: {simulate.problem()}")
        return 2
    label = f"[{simulate.LABEL}]" if simulated else f"[{plat.label}]"
    print(f"{plat.summary()}  {label}")
    rows: list[str] = [label]
    out = {"platform": plat.label, "backend": "cpu: wave64 simulator" if simulated else plat.backend,
           "solutions": {}, "wrong": {}, "traps": {}, "before": {}, "switch": {}}
    if not args.switch_only:
        grade_all(plat, rows, out, simulated)
        run_traps(rows, out, simulated)
    if simulated:
        if not (args.skip_before or args.switch_only):
            before_simulator(rows, out)
        with tempfile.TemporaryDirectory(prefix="sim-switch-", dir=cache_dir()) as d:   # the sandbox has its own /tmp
            os.chmod(d, 0o755)    # the compiler runs as another user
            switch_cost(rows, out, Path(d))
    (outdir / "results.json").write_text(json.dumps(out, indent=1, default=str))
    (outdir / "table.txt").write_text("\n".join(rows) + "\n")
    print(f"\nwrote {outdir / 'results.json'} and {outdir / 'table.txt'}  {label}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
