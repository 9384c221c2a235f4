"""Run every exercise's solution, and the wrong-submission set, through the grader on this machine.

On an NVIDIA GPU (the H200) HIP solutions go through rocmlab's HIP->CUDA path with nvcc and run, so run,
compare and perf checks are real; on an AMD GPU they build with hipcc; on a CPU the run checks are skipped.
Also compiles every CUDA starter with nvcc when nvcc is here. The MFMA exercise (mfma-gemm) has no NVIDIA
path: on the H200 its run and compare checks say "not run: MFMA needs an AMD GPU" and earn nothing, and its
compile and ISA checks need the offline AMD toolchain (skipped, with the fix, where it is missing). Prints tables; exit
status 1 when a solution misses a mark it could earn here, a wrong submission is not caught (any check that fails it
catches it, and is named), or a CUDA starter does not build (with the compiler's first errors).

    PYTHONPATH=. python3 tests/gpu/run_solutions.py [--json FILE] [--only solutions|wrong|starters ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from rocmlab import grader  # noqa: E402
from rocmlab.grader.report import availability  # noqa: E402
from rocmlab.grader import libs  # noqa: E402
from rocmlab.grader.spec import COMMON_DIR  # noqa: E402
from rocmlab.grader.wrong import wrong_submissions  # noqa: E402
from rocmlab.hip import build  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402

PARTS = ("solutions", "wrong", "starters")


def prebuild(plat, jobs: int) -> None:
    """Compile every solution and wrong submission first, in parallel (the grading below hits the cache)."""
    from concurrent.futures import ThreadPoolExecutor

    from rocmlab.grader import checks

    def nvidia_cannot(ex):   # MFMA has no NVIDIA path: its compile check builds for the AMD target instead
        return plat.backend == "cuda" and any(c.options.get("needs") for c in ex.checks if c.type == "compile")

    work = [(ex, ex.solution) for ex in grader.exercises() if not nvidia_cannot(ex)]
    work += [(grader.load(w.exercise), w.source) for w in wrong_submissions().values()]

    def one(item):
        ex, src = item
        ctx = checks.Context(ex, src, plat, 0)
        res = checks.do_build(ctx)
        return ex.id, (res.ok if res is not None else ctx.build_skip)

    t0 = time.monotonic()
    with ThreadPoolExecutor(jobs) as pool:
        built = list(pool.map(one, work))
    print(f"prebuilt {len(built)} programs with {jobs} threads in {time.monotonic() - t0:.1f} s")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--jobs", type=int, default=8, help="parallel compiles")
    ap.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS), help="run only these parts")
    args = ap.parse_args()
    plat = current()
    print(f"{plat.summary()}  [{plat.label}]")
    if {"solutions", "wrong"} & set(args.only):
        prebuild(plat, args.jobs)
    out, bad = {"platform": plat.label, "solutions": {}, "wrong": {}, "starters": {}}, 0
    if "solutions" in args.only:
        bad += grade_solutions(out)
    if "wrong" in args.only:
        bad += grade_wrong(out, plat)
    if "starters" in args.only:
        bad += build_starters(out, plat, args.jobs)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{'all as expected' if not bad else f'{bad} unexpected result(s)'}  [{plat.label}]")
    return 1 if bad else 0


def grade_solutions(out: dict) -> int:
    """Every solution through the grader: full marks expected. Returns how many missed a mark."""
    bad = 0
    print("\n== solutions ==")
    print(f"{'exercise':<20} {'points':>9} {'possible':>8}  checks (perf figures)")
    for ex in grader.exercises():
        t0 = time.monotonic()
        r = grader.check(ex.id, ex.solution, time_limit_s=60)
        perf = [f"{c.details['value']:.3g} {c.details['unit']} ({c.details['fraction']:.0%} of peak)"
                for c in r.checks if c.type == "perf" and c.details.get("value")]
        marks = " ".join(f"{c.id}={c.status}" for c in r.checks)
        print(f"{ex.id:<20} {r.earned:>4g}/{r.available:<4g} {r.possible:>8g}  {marks} {' '.join(perf)} "
              f"[{time.monotonic() - t0:.1f} s]")
        for c in r.checks:
            if c.status != "passed":
                print(f"    {c.id}: {c.status}: {c.message}")
        print(f"    {availability(r).text()}")
        out["solutions"][ex.id] = r.to_json()
        bad += not r.full_marks
    return bad


def grade_wrong(out: dict, plat) -> int:
    """Every wrong submission through the grader: each must be caught. Returns how many were not."""
    bad = 0
    print("\n== wrong submissions ==")
    for name, w in wrong_submissions().items():
        r = grader.check(w.exercise, w.source, time_limit_s=5)
        c = r.check(w.fails)
        # caught by any check that failed it (the one it is meant to fail may be skipped on this machine)
        by = [x.id for x in r.checks if x.status == "failed"]
        caught = bool(by) and r.status != "error"
        must = w.where == "any" or plat.is_gpu
        how = (f"caught by {', '.join(by)}" + ("" if w.fails in by else f" (its own check {w.fails} was {c.status})")
               if caught else f"NOT caught: {w.fails}={c.status}: {c.message[:140]}")
        if r.status == "error":
            how = f"NOT graded (a fault of the machine): {r.error[:200]}"
        print(f"{name:<38} {w.exercise:<16} {r.earned:>4g}/{r.available:<4g} {how}")
        out["wrong"][name] = {**r.to_json(), "caught_by": by}
        bad += must and not caught
    return bad


def build_starters(out: dict, plat, jobs: int) -> int:
    """Every CUDA starter compiled with nvcc (in parallel). Returns how many failed; nothing without nvcc."""
    from concurrent.futures import ThreadPoolExecutor

    if not shutil.which("nvcc"):
        print("\n== CUDA starters: not built: nvcc is not on PATH ==")
        return 0
    print("\n== CUDA starters with nvcc ==")
    target = plat.device.target_id if plat.backend == "cuda" and plat.device else "sm_90"

    def one(ex):
        extra, missing = libs.flags(ex.libraries, nvidia=True)
        if missing:
            return ex, None, missing
        return ex, build.compile(ex.starter, lang="cuda", target=target, flags=("-I", str(COMMON_DIR), *extra)), ""

    bad = 0
    with ThreadPoolExecutor(jobs) as pool:
        for ex, res, missing in pool.map(one, grader.exercises()):
            if res is None:
                print(f"{ex.id:<20} skipped: {missing}")
                continue
            print(f"{ex.id:<20} {'ok' if res.ok else 'FAILED'} ({target})")
            if not res.ok:                   # say why: the compiler's first errors, or the machine's fault
                for line in ([res.machine_fault] if res.machine_fault else []) + \
                        [str(d) for d in (res.errors or res.diagnostics)[:3]] or [res.log.strip()[-300:]]:
                    print(f"    {line}")
            out["starters"][ex.id] = res.ok
            bad += not res.ok
    return bad


if __name__ == "__main__":
    sys.exit(main())
