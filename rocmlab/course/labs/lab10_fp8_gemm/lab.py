"""Lab 10's tables: the block-scaled FP8 GEMM solution compiled offline for gfx942/gfx950 in each FP8 format
(the MFMA instructions each emits, counted), and (on a GPU) its time against ``torch._scaled_mm`` and the
bf16 GEMM on the same shapes.

Import after :func:`rocmlab.course.puzzles.setup`.
"""

from __future__ import annotations

import torch

from rocmlab import triton_amd as TA
from rocmlab.course.labs.lab10_fp8_gemm import kernels as K
from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F

TILE = {"BM": 128, "BN": 128, "BK": F.BLOCK}


def gemm_signature(fmt: str) -> dict:
    ty = "*" + F.TRITON_TYPES[fmt]
    return {"a_ptr": ty, "b_ptr": ty, "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32", "c_ptr": "*bf16",
            "M": "i32", "N": "i32", "K": "i32"}


#: (target, format): each AMD target with FP8 in its own format, then in the other one (the mistake).
COMBOS = tuple((t, f) for t in F.settings.AMD_TARGETS if F.settings.FP8_FORMATS[t]
               for f in sorted(F.TORCH_DTYPES, key=lambda f: f != F.settings.FP8_FORMATS[t]))


def mfma_reports(combos=COMBOS) -> list[tuple[str, str, TA.AmdReport]]:
    """(target, format, report) of the GEMM solution (128 x 128 x 128 tiles) compiled offline."""
    out = []
    for target, fmt in combos:
        sig = gemm_signature(fmt)
        out.append((target, fmt, TA.compile_amd(K.fp8_gemm, sig, TILE, target, divisible=tuple(sig))))
    return out


def mfma_table(reports):
    import pandas as pd

    rows = []
    for target, fmt, r in reports:
        mfma = r.mfma()
        o = r.occupancy()
        native = F.settings.FP8_FORMATS.get(target) == fmt
        rows.append({"target": target, "FP8 format": fmt, "native": native,
                     "MFMA": ", ".join(f"{n}x {k}" for k, n in mfma.items()) or "-",
                     "FP8 MFMA": sum(n for k, n in mfma.items() if "fp8" in k or "f8" in k),
                     "VGPRs": r.vgprs, "AGPRs": r.agprs, "spills": r.vgpr_spills, "LDS B": r.lds_bytes,
                     "waves/SIMD": getattr(o, "waves_per_simd", None),
                     "compiler's waves/SIMD": r.compiler_occupancy})
    return pd.DataFrame(rows)


def misread_table(n_rows: int = 64, k: int = 1024, seed: int = 0):
    """Activations quantised per 1 x 128 block in one format and read as the other: how far off."""
    import pandas as pd

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n_rows, k, generator=g) * torch.exp(torch.empty(n_rows, 1).uniform_(-4, 4, generator=g))
    x[:, ::97] = -0.0          # negative zeros: OCP writes 0x80 for them, which e4m3fnuz reads as NaN
    x[:, 1::89] = -1e-9        # tiny negatives that round to -0 in OCP
    rows = [F.misread(w, r, x) for w in ("e4m3fnuz", "e4m3fn") for r in ("e4m3fnuz", "e4m3fn")]
    return pd.DataFrame(rows)


# --- on a GPU -----------------------------------------------------------------------------------------------

SHAPES = ((1024, 1536, 7168), (1024, 4608, 7168), (6144, 1536, 7168), (1024, 7168, 2048))   # gpu-mode's AMD problem
#: (BM, BN, num_warps, num_stages) of the solution timed on each shape (the best is the solution's figure)
CONFIGS = ((128, 128, 8, 2), (128, 128, 4, 2), (64, 128, 4, 2), (128, 64, 4, 3))


def fp8_gemm(a, b, a_scale, b_scale, bm: int = 128, bn: int = 128, num_warps: int = 8, num_stages: int = 2):
    import triton

    m, k = a.shape
    n = b.shape[0]
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    K.fp8_gemm[(triton.cdiv(m, bm), triton.cdiv(n, bn))](a, b, a_scale, b_scale, c, m, n, k, BM=bm, BN=bn,
                                                           BK=F.BLOCK, num_warps=num_warps, num_stages=num_stages)
    return c


def time_gemm(shapes=SHAPES, fmt: str | None = None) -> list[dict] | str:
    """TFLOP/s of the Triton block-scaled FP8 GEMM, ``torch._scaled_mm`` (row-wise and per-tensor scales: the FP8
    recipes torch runs on every backend) and the bf16 GEMM, per shape, in the same run; on a CPU the reason it is
    not timed."""
    if not torch.cuda.is_available():
        return ("not timed: no GPU here (Triton's CPU interpreter says nothing about speed); on a GPU this cell times "
                "the Triton FP8 GEMM against torch._scaled_mm and the bf16 GEMM")
    fmt = fmt or F.machine_format()
    rows = []
    for shape in shapes:
        rows += _time_shape(*shape, fmt=fmt)
    return rows


