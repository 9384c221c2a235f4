"""Lab 06's kernels and tables: a vector add and a matmul to run, tune and compile for AMD targets.

Import after :func:`rocmlab.course.puzzles.setup` (Triton's interpreter must be chosen before triton is
imported). Timing happens only on a GPU; on a CPU :func:`tune_vadd` says why it does not time.
"""

from __future__ import annotations

import re

import torch
import triton
import triton.language as tl

from rocmlab import settings
from rocmlab import triton_amd as TA
from rocmlab.course.puzzles import device
from rocmlab.profile.timing import graph_bench

VADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
MM_CONST = {"BM": 128, "BN": 128, "BK": 64}


@triton.jit
def vadd_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def vadd(x: torch.Tensor, y: torch.Tensor, block: int = 1024, num_warps: int = 4) -> torch.Tensor:
    z = torch.empty_like(x)
    n = x.numel()
    kw = {} if device() == "cpu" else {"num_warps": num_warps}
    vadd_kernel[(triton.cdiv(n, block),)](x, y, z, n, BLOCK=block, **kw)
    return z


def run_vadd(n: int, seed: int = 0) -> dict:
    """Run the vector add on fresh inputs here (GPU or interpreter) and compare with torch."""
    g = torch.Generator().manual_seed(seed)
    x, y = (torch.randn(n, generator=g).to(device()) for _ in range(2))
    z = vadd(x, y)
    return dict(n=n, device=device(), exact=bool(torch.equal(z, x + y)))


def tune_vadd(n: int, blocks=(256, 1024, 4096), warps=(1, 4, 8)) -> list[dict] | str:
    """GB/s of the vector add per (BLOCK, num_warps) on this GPU, with torch's ``x + y`` measured in the
    same run; on a CPU, the reason it is not timed."""
    if device() == "cpu":
        return ("not timed: Triton's CPU interpreter runs each program in numpy, one after another, so its time "
                "says nothing about a GPU; on a GPU this cell times every configuration")

    x, y = (torch.randn(n, device="cuda") for _ in range(2))
    moved = 3 * 4 * n
    torch_ms = graph_bench(lambda: x + y)
    rows = []
    for b in blocks:
        for w in warps:
            ms = graph_bench(lambda b=b, w=w: vadd(x, y, b, w))
            rows.append(dict(BLOCK=b, num_warps=w, ms=ms, GBs=moved / ms / 1e6, vs_torch=torch_ms / ms))
    rows.append(dict(BLOCK="torch x + y", num_warps="", ms=torch_ms, GBs=moved / torch_ms / 1e6, vs_torch=1.0))
    return rows


def vadd_reports(target: str | None = None) -> list[TA.AmdReport]:
    """The vector add for an AMD target at 1, 4 and 8 warps (n 16-divisible), and at 4 warps with n not
    known to be divisible (the control: its masked loads cannot be widened)."""
    target = target or settings.DEFAULT_TARGET
    aligned = ("x_ptr", "y_ptr", "z_ptr", "n")
    reps = TA.compile_variants(vadd_kernel, VADD_SIG, {"BLOCK": 1024}, target,
                               [dict(num_warps=w) for w in (1, 4, 8)], divisible=aligned)
    reps += TA.compile_variants(vadd_kernel, VADD_SIG, {"BLOCK": 1024}, target, [dict(num_warps=4)],
                                divisible=aligned[:3])
    return reps


MM_VARIANTS = (dict(), dict(matrix_instr_nonkdim=16), dict(matrix_instr_nonkdim=32), dict(kpack=2),
               dict(waves_per_eu=2), dict(waves_per_eu=4))


def matmul_reports(target: str | None = None, variants=MM_VARIANTS) -> list[TA.AmdReport]:
    """The fp16 matmul (128x128x64 tiles) for an AMD target, once per set of AMD options."""
    aligned = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")
    return TA.compile_variants(matmul_kernel, MM_SIG, MM_CONST, target or settings.DEFAULT_TARGET, list(variants),
                               divisible=aligned)


def table(reports, labels=None):
    """A pandas table of AMDGCN facts, one row per report."""
    import pandas as pd

    rows = [r.row() for r in reports]
    if labels:
        for row, label in zip(rows, labels, strict=False):
            row["case"] = label
    df = pd.DataFrame(rows)
    if labels:
        df = df[["case"] + [c for c in df.columns if c != "case"]]
    return df


def isa_excerpt(report: TA.AmdReport, pattern: str = r"v_mfma|global_load|buffer_load|ds_read|s_waitcnt",
                lines: int = 12) -> str:
    """The first ``lines`` instructions of the AMDGCN matching ``pattern``."""

    rx = re.compile(pattern)
    hits = [ln.strip() for ln in report.asm.splitlines() if rx.search(ln) and not ln.strip().startswith(";")]
    return "\n".join(hits[:lines])
