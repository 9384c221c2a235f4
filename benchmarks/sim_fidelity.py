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

The fidelity table, from two machines' table.txt (a row per exercise, wrong submission and wave64 trap: the verdict
on each, and the reason where they differ), as Markdown:

    python3 benchmarks/sim_fidelity.py --compare results/sim-cpu/table.txt results/sim-h200/table.txt \
        --gpu-name "NVIDIA H200" > sim_fidelity.md
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
from rocmlab.hip.sim.sanitizer_cases import CASES as SANITIZER_CASES  # noqa: E402
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


def run_sanitizer_cases(rows: list, out: dict, simulated: bool) -> None:
    """Each sanitizer case (rocmlab.hip.sim.sanitizer_cases): what the simulator's checks report, and the program's
    own verdict (right or wrong against its host reference), which is all a GPU shows."""
    print("\n== sanitizer cases (bugs a GPU hides) ==")
    for case in SANITIZER_CASES:
        res = build.compile(case.source, toolchain=simulate.KIND if simulated else None)
        if not res.ok:
            found, result = "-", f"build failed: {res.summary()[:120]}"
        else:
            try:
                done = build.run(res, timeout_s=30)
                tools = sorted({t for t, _ in simulate.findings(done.stderr)})
                stop = simulate.stopped_message(done.stderr)
                found = ",".join(tools) or ("stopped: " + stop[:60] if stop else "none")
                m = re.search(r"result: (RIGHT|WRONG|launch failed)", done.stdout)
                result = m.group(1) if m else ("stopped at the access" if stop else f"no result ({done.explain()})")
            except build.CannotRun as exc:
                found, result = "-", f"not run: {str(exc)[:120]}"
        line = f"sanitizer {case.name:<40} | reported: {found} | result: {result}"
        print(line)
        rows.append(line)
        out["sanitizer"][case.name] = {"reported": found, "result": result}


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


# --- the fidelity table: two machines' table.txt side by side --------------------------------------------------

#: Why a verdict differs between the simulator and a GPU, for the cases where it does by design. A row whose
#: verdicts differ for another reason says "not examined" rather than a guess.
WHY = {
    "hard-coded warp of 32": "warps of 32 on NVIDIA: the kernel's 32-lane assumption holds there; on the simulator "
                             "and MI300X (wavefronts of 64) the sum is wrong",
    "mechanical hipify (32-bit shuffle mask)": "HIP 7.2 static_asserts a 64-bit mask, so the program does not build "
                                               "for AMD (simulator, MI300X); the HIP->CUDA path accepts the 32-bit mask",
    "ballot-32-bit": "a 32-bit ballot counts every lane of a warp of 32; with wavefronts of 64 (simulator, MI300X) "
                     "lanes 32-63 are cut off",
    "leader-broadcast-32": "lane 32 is a new warp's leader on NVIDIA; in a wavefront of 64 (simulator, MI300X) "
                           "lanes 32-63 read lane 0",
    "missing __syncthreads (race)": "the s_barrier check reads the gfx942 ISA (the AMD compiler: skipped on NVIDIA); "
                                    "the output is wrong on both",
    "mfma-gemm": "MFMA builtins are AMD's: the HIP->CUDA path cannot compile them; the simulator runs "
                 "__builtin_amdgcn_mfma_f32_16x16x16f16 with CDNA3's lane layout",
}
POINTS_WHY = ("points differ by the checks each machine can run: perf checks need a GPU (never the simulator); "
              "gfx942 ISA checks need the AMD compiler (skipped on NVIDIA); MI300X-only timings skip on NVIDIA")


def parse_table(text: str) -> dict:
    """A table.txt of this script as {"label", "solutions": {ex: (earned, possible, run checks)}, "wrong": {name:
    verdict}, "traps": {name: PASSED|FAILED}, "before": {ex: (before, after)}}."""
    lines = text.splitlines()
    out = {"label": lines[0].strip() if lines else "", "solutions": {}, "wrong": {}, "traps": {}, "sanitizer": {},
           "before": {}}
    wrong = sorted(wrong_submissions(), key=len, reverse=True)
    traps = [t.name for t in TRAPS]
    for ln in lines[1:]:
        m = re.match(r"^sanitizer (.+?)\s+\| reported: (.*?) \| result: (.*)$", ln)
        if m:
            out["sanitizer"][m.group(1)] = (m.group(2), m.group(3))
            continue
        name = next((w for w in wrong if ln.startswith(w + " ")), None)
        if name:
            m = re.match(r"^\s*\S+\s+(\S+=(?:not run|\S+))\s+correct=(not run|\S+)", ln[len(name):])
            out["wrong"][name] = f"{m.group(1)} correct={m.group(2)}" if m else ln[len(name):].strip()[:60]
            continue
        name = next((t for t in traps if ln.startswith(t + " ")), None)
        if name:
            m = re.search(r"expected \S+: (PASSED|FAILED)", ln)
            out["traps"][name] = m.group(1) if m else ln[len(name):].strip()[:60]
            continue
        m = re.match(r"^(\S+)\s+([\d.]+)/([\d.]+)\s+(.*?)\s+grade", ln)
        if m:
            out["solutions"][m.group(1)] = (float(m.group(2)), float(m.group(3)), m.group(4).strip())
            continue
        m = re.match(r"^(\S+)\s+([\d.]+) ->\s+([\d.]+) of ([\d.]+)$", ln)
        if m:
            out["before"][m.group(1)] = (float(m.group(2)), float(m.group(3)))
    return out