def _time_shape(m: int, n: int, k: int, fmt: str) -> list[dict]:
    from rocmlab.profile.timing import graph_bench

    dt = F.TORCH_DTYPES[fmt]
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    sa = torch.rand(m, k // F.BLOCK, device="cuda", generator=g) + 0.5
    sb = torch.rand(n // F.BLOCK, k // F.BLOCK, device="cuda", generator=g) + 0.5
    flops = 2.0 * m * n * k
    base = dict(M=m, N=n, K=k, format=fmt)
    rows = []

    def add(impl, fn, **extra):
        try:
            fn()
            ms = graph_bench(fn)
            rows.append(dict(base, impl=impl, ms=ms, TFLOPs=flops / ms / 1e9, **extra))
        except Exception as exc:   # noqa: BLE001 - a recipe this torch/GPU lacks: say so in the table
            rows.append(dict(base, impl=impl, ms=None, TFLOPs=None, note=f"{type(exc).__name__}: {str(exc)[:90]}"))

    ad = a.double() * sa.double().repeat_interleave(F.BLOCK, 1)
    bd = b.double() * sb.double().repeat_interleave(F.BLOCK, 0).repeat_interleave(F.BLOCK, 1)
    ref = ad @ bd.T
    bound = F.gemm_bound(ad, bd, ref, F.acc_unit())
    del ad, bd
    for (bm, bn, w, st) in CONFIGS:
        def run(bm=bm, bn=bn, w=w, st=st):
            return fp8_gemm(a, b, sa, sb, bm, bn, w, st)
        try:
            within = bool(((run().double() - ref).abs() <= bound).all())
        except Exception as exc:   # noqa: BLE001 - a tile this GPU cannot run: say so
            rows.append(dict(base, impl=f"triton block-scaled {bm}x{bn} w{w} s{st}", ms=None, TFLOPs=None,
                             note=f"{type(exc).__name__}: {str(exc)[:90]}"))
            continue
        add(f"triton block-scaled {bm}x{bn} w{w} s{st}", run, within_bound=within)
    row_a = torch.rand(m, 1, device="cuda", generator=g) + 0.5
    row_b = torch.rand(1, n, device="cuda", generator=g) + 0.5
    one = torch.ones((), device="cuda")
    add("torch._scaled_mm row-wise",
        lambda: torch._scaled_mm(a, b.t(), scale_a=row_a, scale_b=row_b, out_dtype=torch.bfloat16))
    add("torch._scaled_mm per-tensor",
        lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    a16, b16 = a.to(torch.bfloat16), b.to(torch.bfloat16)
    add("torch bf16 matmul", lambda: a16 @ b16.t())
    bf16 = [r["ms"] for r in rows if r["impl"] == "torch bf16 matmul" and r.get("ms")]
    for r in rows:
        if r.get("ms") and bf16:
            r["vs_bf16"] = bf16[0] / r["ms"]
    return rows


def format_table():
    """The two FP8 formats side by side, from the codecs' own constants."""
    import pandas as pd

    rows = []
    for fmt in ("e4m3fnuz", "e4m3fn"):
        b = F.bias(fmt)
        rows.append({"format": fmt, "targets": ", ".join(t for t, f in F.settings.FP8_FORMATS.items() if f == fmt),
                     "exponent bias": b, "max": F.fmax(fmt), "smallest normal": 2.0 ** (1 - b),
                     "subnormal step": 2.0 ** (1 - b - 3), "zeros": "+0 only" if fmt == "e4m3fnuz" else "+0 and -0",
                     "NaN codes": "0x80" if fmt == "e4m3fnuz" else "0x7f, 0xff", "inf": "none"})
    return pd.DataFrame(rows)


EDGE_VALUES = (0.0, -0.0, 2.0 ** -10, 2.0 ** -9, 2.0 ** -7, 1.0, 239.0, 240.0, 250.0, 448.0, 500.0, float("nan"))


def edge_table(values=EDGE_VALUES):
    """torch's cast of values at the formats' edges to each format (decoded back to float), and the byte."""
    import pandas as pd

    x = torch.tensor(values, dtype=torch.float32)
    out = {"value": [repr(v) for v in values]}
    for fmt, dt in F.TORCH_DTYPES.items():
        q = x.to(dt)
        out[f"{fmt} decoded"] = q.float().tolist()
        out[f"{fmt} byte"] = [f"0x{b:02x}" for b in q.view(torch.uint8).tolist()]
    return pd.DataFrame(out)


def solution_reports(target: str) -> dict[str, TA.AmdReport]:
    """Both Lab 10 puzzle solutions compiled offline for ``target``, in its own FP8 format."""
    fmt = F.settings.FP8_FORMATS[target]
    ty = "*" + F.TRITON_TYPES[fmt]
    quant = {"x_ptr": "*fp32", "z_ptr": ty, "M": "i32", "K": "i32"}
    return {"fp8-quantize": TA.compile_amd(K.fp8_quant, quant, {"BK": F.BLOCK}, target),
            "fp8-gemm": TA.compile_amd(K.fp8_gemm, gemm_signature(fmt), {"BM": 32, "BN": 64, "BK": F.BLOCK}, target)}
