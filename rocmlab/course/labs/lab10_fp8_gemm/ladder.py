"""Lab 10's speed ladder: from the FP8 GEMM puzzle's plain kernel to a fast one, one step at a time.

A step is a set of switches of :mod:`rocmlab.course.labs.lab10_fp8_gemm.ladder_kernels` plus a tile.
:func:`check_steps` proves every step computes the same answer (float64 reference, the lab's bound) wherever it
runs, Triton's CPU interpreter included; :func:`isa_fp8_steps` compiles each step offline for an AMD target in its
own FP8 format (FP8 MFMAs, the promotion's multiplies per MFMA, registers, the compiler's occupancy);
:func:`time_fp8_steps` times every step on the GPU here beside ``torch._scaled_mm`` and the bf16 GEMM, in one run.
On a CPU the timing says why it is not run.

Import after :func:`rocmlab.course.puzzles.setup` (the interpreter is chosen before triton is imported).
"""

from __future__ import annotations

import torch

from rocmlab import triton_amd as TA
from rocmlab.course import puzzles as P
from rocmlab.course.ladder import descriptor_memory
from rocmlab.course.labs.lab10_fp8_gemm import ladder_kernels as LK
from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F

FAST_FP8 = dict(GROUP_M=8, EVEN=True, SCALAR_SB=True, DESC=True)

#: (name, what it changes, switches, (BM, BN, num_warps, num_stages) or None for "tuned")
FP8_STEPS = (
    ("v0 plain", "the puzzle's solution: row-major program order, masks", dict(GROUP_M=1, EVEN=False),
     (128, 128, 8, 2)),
    ("v1 grouped", "programs in groups of 8 row tiles share B's tiles in L2", dict(GROUP_M=8, EVEN=False),
     (128, 128, 8, 2)),
    ("v2 even", "no bounds masks (M, N multiples of the tiles)", dict(GROUP_M=8, EVEN=True), (128, 128, 8, 2)),
    ("v3 one weight scale per tile", "BN = 128: the promotion is one multiply-add per element",
     dict(GROUP_M=8, EVEN=True, SCALAR_SB=True), (128, 128, 8, 2)),
    ("v4 descriptors", "A and B tiles through tensor descriptors (TMA on Hopper, buffer loads on AMD)", FAST_FP8,
     (128, 128, 8, 2)),
    ("v5 tuned", "tile, warps and pipeline stages chosen on this GPU", FAST_FP8, None),
)

#: tiles tried by the last step: (BM, BN, num_warps, num_stages)
FP8_TILES = ((128, 128, 8, 2), (128, 128, 8, 3), (128, 128, 4, 3), (128, 128, 4, 4), (128, 128, 8, 4),
             (64, 128, 4, 4), (64, 128, 4, 5), (256, 128, 8, 3))


def fp8_gemm(a, b, a_scale, b_scale, switches: dict, tile=(128, 128, 8, 2)) -> torch.Tensor:
    """The block-scaled FP8 GEMM (layouts of :mod:`rocmlab.course.labs.lab10_fp8_gemm.kernels`) with one ladder step's switches."""
    import triton

    bm, bn, warps, stages = tile
    m, k = a.shape
    n = b.shape[0]
    if switches.get("EVEN") and (m % bm or n % bn):
        raise ValueError(f"the EVEN step needs M, N multiples of the tile: {m}x{n}, tile {bm}x{bn}")
    if switches.get("SCALAR_SB") and (bn != 128 or not switches.get("EVEN")):
        raise ValueError(f"the SCALAR_SB step needs BN = 128 (one weight-scale block per tile) and EVEN: BN={bn}")
    if switches.get("DESC") and not switches.get("EVEN"):
        raise ValueError("the DESC step needs EVEN")
    if switches.get("DESC"):
        descriptor_memory()
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)
    LK.fp8_gemm_ladder[grid](a, b, a_scale, b_scale, c, m, n, k, BM=bm, BN=bn, BK=128, num_warps=warps,
                             num_stages=stages, **switches)
    return c


