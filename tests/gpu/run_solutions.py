"""Run every exercise's solution, and the wrong-submission set, through the grader on this machine.

On an NVIDIA GPU (the H200) HIP solutions go through rocmlab's HIP->CUDA path with nvcc and run, so run,
compare and perf checks are real; on an AMD GPU they build with hipcc; on a CPU the run checks are skipped.
Also compiles every CUDA starter with nvcc when nvcc is here. The MFMA exercise (mfma-gemm) has no NVIDIA
path: on the H200 its run and compare checks say "not run: MFMA needs an AMD GPU" and earn nothing, and its
compile and ISA checks need the offline AMD toolchain (skipped, with the fix, where it is missing). Prints tables; exit status 1 when a solution
misses a mark it could earn here or a wrong submission is not caught.

    PYTHONPATH=. python3 tests/gpu/run_solutions.py [--json FILE]
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
    ap.add_argument("--jobs", type=int, default=8, help="parallel compiles before grading")
    args = ap.parse_args()
    plat = current()
    print(f"{plat.summary()}  [{plat.label}]")
    prebuild(plat, args.jobs)
    out, bad = {"platform": plat.label, "solutions": {}, "wrong": {}, "starters": {}}, 0

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

    print("\n== wrong submissions ==")
    for name, w in wrong_submissions().items():
        r = grader.check(w.exercise, w.source, time_limit_s=5)
        c = r.check(w.fails)
        caught = c.status == "failed"
        must = w.where == "any" or plat.is_gpu
        print(f"{name:<38} {w.exercise:<16} {r.earned:>4g}/{r.available:<4g} {w.fails}={c.status}: {c.message[:140]}")
        out["wrong"][name] = r.to_json()
        bad += must and not caught

    if shutil.which("nvcc"):
        print("\n== CUDA starters with nvcc ==")
        target = plat.device.target_id if plat.backend == "cuda" and plat.device else "sm_90"
        for ex in grader.exercises():
            flags = ["-I", str(COMMON_DIR)]
            extra, missing = libs.flags(ex.libraries, nvidia=True)
            if missing:
                print(f"{ex.id:<20} skipped: {missing}")
                continue
            res = build.compile(ex.starter, lang="cuda", target=target, flags=(*flags, *extra))
            print(f"{ex.id:<20} {'ok' if res.ok else 'FAILED'} ({target})")
            out["starters"][ex.id] = res.ok
            bad += not res.ok
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
    print(f"\n{'all as expected' if not bad else f'{bad} unexpected result(s)'}  [{plat.label}]")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
