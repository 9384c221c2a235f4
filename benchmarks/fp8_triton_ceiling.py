"""How fast can a Triton FP8 GEMM go on this GPU? The ceiling Lab 10's block-scaled kernel is measured against.

    PYTHONPATH=. python3 benchmarks/fp8_triton_ceiling.py [--out FILE] [--wide] [--splits 1 2 4]

At each of Lab 10's four shapes (DeepSeek-V3's block-scaled GEMMs), in one run:

- the vendor: per-tensor FP8 ``torch._scaled_mm`` (cuBLASLt on NVIDIA, hipBLASLt on AMD) and bf16 ``torch.matmul``;
- the **ceiling**: a plain FP8 GEMM in Triton with *no* scales at all (one fp32 accumulator, tensor descriptors,
  grouped tiles), at a few tiles, with and without Triton's warp specialization (``tl.range(...,
  warp_specialize=True)``), and split over K in 2 or 4 pieces (``--splits``; the pieces add into a zeroed float32
  output with atomics, the zeroing timed with them) for the shapes whose tiles leave compute units idle: the fastest
  answer Triton gives here to the easier problem;
- Lab 10's last ladder step (``v13 tuned``, block-scaled, its own tile sweep).

It prints each as TFLOP/s and as a ratio to ``_scaled_mm`` measured in the same run, and the block-scaled kernel's
ratio to the Triton ceiling. A block-scaled kernel does strictly more work than the ceiling's (a scale multiply-add
per accumulator element every 128 of K), so where the ceiling itself is below a goal set against ``_scaled_mm``,
that goal is out of reach of a Triton kernel on this GPU and Triton version, whatever the ladder does. Every
variant's answer is checked (the block-scaled one against a float32 product of the dequantised inputs); a wrong one
is printed as WRONG and never counted. On a machine without a GPU it says so and exits 0.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = ((1024, 1536, 7168), (1024, 4608, 7168), (6144, 1536, 7168), (1024, 7168, 2048))
#: (BM, BN, num_warps, num_stages, warp specialization)
DENSE_TILES = ((128, 128, 8, 4, False), (128, 256, 8, 3, False), (128, 128, 4, 4, True), (128, 256, 4, 3, True),
               (128, 128, 8, 4, True), (256, 128, 8, 3, True))
#: ``--wide``: every combination of these (72 variants; those the GPU cannot run are said and skipped)
WIDE = {"BM": (64, 128, 256), "BN": (128, 256), "warps": (4, 8), "stages": (3, 4, 5), "ws": (False, True)}


def wide_tiles() -> tuple:
    return tuple(itertools.product(WIDE["BM"], WIDE["BN"], WIDE["warps"], WIDE["stages"], WIDE["ws"]))


def dense_kernel():
    """The ceiling's kernel: C = A B^T in FP8 with one fp32 accumulator, no scales (defined here, on first use,
    so that this module imports without Triton)."""
    import triton
    import triton.language as tl

    @triton.jit
    def fp8_dense(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  WARP_SPEC: tl.constexpr, SPLIT: tl.constexpr):
        pid = tl.program_id(0) // SPLIT                  # the output tile
        piece = tl.program_id(0) % SPLIT                 # its piece of K (SPLIT > 1: atomics into float32)
        tiles_m = M // BM
        tiles_n = N // BN
        group = pid // (8 * tiles_n)                     # groups of 8 row tiles, as Lab 10's GROUP_M step
        rows = tl.minimum(tiles_m - group * 8, 8)
        pid_m = group * 8 + (pid % (8 * tiles_n)) % rows
        pid_n = (pid % (8 * tiles_n)) // rows
        da = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        db = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
        acc = tl.zeros([BM, BN], tl.float32)
        per = K // BK // SPLIT
        for kb in tl.range(piece * per, piece * per + per, warp_specialize=WARP_SPEC):
            acc = tl.dot(da.load([pid_m * BM, kb * BK]), tl.trans(db.load([pid_n * BN, kb * BK])), acc)
        if SPLIT == 1:
            dc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
            dc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))
        else:
            r = pid_m * BM + tl.arange(0, BM)
            c = pid_n * BN + tl.arange(0, BN)
            tl.atomic_add(c_ptr + r[:, None] * N + c[None, :], acc, sem="relaxed")

    return fp8_dense


def one_shape(kernel, m: int, n: int, k: int, dt, detail: list, tiles=DENSE_TILES, splits=(1,)) -> str:
    """One shape's row of the table: the vendor, the Triton ceiling's best tile, Lab 10's v13; each dense variant's
    line goes to ``detail``."""
    import torch

    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10
    from rocmlab.profile.timing import graph_bench

    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    flops = 2.0 * m * n * k
    one = torch.ones((), device="cuda")
    vendor = graph_bench(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    bf16 = graph_bench(lambda: a16 @ b16.T)
    ref = a.float() @ b.float().T
    c16 = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    c32 = torch.empty(m, n, device="cuda", dtype=torch.float32)
    best = None
    for (bm, bn, warps, stages, ws), split in itertools.product(tiles, splits):
        if (k // 128) % split:
            continue
        label = f"{bm}x{bn} w{warps} s{stages}" + (" warp-specialized" if ws else "") + \
            (f" split-K {split}" if split > 1 else "")
        c = c16 if split == 1 else c32

        def run(bm=bm, bn=bn, warps=warps, stages=stages, ws=ws, split=split, c=c):
            if split > 1:
                c.zero_()       # the pieces add into it: zeroing is part of the work, timed with it
            kernel[(m // bm * (n // bn) * split,)](a, b, c, m, n, k, BM=bm, BN=bn, BK=128, WARP_SPEC=ws,
                                                   SPLIT=split, num_warps=warps, num_stages=stages)
        try:
            c.fill_(float("nan"))   # poisoned: an element nothing wrote fails the check (split-K zeroes it first)
            run()
            err = float((c.float() - ref).norm() / ref.norm())
            ms = graph_bench(run)
        except Exception as exc:   # noqa: BLE001 - a tile this GPU or Triton cannot run: said, not counted
            why = str(exc).splitlines()[0][:100] if str(exc) else type(exc).__name__
            detail.append(f"  {m}x{n}x{k} dense {label}: failed ({why})")
            continue
        wrong = err > 0.01
        detail.append(f"  {m}x{n}x{k} dense {label}: {flops / ms / 1e9:.0f} TFLOP/s, {vendor / ms:.3f}x "
                      f"_scaled_mm, rel. error {err:.4f}" + (" WRONG (not counted)" if wrong else ""))
        if not wrong and (best is None or ms < best[0]):
            best = (ms, label)
    rows = L10.time_fp8_steps((m, n, k), steps=["v13 tuned"])
    v13 = rows[0] if rows and rows[0]["step"] == "v13 tuned" and rows[0]["rel_err"] < 0.01 else None
    cells = [f"{m}x{n}x{k}", f"{flops / vendor / 1e9:.0f}", f"{flops / bf16 / 1e9:.0f}",
             f"{flops / best[0] / 1e9:.0f} ({best[1]})" if best else "none ran",
             f"{vendor / best[0]:.3f}" if best else "-"]
    if v13:
        cells += [f"{flops / v13['ms'] / 1e9:.0f} ({v13['tile']})", f"{vendor / v13['ms']:.3f}",
                  f"{best[0] / v13['ms']:.3f}" if best else "-", f"{bf16 / v13['ms']:.2f}"]
    else:
        cells += ["not run", "-", "-", "-"]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="also write the report to this file")
    ap.add_argument("--wide", action="store_true",
                    help="sweep 72 dense tiles (BM 64/128/256, BN 128/256, 4/8 warps, 3-5 stages, warp-specialized "
                         "or not) instead of the 6 default ones: a firmer ceiling, several minutes")
    ap.add_argument("--splits", type=int, nargs="+", default=[1, 2, 4], metavar="S",
                    help="split K into S pieces (1: no split); default 1 2 4")
    args = ap.parse_args()
    if any(s < 1 for s in args.splits):
        ap.error(f"--splits {args.splits}: each must be 1 or more")
    import torch

    if not torch.cuda.is_available():
        print("not run: no GPU here (this benchmark times FP8 GEMMs on an NVIDIA or AMD GPU)")
        return 0
    from rocmlab.course import puzzles as P

    P.setup()
    from rocmlab.course.ladder import descriptor_memory
    from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F

    import triton

    descriptor_memory()
    kernel = dense_kernel()
    lines = [f"[{P.device()}: {torch.cuda.get_device_name()}] torch {torch.__version__}, Triton {triton.__version__}",
             "", "| shape | _scaled_mm | bf16 | Triton dense FP8, best (tile) | dense / _scaled_mm | "
             "v13 block-scaled (tile) | v13 / _scaled_mm | v13 / dense | v13 / bf16 |", "|---|" + "---|" * 8]
    detail = []
    for m, n, k in SHAPES:
        lines.append(one_shape(kernel, m, n, k, F.TORCH_DTYPES[F.machine_format()], detail,
                               wide_tiles() if args.wide else DENSE_TILES, tuple(args.splits)))
        print(lines[-1], flush=True)
    report = "\n".join(lines + ["", "every dense variant (ratio to _scaled_mm in the same run):"] + detail)
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