def check_steps(device: str | None = None, seed: int | None = None) -> list[dict]:
    """Every FP8 GEMM step against a float64 reference on fresh inputs, in this machine's FP8 format:
    [{ladder, step, causal, max_err, bound, ok}]. Small tiles so Triton's CPU interpreter finishes quickly; ``device``
    defaults to the GPU where torch sees one (the same code runs there)."""
    device = device or P.device()       # the GPU where torch sees one (Triton compiles for it), else the CPU
    g = torch.Generator().manual_seed(seed if seed is not None else torch.seed())
    rows = []
    fmt = F.machine_format()
    dt = F.TORCH_DTYPES[fmt]
    m, nn, kk = 96, 256, 256          # 3 x 2 tiles of 32 x 128: a group of 8 row tiles is cut short
    a = (torch.randn(m, kk, generator=g) * 4).to(dt)
    b = (torch.randn(nn, kk, generator=g) * 4).to(dt)
    sa = torch.rand(m, kk // 128, generator=g) + 0.5
    sb = torch.rand(nn // 128, kk // 128, generator=g) + 0.5
    ad = a.double() * sa.double().repeat_interleave(128, 1)
    bd = b.double() * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    ref = ad @ bd.T
    gbound = F.gemm_bound(ad, bd, ref, F.acc_unit())
    a, b, sa, sb = (t.to(device) for t in (a, b, sa, sb))
    for name, _, sw, _tile in FP8_STEPS:
        out = fp8_gemm(a, b, sa, sb, sw, (32, 128, 4, 1)).double().cpu()
        ok = bool(((out - ref).abs() <= gbound).all())
        rows.append(dict(ladder="fp8 gemm", step=name, causal=None, max_err=float((out - ref).abs().max()),
                         bound=float(gbound.max()) if hasattr(gbound, "max") else float(gbound), ok=ok))
    return rows


def isa_fp8_steps(target: str = "gfx942", steps=None) -> list[dict]:
    """FP8 GEMM steps compiled offline for ``target`` in its own FP8 format (v5 at v4's tile): FP8 MFMAs, the
    promotion's multiplies per MFMA, registers and the compiler's occupancy. A compile figure, not a measurement."""
    ty = "*" + F.TRITON_TYPES[F.settings.FP8_FORMATS[target]]
    sig = {"a_ptr": ty, "b_ptr": ty, "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32", "c_ptr": "*bf16", "M": "i32",
           "N": "i32", "K": "i32"}
    rows = []
    for name, what, sw, tile in FP8_STEPS:
        if steps is not None and name not in steps:
            continue
        bm, bn, warps, stages = tile or (128, 128, 8, 2)
        r = TA.compile_amd(LK.fp8_gemm_ladder, sig, dict(dict(SCALAR_SB=False, DESC=False), BM=bm, BN=bn, BK=128, **sw), target, num_warps=warps,
                           num_stages=stages, divisible=tuple(sig))
        mfma = r.mfma()
        fp8 = sum(n for k, n in mfma.items() if "fp8" in k or "f8" in k)
        rows.append({"step": name, "what": what, "target": target, "FP8 MFMA": fp8,
                     "multiplies / MFMA": round(r.count(r"v_(pk_)?mul_f32\w*") / fp8, 2) if fp8 else None,
                     "FMAs / MFMA": round(r.count(r"v_(pk_)?fma_f32\w*|v_fmac_f32\w*") / fp8, 2) if fp8 else None,
                     "VGPRs": r.vgprs, "AGPRs": r.agprs, "compiler's waves/SIMD": r.compiler_occupancy})
    return rows


def time_fp8_steps(shape=(1024, 1536, 7168), tiles=FP8_TILES, steps=None) -> list[dict] | str:
    """Every FP8 GEMM step (or those named in ``steps``) on the GPU here, then per-tensor ``torch._scaled_mm`` and
    the bf16 GEMM, in one run; each step's relative error against a float32 product of the dequantised inputs."""
    if not torch.cuda.is_available():
        return ("not timed: no GPU here; on a GPU this cell times every step against torch._scaled_mm and bf16")
    from rocmlab.profile.timing import graph_bench

    m, n, k = shape
    dt = F.TORCH_DTYPES[F.machine_format()]
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    sa = torch.rand(m, k // 128, device="cuda", generator=g) + 0.5
    sb = torch.rand(n // 128, k // 128, device="cuda", generator=g) + 0.5
    flops = 2.0 * m * n * k
    ref = (a.float() * sa.repeat_interleave(128, 1)) @ (b.float() * sb.repeat_interleave(128, 0)
                                                        .repeat_interleave(128, 1)).T
    rows, prev = [], None
    for name, what, sw, tile in FP8_STEPS:
        if steps is not None and name not in steps:
            continue
        best = None
        for t in ([tile] if tile else tiles):
            try:
                err = float((fp8_gemm(a, b, sa, sb, sw, t).float() - ref).norm() / ref.norm())
                ms = graph_bench(lambda t=t, sw=sw: fp8_gemm(a, b, sa, sb, sw, t))
            except Exception:   # noqa: BLE001,S112 - a tile this GPU cannot run
                continue
            if best is None or ms < best[1]:
                best = (t, ms, err)
        if best is None:
            continue
        t, ms, err = best
        rows.append(dict(step=name, what=what, tile="{}x{} w{} s{}".format(*t), ms=ms, TFLOPs=flops / ms / 1e9,
                         gain=(prev / ms) if prev else None, rel_err=err))
        prev = ms
    one = torch.ones((), device="cuda")
    vendor = {}
    for label, fn in (("torch._scaled_mm per-tensor",
                       lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
                      ("bf16 torch.matmul", lambda a16=a.to(torch.bfloat16), b16=b.to(torch.bfloat16): a16 @ b16.T)):
        try:
            vendor[label] = graph_bench(fn)
            rows.append(dict(step=f"vendor: {label}", what="", ms=vendor[label], TFLOPs=flops / vendor[label] / 1e9))
        except Exception:   # noqa: BLE001,S112 - a recipe this torch/GPU lacks
            continue
    for r in rows:
        for label, ms in vendor.items():
            if r.get("ms"):
                r[f"vs {label}"] = ms / r["ms"]
        r["shape"] = shape
    return rows
