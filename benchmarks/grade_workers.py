"""`rocmlab grade` over N generated submissions: wall time with 1 and 2 workers (the ratio), then
kill-and-resume (no lost or duplicated rows). Each run starts with a cold build cache, so every
submission really compiles (each source differs by a learner comment; a fifth are wrong variants).

    python benchmarks/grade_workers.py [N]      # N = 100 by default
"""

from __future__ import annotations

import argparse
import csv
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_submissions(root: Path, n: int) -> None:
    from rocmlab.grader import load
    from rocmlab.grader.wrong import wrong_submissions

    good = load("vector-add").solution
    wrong = [w.source for w in wrong_submissions().values()
             if w.exercise == "vector-add" and w.name not in ("infinite loop",)]
    root.mkdir(parents=True)
    for i in range(n):
        src = wrong[i % len(wrong)] if i % 5 == 4 else good
        (root / f"learner{i:03d}.hip").write_text(f"// submission of learner {i:03d}\n" + src)


def machine_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat. The graders' own CPU time cannot be summed
    from rusage: sandboxed compilers and programs are not reaped by the grading processes."""
    v = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def offline_toolchain():
    """The offline HIP toolchain, or None; a fresh ROCMLAB_HOME set after this still finds its ROCm root."""
    from rocmlab.hip.toolchain import discover_offline

    tc = discover_offline()
    if tc is not None:
        os.environ.setdefault("ROCMLAB_ROCM_ROOT", tc.root)
    return tc


def grade(subs: Path, out: Path, workers: int, home: Path, kill_after: float | None = None) -> tuple[float, int]:
    env = dict(os.environ, ROCMLAB_HOME=str(home))
    cmd = [sys.executable, "-m", "rocmlab.cli", "grade", str(subs), "--exercise", "vector-add", "--out", str(out),
           "--workers", str(workers), "--time-limit", "5", "--seed", "12345", "--no-progress"]
    start = time.monotonic()
    load0 = os.getloadavg()[0]
    cpu0 = machine_cpu()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        proc.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    cpu1 = machine_cpu()
    busy = (cpu1[0] - cpu0[0]) / max(cpu1[1] - cpu0[1], 1) * (os.cpu_count() or 1)
    wall = time.monotonic() - start
    if kill_after is None:
        print(f"    (machine load average {load0:.1f} -> {os.getloadavg()[0]:.1f}; the machine's cores were "
              f"{busy:.2f} of {os.cpu_count()} busy on average, whoever used them)")
    return wall, proc.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", nargs="?", type=int, default=100, help="how many submissions (default 100)")
    n = ap.parse_args().n
    if n < 1:
        ap.error(f"N={n}: give at least 1 submission (100 shows the speed-up best)")
    from rocmlab.machine.detect import current

    if offline_toolchain() is None:
        print("no offline HIP toolchain: run ./go setup")
        return 1
    plat = current()
    tmp = Path(tempfile.mkdtemp(prefix="rocmlab-gradebench-"))
    subs = tmp / "subs"
    make_submissions(subs, n)
    times = {}
    for workers in (1, 2):
        t, rc = grade(subs, tmp / f"out{workers}", workers, tmp / f"home{workers}")
        rows = list(csv.DictReader(open(tmp / f"out{workers}" / "grades.csv")))
        times[workers] = t
        print(f"workers={workers}: {n} submissions in {t:.1f} s ({t / n:.2f} s each), rc={rc}, {len(rows)} rows"
              f"  [{plat.backend}: {plat.device.name if plat.device else '?'}; {os.cpu_count()} cores]")
    print(f"speed-up with 2 workers: {times[1] / times[2]:.2f}x")

    out = tmp / "out-kill"
    t1, _ = grade(subs, out, 2, tmp / "home-kill", kill_after=max(5.0, times[2] / 2))
    done_before = len(list((out / "results").glob("*.json")))
    t2, rc = grade(subs, out, 2, tmp / "home-kill")
    rows = list(csv.DictReader(open(out / "grades.csv")))
    ids = [r["student_id"] for r in rows]
    results = len(list((out / "results").glob("*.json")))
    stray = list((out / "results").glob(".*.tmp"))
    ok = len(rows) == n and len(set(ids)) == n and results == n
    print(f"kill-and-resume: killed after {t1:.1f} s with {done_before} results written; the rerun graded the other "
          f"{n - done_before} in {t2:.1f} s; grades.csv has {len(rows)} rows, {len(set(ids))} distinct learners, "
          f"{results} result files, {len(stray)} leftover temporary files: {'OK' if ok else 'MISMATCH'}")
    a = {r["student_id"]: r["score"] for r in csv.DictReader(open(tmp / "out2" / "grades.csv"))}
    b = {r["student_id"]: r["score"] for r in rows}
    print(f"scores after resume equal the uninterrupted run's: {a == b}")
    print(f"files in {tmp}")
    return 0 if ok and a == b else 1


if __name__ == "__main__":
    sys.exit(main())
