#!/usr/bin/env python3
"""Lab 03's two ceilings, measured through rocmlab.profile next to plain torch scripts in the same run.

    python benchmarks/lab03_ceilings.py [--copy-gib 2] [--gemm-n 8192] [--monitor-s 5]

1. Copy bandwidth: ``dst.copy_(src)`` over the same buffer size (counting bytes read + written), and
2. BF16 GEMM rate: an n x n x n product on random data (2n^3 FLOPs),

each timed by rocmlab.profile.bench (device events, warm-up, median, rotated buffers) and by a plain
torch loop written here without rocmlab (torch.cuda.Event around each call, median). The two are run
alternately, twice each, and the ratio rocmlab / plain is printed: it should be within 10%.
3. The GPU monitor (amdsmi / nvidia-ml-py / psutil) samples for a few seconds while a GEMM loop runs,
and every sample is printed with its source.

On a CPU it runs with small sizes and the wall clock, so the script itself can be checked anywhere.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from rocmlab.machine.detect import current  # noqa: E402
from rocmlab.profile import Monitor, MonitorUnavailable, ops  # noqa: E402

GPU = torch.cuda.is_available()
DEV = "cuda" if GPU else "cpu"


def plain_time(fn, warmup, reps):
    """The baseline: a plain loop, no rocmlab. Device events per call on a GPU, else perf_counter."""
    for _ in range(warmup):
        fn()
    times = []
    if GPU:
        torch.cuda.synchronize()
        for _ in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
    else:
        for _ in range(reps):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def plain_copy(nbytes, reps):
    n = nbytes // 4
    src = torch.rand(n, device=DEV)
    dst = torch.empty(n, device=DEV)
    t = plain_time(lambda: dst.copy_(src), 3, reps)
    return 2 * 4 * n / t / 1e12


def plain_gemm(n, reps):
    a = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=DEV, dtype=torch.bfloat16)
    t = plain_time(lambda: a @ b, 3, reps)
    return 2 * n ** 3 / t / 1e12


def lab_copy(nbytes, reps):
    return ops.copy_case(nbytes).run(reps=reps).bandwidth_tbs


def lab_gemm(n, reps):
    return ops.gemm_case(n, "bf16").run(reps=reps).tflops


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copy-gib", type=float, default=2.0 if GPU else 0.125)
    ap.add_argument("--gemm-n", type=int, default=8192 if GPU else 512)
    ap.add_argument("--reps", type=int, default=30 if GPU else 10)
    ap.add_argument("--monitor-s", type=float, default=5.0)
    args = ap.parse_args(argv)
    plat = current()
    spec = plat.device.spec if plat.device else None
    print(f"{plat.summary()}  torch {torch.__version__}")
    nbytes = int(args.copy_gib * 2 ** 30)
    rows = []
    for what, unit, lab, plain, arg, peak in (
            ("copy bandwidth", "TB/s", lab_copy, plain_copy, nbytes, spec["bandwidth_tbs"] if spec else None),
            ("bf16 GEMM", "TFLOP/s", lab_gemm, plain_gemm, args.gemm_n, spec["bf16_dense_tflops"] if spec else None)):
        lab_v, plain_v = [], []
        for _ in range(2):                      # alternate, so drift hits both alike
            plain_v.append(plain(arg, args.reps))
            lab_v.append(lab(arg, args.reps))
            if GPU:
                torch.cuda.empty_cache()
        lv, pv = statistics.median(lab_v), statistics.median(plain_v)
        rows.append((what, unit, lv, pv, lab_v, plain_v, peak))
    size = f"copy {args.copy_gib:g} GiB, GEMM n={args.gemm_n}"
    print(f"\n{'figure':<16}{'rocmlab.profile':>18}{'plain torch':>14}{'ratio':>8}{'spec':>9}   runs (lab | plain)  [{plat.label}; {size}]")
    worst = 0.0
    for what, unit, lv, pv, lab_v, plain_v, peak in rows:
        ratio = lv / pv
        worst = max(worst, abs(ratio - 1))
        runs = " ".join(f"{v:.4g}" for v in lab_v) + " | " + " ".join(f"{v:.4g}" for v in plain_v)
        print(f"{what:<16}{lv:>12.4g} {unit:<7}{pv:>10.4g}   {ratio:>7.3f}{peak or float('nan'):>9.4g}   {runs}")
    print(f"largest disagreement: {100 * worst:.1f}% ({'within' if worst <= 0.10 else 'OUTSIDE'} 10%)")

    print(f"\nGPU monitor for {args.monitor_s:g} s while a bf16 GEMM loop runs:")
    try:
        mon = Monitor(interval_s=0.5)
    except MonitorUnavailable as exc:
        print(exc)
        return 1 if worst > 0.10 else 0
    print("source:", mon.source)
    a = torch.randn(4096 if GPU else 256, 4096 if GPU else 256, device=DEV, dtype=torch.bfloat16)
    with mon:
        end = time.monotonic() + args.monitor_s
        while time.monotonic() < end:
            for _ in range(20):
                a @ a
            if GPU:
                torch.cuda.synchronize()
    print(mon.frame().to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"monitor thread stopped: {not mon.running}")
    return 1 if worst > 0.10 else 0


if __name__ == "__main__":
    sys.exit(main())
