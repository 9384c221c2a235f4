"""Run Lab 10's FP8 GEMM ladder variants many times on the GPU and count wrong answers: the check that finds races.

    PYTHONPATH=. python3 benchmarks/fp8_repeat_check.py [--runs 40] [--shape 1024 4608 7168] [--force]

A kernel whose pieces of one output tile meet through atomics can be right on one run and wrong on the next. The
ladder's timing checks each variant's answer once before timing it; this script checks the same inputs ``--runs``
times per variant (the same fresh random inputs each time, against a float32 product of the dequantised inputs;
wrong: relative error above the ladder's ``WRONG_REL_ERR``) and prints, per variant, how many runs were wrong,
the first few with their error, and whether the shared zeroed workspace was left at zero. It found the race that
keeps stream-K with in-place accumulation out of the ladder (``ladder.STREAM_IN_PLACE_RACE``); ``--force`` runs that
combination anyway (through the kernel, past the launcher's refusal) to see whether a fix holds. On a machine
without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: (BM, BN, num_warps, num_stages, SPLIT_K, UNROLL, RESCALE, STREAM_K programs per compute unit)
VARIANTS = ((128, 128, 8, 3, 1, 1, 1, 1), (128, 128, 8, 3, 1, 1, 1, 2), (128, 128, 8, 3, 1, 1, 0, 2),
            (64, 128, 4, 3, 1, 1, 0, 2), (128, 128, 8, 3, 2, 1, 1, 0), (128, 128, 4, 3, 1, 1, 1, 0))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=40, help="runs per variant (default 40)")
    ap.add_argument("--shape", type=int, nargs=3, default=(1024, 4608, 7168), metavar=("M", "N", "K"))
    ap.add_argument("--force", action="store_true", help="also run the combinations the launcher refuses")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error(f"--runs {args.runs}: give at least 1")
    import torch

    if not torch.cuda.is_available():
        print("not run: no GPU here (this check runs Lab 10's kernels on an NVIDIA or AMD GPU)")
        return 0
    from rocmlab.course import puzzles as P

    P.setup()
    from rocmlab.course import ladder as CL
    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10

    CL.descriptor_memory()   # the forced stream-K kernel is launched here directly: its descriptors need scratch
    from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F

    m, n, k = args.shape
    if m % 128 or n % 128 or k % 128:
        ap.error(f"--shape {m} {n} {k}: M, N and K must be multiples of 128 (the ladder's tiles and scale blocks)")
    dt = F.TORCH_DTYPES[F.machine_format()]
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    sa = torch.rand(m, k // 128, device="cuda", generator=g) + 0.5
    sb = torch.rand(n // 128, k // 128, device="cuda", generator=g) + 0.5
    ref = (a.float() * sa.repeat_interleave(128, 1)) @ (b.float() * sb.repeat_interleave(128, 0)
                                                        .repeat_interleave(128, 1)).T
    sa_mmajor = sa.t().contiguous().t()
    print(f"[{P.device()}: {torch.cuda.get_device_name()}] {m}x{n}x{k}, {args.runs} runs per variant")
    failed_any = False
    for tile in VARIANTS:
        label = L10.tile_label(tile)
        refused = ""
        try:
            L10.fp8_gemm(a, b, sa_mmajor, sb, L10.AHEAD, tile)
        except ValueError as exc:
            refused = str(exc)
        if refused and not args.force:
            print(f"  {label}: refused by the launcher ({refused[:90]}...); --force runs it")
            continue
        wrong = []
        for i in range(args.runs):
            c = run_forced(L10, a, b, sa_mmajor, sb, tile) if refused else L10.fp8_gemm(a, b, sa_mmajor, sb, L10.AHEAD,
                                                                                        tile)
            torch.cuda.synchronize()
            err = float((c.float() - ref).norm() / ref.norm())
            if not err <= L10.WRONG_REL_ERR:
                wrong.append(f"run {i}: {err:.3f}")
        left = [str(key) for key, buf in CL._ZEROED.items() if bool(buf.any())]
        failed_any |= bool(wrong)
        print(f"  {label}{' (forced)' if refused else ''}: wrong in {len(wrong)} of {args.runs} runs "
              f"{wrong[:3] if wrong else ''}; workspace left non-zero: {left or 'no'}")
    return 1 if failed_any else 0


def run_forced(L10, a, b, sa, sb, tile):
    """The stream-K kernel launched directly, past the launcher's refusal (what ``fp8_gemm`` would launch)."""
    import torch

    from rocmlab.course import ladder as CL

    bm, bn, warps, stages = tile[:4]
    m, k = a.shape
    n = b.shape[0]
    tiles = (m // bm) * (n // bn)
    programs = min(tiles * (k // 128), torch.cuda.get_device_properties(a.device).multi_processor_count * tile[7])
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    ws = CL.zeroed(a.device, tiles * bm * bn, torch.float32)
    locks = CL.zeroed(a.device, tiles)
    L10.LK.fp8_gemm_stream_k[(programs,)](a, b, sa, sb, c, m, n, k, ws, locks, BM=bm, BN=bn, BK=128, GROUP_M=8,
                                          RESCALE=bool(tile[6]), WARP_SPEC=False, num_warps=warps,
                                          num_stages=stages)
    return c


if __name__ == "__main__":
    sys.exit(main())
