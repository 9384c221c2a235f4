"""A workshop under load: N learners log in to a real JupyterHub, each has the hub spawn their JupyterLab, hands
in from a kernel of their own server (through the proxy, as a notebook cell does), and is graded by
`rocmlab grade --exchange`. Loopback only; bounded in time.

    sudo python benchmarks/hub_load.py --learners 30 --wave 10 --out DIR
    sudo python benchmarks/hub_load.py --learners 30 --mode dry-run --slow-start --out DIR   # the old recipe

Reports (text and JSON in DIR):
- spawn latency (POST /hub/api/users/NAME/server until the hub says ready): p50, p95, max, against one
  learner spawned alone on the idle hub first (the baseline, same run);
- grading throughput: hand-ins graded per minute by `rocmlab grade --exchange` (one pass after each wave),
  against grading the baseline learner's one hand-in alone;
- lost hand-ins (a learner whose latest hand-in has no result or feedback) and duplicated ones (more than one
  gradebook row, or a result of anything but the latest hand-in): both must be 0;
- the machine's load average during the run (the figures are only comparable at a similar load).
Every third learner hands in twice (the starter, then the port): only the second may be graded.
Each source carries the learner's name and a random tag of this run, so every one really compiles (no hit
in the HIP build cache, not even from an earlier run).

What runs where: JupyterHub 6 with DummyAuthenticator. `--mode users` (default, needs root): each learner is a
Unix user of their own (created for the run with a random prefix and removed afterwards), their server runs as
that user with a 2 GB memory and 1 CPU limit (rocmlab/workshop/hubconfig.py). `--mode dry-run`: every server
as the hub's own user. `--slow-start` starts servers as JupyterLab comes (with jupyter_lsp and jsonschema's
IRI checker); the default leaves both out (rocmlab/workshop/hub.py, FAST_SERVER_ARGS and SKIP_RFC3987).
GPU seats are indices handed out by rocmlab.workshop.seats (one per learner here, whatever GPUs the machine
has); grading uses the machine's backend ([backend: ...] below).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import secrets
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXERCISE = "vector-add"
RUN_TAG = secrets.token_hex(8)


def percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = (len(xs) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def source_for(name: str, which: str) -> str:
    from rocmlab.grader.spec import load

    ex = load(EXERCISE)
    return f"// hand-in of {name} ({which}), run {RUN_TAG}\n" + (ex.solution if which == "port" else ex.starter)


def hand_in(hub, name: str, which: str) -> dict:
    src = source_for(name, which)
    code = (f"import pathlib\nfrom rocmlab.workshop import exchange\n"
            f"pathlib.Path('vector_add.hip').write_text({src!r})\n"
            f"print(exchange.handin({EXERCISE!r}, 'vector_add.hip').name)\n")
    t0 = time.monotonic()
    stamp = hub.execute(name, code, timeout_s=180).strip()
    return {"learner": name, "handin": stamp, "sha": hashlib.sha256(src.encode()).hexdigest(),
            "seconds": time.monotonic() - t0}


def learner(hub, name: str) -> dict:
    """Spawn, then hand in once (or twice: every third learner)."""
    spawn_s = hub.spawn(name, timeout_s=300)
    twice = int(name[-3:]) % 3 == 0
    done = []
    if twice:
        done.append(hand_in(hub, name, "starter"))
    done.append(hand_in(hub, name, "port"))
    return {"learner": name, "spawn_s": spawn_s, "handins": done}


def grade_pass(exchange: Path, workers: int) -> tuple[float, int, str]:
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "grade", "--exchange", str(exchange), "--exercise",
                        EXERCISE, "--workers", str(workers), "--no-progress"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"rocmlab grade --exchange failed:\n{r.stdout}\n{r.stderr}")
    graded = int(r.stdout.split(" graded now")[0].rsplit(" ", 1)[-1])
    return time.monotonic() - t0, graded, r.stdout.strip().splitlines()[0]


def verify(exchange: Path, expected: dict[str, dict]) -> dict:
    """lost: a learner whose latest hand-in has no result/feedback for exactly it; duplicated: extra rows."""
    out = exchange / "grades"
    rows = list(csv.DictReader(open(out / "grades.csv")))
    per = {}
    for r in rows:
        per[r["student_id"]] = per.get(r["student_id"], 0) + 1
    lost, dup = [], []
    for name, last in expected.items():
        try:
            result = json.loads((out / "results" / f"{name}__{EXERCISE}.json").read_text())
            info = json.loads((exchange / "outbound" / "feedback" / name / f"{EXERCISE}.json").read_text())
        except (OSError, ValueError):
            lost.append(name)
            continue
        if result.get("sha") != last["sha"] or info.get("handin") != last["handin"]:
            lost.append(name)
        if per.get(name, 0) != 1:
            dup.append(name)
    dup += [n for n in per if n not in expected]
    files = sum(1 for _ in (exchange / "inbound").glob(f"*/{EXERCISE}/*.hip"))
    return {"lost": len(lost), "duplicated": len(dup), "lost_names": lost, "duplicated_names": dup,
            "rows": len(rows), "handin_files": files}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--learners", type=int, default=30)
    p.add_argument("--wave", type=int, default=10, help="learners spawning at the same time")
    p.add_argument("--workers", type=int, default=2, help="parallel graders")
    p.add_argument("--budget-s", type=float, default=1500, help="stop (and fail) after this many seconds")
    p.add_argument("--out", default="hub-load-out")
    p.add_argument("--mode", choices=["users", "dry-run"], default="users",
                   help="users: each learner their own Unix user (root only); dry-run: all as one user")
    p.add_argument("--slow-start", action="store_true",
                   help="start learners' servers as JupyterLab comes (jupyter_lsp, jsonschema's IRI checker)")
    a = p.parse_args(argv)
    if a.learners < 1 or a.wave < 1:
        p.error("--learners and --wave must be at least 1")
    if a.mode == "users" and os.geteuid() != 0:
        print("error: --mode users makes a Unix user per learner, so it needs root (sudo); "
              "or run --mode dry-run (all learners as one user)", file=sys.stderr)
        return 2

    from rocmlab.machine.detect import current
    from rocmlab.course.headline import headline
    from rocmlab.workshop.hub import jupyterhub

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    plat = current()
    names = [f"learner{i:03d}" for i in range(1, a.learners + 1)]
    t_start = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rocmlab-hub-load-"))
    os.chmod(work, 0o711)
    results, grade_s, graded, passes = [], 0.0, 0, []
    loads, done = [], threading.Event()

    def sample_load():
        while not done.wait(5):
            loads.append(os.getloadavg()[0])

    threading.Thread(target=sample_load, daemon=True).start()
    with jupyterhub(work, ["baseline", *names], n_gpus=a.learners + 1, timeout_s=120, mode=a.mode,
                    user_prefix=f"rlb{secrets.token_hex(2)}-", fast_start=not a.slow_start) as hub:
        hub_up = time.monotonic() - t_start
        base_spawn = hub.spawn("baseline", timeout_s=300)
        base_handin = hand_in(hub, "baseline", "port")
        s, n, line = grade_pass(hub.exchange, 1)
        base_grade_s = s
        passes.append({"wave": "baseline", "seconds": s, "graded": n, "summary": line})
        print(f"hub up in {hub_up:.1f} s; baseline: spawn {base_spawn:.1f} s, one hand-in graded alone in {s:.1f} s")
        for w in range(0, len(names), a.wave):
            if time.monotonic() - t_start > a.budget_s:
                print(f"TIME BUDGET of {a.budget_s:.0f} s spent after {w} learners: stopping", file=sys.stderr)
                break
            wave = names[w:w + a.wave]
            t0 = time.monotonic()
            with ThreadPoolExecutor(len(wave)) as pool:
                results += list(pool.map(lambda nm: learner(hub, nm), wave))
            t_wave = time.monotonic() - t0
            s, n, line = grade_pass(hub.exchange, a.workers)
            grade_s += s
            graded += n
            passes.append({"wave": w // a.wave + 1, "seconds": s, "graded": n, "summary": line})
            print(f"wave {w // a.wave + 1}: {len(wave)} learners spawned and handed in in {t_wave:.1f} s; "
                  f"graded {n} in {s:.1f} s ({line})", flush=True)
        final_s, final_n, line = grade_pass(hub.exchange, a.workers)       # a rerun: must grade nothing new
        passes.append({"wave": "rerun", "seconds": final_s, "graded": final_n, "summary": line})
        expected = {r["learner"]: r["handins"][-1] for r in results}
        expected["baseline"] = base_handin
        check = verify(hub.exchange, expected)
        made = sum(len(r["handins"]) for r in results) + 1
    wall = time.monotonic() - t_start
    done.set()
    load = {"mean": sum(loads) / len(loads) if loads else os.getloadavg()[0], "max": max(loads, default=0.0)}
    spawns = [r["spawn_s"] for r in results]
    handin_s = [h["seconds"] for r in results for h in r["handins"]]
    per_min = graded / (grade_s / 60) if grade_s else float("nan")
    base_per_min = 60 / base_grade_s
    report = {
        "learners": len(results), "asked": a.learners, "wave": a.wave, "workers": a.workers, "cpus": os.cpu_count(),
        "mode": a.mode, "fast_start": not a.slow_start, "load_average_1min": load,
        "backend": plat.backend, "device": plat.device.name if plat.device else "unknown device",
        "hub_start_s": hub_up, "wall_s": wall,
        "spawn_s": {"baseline_alone": base_spawn, "p50": percentile(spawns, .5), "p95": percentile(spawns, .95),
                    "max": max(spawns, default=float("nan"))},
        "handin_s": {"p50": percentile(handin_s, .5), "p95": percentile(handin_s, .95)},
        "grading": {"graded": graded, "seconds": grade_s, "per_minute": per_min,
                    "baseline_one_alone_s": base_grade_s, "baseline_per_minute": base_per_min,
                    "rerun_graded": final_n, "passes": passes},
        "handins_made": made, **check,
    }
    (out / "hub_load.json").write_text(json.dumps(report, indent=1))
    note = (f"{len(results)} learners, waves of {a.wave}, {os.cpu_count()} CPUs, mode {a.mode}, "
            f"{'fast' if not a.slow_start else 'slow'} start, load avg {load['mean']:.1f}")
    lines = [
        headline("hub spawn latency p50", round(report["spawn_s"]["p50"], 2), "s", note, plat=plat),
        headline("hub spawn latency p95", round(report["spawn_s"]["p95"], 2), "s",
                 f"{report['spawn_s']['p95'] / base_spawn:.1f}x one learner alone ({base_spawn:.1f} s)", plat=plat),
        headline("hand-ins graded per minute", round(per_min, 1), "/min",
                 f"{graded} in {grade_s:.0f} s, {a.workers} workers; {per_min / base_per_min:.2f}x one alone "
                 f"({base_per_min:.1f}/min)", plat=plat),
        headline("lost hand-ins", check["lost"], "", f"of {len(expected)} learners' latest", plat=plat),
        headline("duplicated hand-ins", check["duplicated"], "",
                 f"{check['rows']} gradebook rows; {check['handin_files']} hand-in files for {made} made", plat=plat),
    ]
    (out / "hub_load.txt").write_text(
        f"benchmarks/hub_load.py --learners {a.learners} --wave {a.wave} --workers {a.workers} --mode {a.mode}"
        f"{' --slow-start' if a.slow_start else ''}: wall {wall:.0f} s, load average {load['mean']:.1f} "
        f"(max {load['max']:.1f}) on {os.cpu_count()} CPUs, "
        f"hub up in {hub_up:.1f} s, hand-in p50 {report['handin_s']['p50']:.1f} s, rerun graded {final_n}\n"
        + "\n".join(str(h) for h in lines) + "\n")
    ok = (check["lost"] == 0 and check["duplicated"] == 0 and final_n == 0 and len(results) == a.learners
          and check["handin_files"] == made)
    print("OK" if ok else f"FAILED: {json.dumps(check)} rerun graded {final_n}, {len(results)}/{a.learners} learners")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
