"""The block-reduction solution's read bandwidth against torch.sum on the same GPU, in the same run.

The kernel is rocmlab/exercises/block-reduction/solution.hip (float4 loads, grid-stride, wavefront
shuffles from warpSize / 2, one atomic per block), built through rocmlab.hip.build: hipcc on an AMD
GPU, the HIP->CUDA path with nvcc on an NVIDIA GPU. The program's --bench mode fills MIB MiB on the
device, times 50 launches with events and checks its own sum against a double-precision host sum.
torch.sum is timed the same way (CUDA/HIP events, 50 calls after a warm-up) on a tensor of the same size.

    PYTHONPATH=. python3 benchmarks/reduction_vs_torch.py [--sizes 64 256 1024] [--reps 50]

Goal: >= 1.0x torch.sum at 64 MiB and >= 0.9x from 256 MiB up. On a machine without a GPU it builds the
kernel offline for gfx942 and says that nothing can be timed (exit 0). Exit 1, with the reason, when the build, a run
or a sum's check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rocmlab import grader  # noqa: E402
from rocmlab.grader.spec import COMMON_DIR  # noqa: E402
from rocmlab.hip import build  # noqa: E402
from rocmlab.machine.detect import current  # noqa: E402

GOAL = {64: 1.0}   # else 0.9


def torch_sum_tbs(mib: int, reps: int) -> tuple[float, float]:
    import torch

    n = mib * (1 << 20) // 4
    x = torch.rand(n, device="cuda", dtype=torch.float32) + 0.5
    want = float(x.double().sum())
    for _ in range(3):
        s = x.sum()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        s = x.sum()
    stop.record()
    stop.synchronize()
    ms = start.elapsed_time(stop) / reps
    rel = abs(float(s) - want) / want
    del x
    torch.cuda.empty_cache()
    return n * 4 / (ms * 1e-3) / 1e12, rel


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024], help="MiB")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    plat = current()
    src = grader.load("block-reduction").solution
    res = build.compile(src, lang="hip", flags=("-I", str(COMMON_DIR)), name="block_sum")
    print(res.summary().splitlines()[0])
    if not res.ok:                   # fail loudly: what the compiler said, and whether the machine is at fault
        print("FAILED: the kernel did not build:\n" + "\n".join(res.summary().splitlines()[1:])
              + (f"\n{res.machine_fault}" if res.machine_fault else "") + "\n--- compiler log (end) ---\n"
              + res.log[-3000:], file=sys.stderr)
        return 1
    if not res.can_run:
        print(f"cannot time here: {res.cannot_run_reason}  [{plat.label}]")
        return 0
    rows, ok_all = [], True
    print(f"{'MiB':>6} {'kernel TB/s':>12} {'torch.sum TB/s':>15} {'ratio':>7} {'goal':>6}  correct  [{plat.label}]")
    for mib in args.sizes:
        done = build.run(res, args=("--bench", str(mib), str(args.reps)), timeout_s=300, output_bytes=1 << 16)
        if not done.ok:
            print(f"{mib:>6} the kernel run {done.explain()}: {done.stderr[-300:]}")
            return 1
        k = json.loads(done.stdout.strip().splitlines()[-1])
        t_tbs, t_rel = torch_sum_tbs(mib, args.reps)
        ratio = k["tbs"] / t_tbs
        goal = GOAL.get(mib, 0.9)
        met = ratio >= goal
        ok_all &= bool(k["ok"]) and t_rel < 1e-3
        rows.append({"mib": mib, "kernel_tbs": k["tbs"], "kernel_ms": k["ms"], "kernel_rel_err": k["rel_err"],
                     "torch_tbs": t_tbs, "torch_rel_err": t_rel, "ratio": ratio, "goal": goal, "met": met})
        print(f"{mib:>6} {k['tbs']:>12.3f} {t_tbs:>15.3f} {ratio:>6.2f}x {goal:>5.1f}x  "
              f"kernel rel.err {k['rel_err']:.1e}, torch {t_rel:.1e}{'' if met else '  (goal missed)'}")
    if args.json:
        Path(args.json).write_text(json.dumps({"platform": plat.label, "rows": rows}, indent=1))
    if not ok_all:
        print("FAILED: a sum was wrong (the kernel's own check, or torch.sum against the double-precision sum): "
              "see the relative errors above", file=sys.stderr)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
