#!/usr/bin/env python3
"""The instructor's walkthrough of docs/teach/walkthrough.md, run end to end with the time of each step.

    sudo .venv/bin/python benchmarks/workshop_walkthrough.py --learners 3 --rocm-root /opt/rocmlab/rocm-7.2.4

Steps, as the docs give them: start the hub (a Unix user per learner, limits, GPU seats), hand out the exercise
(``Hub.put_file``), the learners start their servers, each hands in from a notebook kernel (the reference
solution for all but the last learner, the CUDA starter for the last), the instructor collects, grades and
returns feedback in one command (``rocmlab grade --exchange ... --seed-file``), each learner reads their
feedback, and the hub stops (servers, users, home file systems, cgroups removed). Prints a table and writes it
to ``--out`` (markdown). Needs root, configurable-http-proxy, and an offline ROCm root every user can read.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--learners", type=int, default=3)
    ap.add_argument("--rocm-root", default="/opt/rocmlab/rocm-7.2.4",
                    help="the offline ROCm root every user can read (scripts/setup/20-rocm-root.sh)")
    ap.add_argument("--out", default=None, help="write the timing table here (markdown)")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("error: the workshop hub runs as root (it makes a Unix user per learner): run with sudo", file=sys.stderr)
        return 2
    if a.learners < 1:
        print("error: --learners must be at least 1", file=sys.stderr)
        return 2
    from rocmlab.grader.spec import load
    from rocmlab.workshop.hub import HubError, jupyterhub

    learners = [f"learner{i + 1:02d}" for i in range(a.learners)]
    ex = load("vector-add")
    rows: list[tuple[str, float, str]] = []

    def step(name: str, fn, note=lambda r: ""):
        t0 = time.monotonic()
        r = fn()
        rows.append((name, time.monotonic() - t0, note(r)))
        print(f"{name}: {rows[-1][1]:.1f} s {rows[-1][2]}", flush=True)
        return r

    work = tempfile.mkdtemp(prefix="rocmlab-walkthrough-")
    os.chmod(work, 0o711)
    t_all = time.monotonic()
    try:
        hub_cm = jupyterhub(work, learners, n_gpus=max(8, a.learners), rocm_root=a.rocm_root, cull_idle_s=None)
        hub = step("1. start the hub (`jupyterhub(WORK, LEARNERS, rocm_root=...)`)", hub_cm.__enter__)
        try:
            step("2. hand out `vector_add.hip` (`hub.put_file`)",
                 lambda: [hub.put_file(n, "vector_add.hip", ex.starter) for n in learners],
                 lambda r: f"{len(r)} learners")
            step("3. learners start their servers (`hub.spawn`, one after another)",
                 lambda: [hub.spawn(n, timeout_s=300) for n in learners])
            answers = {n: (ex.solution if i < len(learners) - 1 or len(learners) == 1 else ex.starter)
                       for i, n in enumerate(learners)}
            for n in learners:
                hub.put_file(n, "my_port.hip", answers[n])
            step("4. each learner hands in from a notebook (`exchange.handin`)",
                 lambda: [hub.execute(n, "import os\nfrom rocmlab.workshop import exchange\n"
                                         "print(exchange.handin('vector-add', os.path.expanduser('~/my_port.hip')))")
                          for n in learners])
            seed = hub.instructor_dir / "grading-seed"
            r = step("5. collect, grade, return (`rocmlab grade --exchange X --exercise vector-add --seed-file F`)",
                     lambda: subprocess.run([sys.executable, "-m", "rocmlab.cli", "grade", "--exchange",
                                             str(hub.exchange), "--exercise", "vector-add", "--seed-file", str(seed),
                                             "--workers", "2", "--no-progress"], capture_output=True, text=True,
                                            timeout=1800),
                     lambda r: r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else f"rc {r.returncode}")
            if r.returncode != 0:
                raise HubError(f"grading failed: {r.stdout}{r.stderr}")
            fb = step("6. each learner reads their feedback (`exchange.feedback`)",
                      lambda: [hub.execute(n, "from rocmlab.workshop import exchange\n"
                                              "i = exchange.feedback('vector-add').info\n"
                                              "print(i['earned'], '/', i['possible'])") for n in learners],
                      lambda r: "points: " + ", ".join(x.strip() for x in r))
            del fb
        except BaseException:
            hub_cm.__exit__(*sys.exc_info())
            raise
        step("7. clean-up: stop the hub; users, homes, cgroups removed", lambda: hub_cm.__exit__(None, None, None))
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    total = time.monotonic() - t_all
    table = ["| step | seconds | result |", "|---|---|---|",
             *(f"| {name} | {s:.1f} | {note} |" for name, s, note in rows), f"| total | {total:.1f} | |"]
    text = "\n".join(table) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