def compare(cpu_text: str, gpu_text: str, gpu_name: str) -> str:
    """The fidelity table (Markdown): each row's verdict on the simulator and on the GPU, and why they differ."""
    cpu, gpu = parse_table(cpu_text), parse_table(gpu_text)
    rows = [f"| case | [cpu: wave64 simulator] | {gpu_name} {gpu['label']} | same verdict? | why they differ |",
            "|---|---|---|---|---|"]

    def verdict(checks: str) -> str:
        return "fails" if re.search(r"=(failed|not run)", checks) else "passes"

    for ex in sorted(set(cpu["solutions"]) | set(gpu["solutions"]), key=lambda e: list(cpu["solutions"]).index(e)
                     if e in cpu["solutions"] else 999):
        c, g = cpu["solutions"].get(ex), gpu["solutions"].get(ex)
        cs = f"{c[0]:g}/{c[1]:g}, {c[2]}" if c else "not run"
        gs = f"{g[0]:g}/{g[1]:g}, {g[2]}" if g else "not in this run"
        same = bool(c and g and verdict(c[2]) == verdict(g[2]) and "skipped" not in c[2] + g[2])
        why = "" if same and c[0] == g[0] else (POINTS_WHY if same else WHY.get(ex, "not examined"))
        rows.append(f"| solution `{ex}` | {cs} | {gs} | {'yes' if same else 'no'} | {why} |")
    for name in [w for w in wrong_submissions() if w in cpu["wrong"] or w in gpu["wrong"]]:
        c, g = cpu["wrong"].get(name, "not run"), gpu["wrong"].get(name, "not in this run")
        same = c == g
        rows.append(f"| wrong: {name} | {c} | {g} | {'yes' if same else 'no'} | "
                    f"{'' if same else WHY.get(name, 'not examined')} |")
    for t in TRAPS:
        c, g = cpu["traps"].get(t.name, "not run"), gpu["traps"].get(t.name, "not in this run")
        rows.append(f"| wave64 trap: {t.name} (MI300X: {t.mi300x.split(':')[0]}) | {c} | {g} | "
                    f"{'yes' if c == g else 'no'} | {'' if c == g else WHY.get(t.name, 'not examined')} |")
    for case in SANITIZER_CASES:
        c, g = cpu["sanitizer"].get(case.name), gpu["sanitizer"].get(case.name)
        cs = f"{c[0]} reported; program: {c[1]}" if c else "not run"
        gs = f"{g[0]} reported; program: {g[1]}" if g else "not in this run"
        rows.append(f"| sanitizer: {case.name} | {cs} | {gs} | no | the simulator's {case.tool} reports it; on a "
                    f"GPU: {case.gpu} |")
    return "\n".join(rows) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--compare", nargs=2, metavar=("CPU_TABLE", "GPU_TABLE"),
                    help="print the fidelity table (Markdown) from two table.txt files, then stop")
    ap.add_argument("--gpu-name", default="GPU", help="the GPU column's card, with --compare")
    ap.add_argument("--out", help="folder for results.json and table.txt")
    ap.add_argument("--skip-before", action="store_true", help="do not grade again without the simulator")
    ap.add_argument("--switch-only", action="store_true", help="only time the fiber switch (CPU)")
    args = ap.parse_args()
    if args.compare:
        try:
            texts = [Path(p).read_text() for p in args.compare]
        except OSError as exc:
            print(f"cannot read {exc.filename}: give two table.txt files this script wrote (--out DIR)", file=sys.stderr)
            return 2
        print(compare(*texts, args.gpu_name), end="")
        return 0
    if not args.out:
        print("give --out DIR (where results.json and table.txt go), or --compare CPU_TABLE GPU_TABLE", file=sys.stderr)
        return 2
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
           "solutions": {}, "wrong": {}, "traps": {}, "sanitizer": {}, "before": {}, "switch": {}}
    if not args.switch_only:
        grade_all(plat, rows, out, simulated)
        run_traps(rows, out, simulated)
        run_sanitizer_cases(rows, out, simulated)
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
