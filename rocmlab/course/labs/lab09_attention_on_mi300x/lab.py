"""Lab 09's tables: the FlashAttention solution compiled offline for gfx942/gfx950 under each tile and AMD
option, and (on a GPU) its time against ``torch.nn.functional.scaled_dot_product_attention``.

Import after :func:`rocmlab.course.puzzles.setup`. The compile figures are the puzzle solution's own
(:func:`rocmlab.course.labs.lab09_attention_on_mi300x.kernels.flash_causal`), compiled by Triton's AMD backend: what an MI300X or
MI355X would run, not a measurement of one.
"""

from __future__ import annotations

import math

import torch

from rocmlab import triton_amd as TA
from rocmlab.course.labs.lab09_attention_on_mi300x import kernels as K

SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "N": "i32", "sm_scale": "fp32"}
ALIGNED = ("q_ptr", "k_ptr", "v_ptr", "o_ptr", "N")
HEAD_DIM = 128

#: The tile Triton's own FlashAttention tutorial autotunes for NVIDIA (python/tutorials/06-fused-attention.py:
#: BLOCK_M 64/128, BLOCK_N 32/64/128, num_stages 2-4 on NVIDIA but [1] on HIP).
H100_TILE = dict(BM=128, BN=128, num_stages=3)
#: The tile this lab recommends on MI300X: BM 128, BN 64, num_stages 2, 4 waves.
CHOSEN_TILE = dict(BM=128, BN=64, num_stages=2)

#: (label, BM, BN, AMD options) for the resource table; the quick list is a subset.
VARIANTS = (
    ("H100 tile: 128x128, 3 stages", 128, 128, dict(num_stages=3)),
    ("128x128, 2 stages", 128, 128, dict(num_stages=2)),
    ("chosen: 128x64, 2 stages", 128, 64, dict(num_stages=2)),
    ("128x64, 1 stage", 128, 64, dict(num_stages=1)),
    ("128x64, waves_per_eu 2", 128, 64, dict(num_stages=2, waves_per_eu=2)),
    ("128x64, nonkdim 16", 128, 64, dict(num_stages=2, matrix_instr_nonkdim=16)),
    ("64x64, 2 stages", 64, 64, dict(num_stages=2)),
)
QUICK = ("H100 tile: 128x128, 3 stages", "128x128, 2 stages", "chosen: 128x64, 2 stages", "128x64, waves_per_eu 2",
         "128x64, nonkdim 16")


def tile_reports(target: str, quick: bool = True) -> list[tuple[str, TA.AmdReport]]:
    """(label, report) for each tile/option variant of the causal FlashAttention solution on ``target``."""
    chosen = [v for v in VARIANTS if not quick or v[0] in QUICK]
    out = []
    for bm, bn in dict.fromkeys((v[1], v[2]) for v in chosen):
        group = [v for v in chosen if (v[1], v[2]) == (bm, bn)]
        reps = TA.compile_variants(K.flash_causal, SIG, {"D": HEAD_DIM, "BM": bm, "BN": bn}, target,
                                   [dict(num_warps=4, **v[3]) for v in group], divisible=ALIGNED)
        out += [(v[0], r) for v, r in zip(group, reps, strict=True)]
    order = [v[0] for v in VARIANTS]
    return sorted(out, key=lambda lr: order.index(lr[0]))


def resource_row(label: str, r: TA.AmdReport) -> dict:
    o = r.occupancy()
    mfma = r.mfma()
    return {"case": label, "target": r.target, "VGPRs": r.vgprs, "AGPRs": r.agprs, "spills": r.vgpr_spills, "scratch B": r.scratch_bytes,
            "LDS B": r.lds_bytes, "LDS limit B": r.lds_limit, "fits LDS": r.fits_lds,
            "waves/SIMD": getattr(o, "waves_per_simd", None), "compiler's waves/SIMD": r.compiler_occupancy,
            "limited by": getattr(o, "limiting", None),
            "v_mfma": sum(mfma.values()), "MFMA": ", ".join(mfma) or "-"}


def resource_table(reports):
    import pandas as pd

    return pd.DataFrame([resource_row(label, r) for label, r in reports])


# --- on a GPU: time the solution against torch's SDPA -------------------------------------------------------

def flash_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, bm: int = 128, bn: int = 64,
                  num_warps: int = 4, num_stages: int = 2) -> torch.Tensor:
    """The puzzle solution on (B, H, N, D) float16 tensors (B and H merged into one grid axis)."""
    import triton

    b, h, n, d = q.shape
    qf, kf, vf = (t.reshape(b * h, n, d).contiguous() for t in (q, k, v))
    o = torch.empty(b * h, n, d, device=q.device, dtype=torch.float32)
    kern = K.flash_causal if causal else K.flash_fwd
    kern[(triton.cdiv(n, bm), b * h)](qf, kf, vf, o, n, 1.0 / math.sqrt(d), D=d, BM=bm, BN=bn,
                                       num_warps=num_warps, num_stages=num_stages)
    return o.reshape(b, h, n, d)


def attention_flops(b: int, h: int, n: int, d: int, causal: bool) -> float:
    """4 B H N^2 D (two matmuls), halved with the causal mask."""
    return 4.0 * b * h * n * n * d / (2 if causal else 1)


SHAPES = ((4, 16, 1024, 128, True), (4, 16, 4096, 128, True), (4, 16, 4096, 128, False), (1, 32, 8192, 128, True))
CONFIGS = ((128, 64, 4, 2), (128, 64, 8, 2), (128, 128, 8, 2), (64, 64, 4, 2), (128, 64, 4, 1))


def sdpa_backends():
    """(label, context manager factory) for each SDPA backend torch can be asked for here."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    names = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION")
    return [(n, (lambda b=getattr(SDPBackend, n): sdpa_kernel(b))) for n in names if hasattr(SDPBackend, n)]


def time_attention(shapes=SHAPES, configs=CONFIGS) -> list[dict] | str:
    """TFLOP/s of the Triton solution (each of ``configs``) and of each torch SDPA backend on each shape,
    measured in the same run; on a CPU, the reason nothing is timed."""
    if not torch.cuda.is_available():
        return ("not timed: Triton's CPU interpreter runs each program in numpy, one after another, so a time says "
                "nothing about a GPU; on a GPU this cell times the solution against torch's SDPA")
    rows = []
    for shape in shapes:
        rows += _time_shape(*shape, configs=configs)
    return rows


def _time_shape(b: int, h: int, n: int, d: int, causal: bool, configs) -> list[dict]:
    import torch.nn.functional as Fn

    from rocmlab.profile.timing import graph_bench

    g = torch.Generator(device="cuda").manual_seed(n)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    flops = attention_flops(b, h, n, d, causal)
    base = dict(shape=(b, h, n, d), causal=causal)
    ref = Fn.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    rows = []
    for (bm, bn, w, st) in configs:
        def run(bm=bm, bn=bn, w=w, st=st):
            return flash_forward(q, k, v, causal, bm, bn, w, st)
        try:
            err = float((run() - ref).abs().max())
            ms = graph_bench(run)
        except Exception as exc:   # noqa: BLE001 - a config that does not fit this GPU (shared memory): say so
            rows.append(dict(base, impl=f"triton {bm}x{bn} w{w} s{st}", ms=None, TFLOPs=None,
                             note=f"{type(exc).__name__}: {str(exc)[:80]}"))
            continue
        rows.append(dict(base, impl=f"triton {bm}x{bn} w{w} s{st}", ms=ms, TFLOPs=flops / ms / 1e9,
                         max_err_vs_sdpa=err))

    def sdpa():
        return Fn.scaled_dot_product_attention(q, k, v, is_causal=causal)
    for name, ctx in sdpa_backends():
        try:
            with ctx():
                sdpa()
                ms = graph_bench(sdpa)
        except Exception as exc:   # noqa: BLE001 - a backend not built or not eligible for this shape
            first = str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__
            rows.append(dict(base, impl=f"sdpa {name}", ms=None, TFLOPs=None, note=f"not available: {first}"))
            continue
        rows.append(dict(base, impl=f"sdpa {name}", ms=ms, TFLOPs=flops / ms / 1e9))
    sdpa_ms = [r["ms"] for r in rows if r["impl"].startswith("sdpa") and r.get("ms")]
    for r in rows:
        if r.get("ms") and sdpa_ms:
            r["vs_best_sdpa"] = min(sdpa_ms) / r["ms"]
    return rows


#: puzzle -> (argument types, constexprs) of its solution at the puzzle's sizes, for an offline compile
PUZZLE_TYPES = {
    "row-softmax": ({"x_ptr": "*fp32", "z_ptr": "*fp32", "N0": "i32", "T": "i32"}, {"B1": 64}),
    "online-softmax": ({"x_ptr": "*fp32", "v_ptr": "*fp32", "z_ptr": "*fp32", "N0": "i32", "T": "i32"}, {"B1": 64}),
    "attention-tile": ({"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "M": "i32", "N": "i32",
                        "sm_scale": "fp32"}, {"D": 32, "BM": 32, "BN": 64}),
    "flash-forward": (SIG, {"D": 32, "BM": 16, "BN": 16}),
    "causal": (SIG, {"D": 32, "BM": 16, "BN": 16}),
    "gqa": (dict(SIG, H="i32", HKV="i32"), {"D": 32, "BM": 16, "BN": 16}),
    "paged-decode": ({"q_ptr": "*fp16", "k_cache_ptr": "*fp16", "v_cache_ptr": "*fp16", "block_table_ptr": "*i32",
                      "seq_lens_ptr": "*i32", "o_ptr": "*fp32", "H": "i32", "HKV": "i32", "MAXB": "i32",
                      "sm_scale": "fp32"}, {"D": 32, "BS": 16}),
}


def solution_reports(target: str) -> dict[str, TA.AmdReport]:
    """Every Lab 09 puzzle's reference solution compiled offline for ``target``."""
    from rocmlab.course.labs.lab09_attention_on_mi300x import puzzles as A

    return {key: TA.compile_amd(getattr(K, A.PUZZLES[key].solution), sig, const, target)
            for key, (sig, const) in PUZZLE_TYPES.items()}
