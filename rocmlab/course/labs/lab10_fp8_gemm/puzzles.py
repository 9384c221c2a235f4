"""Lab 10's graded puzzles: FP8 quantisation per 1 x 128 block and the block-scaled FP8 GEMM, and the two
FP8 formats. Importing this module registers the puzzles in :data:`rocmlab.course.puzzles.LABS` under
``10-fp8-gemm``; it needs torch only (not triton).

The formats (``rocmlab.settings.FP8_FORMATS``, ``rocmlab.comm.torch_codec``): both are 1-4-3 bits.

- **e4m3fnuz** (MI300X/MI325X, gfx942): exponent bias 8, max 240, smallest normal 2^-7, subnormal step 2^-10,
  one zero, NaN is 0x80, no inf.
- **e4m3fn**, the OCP format (MI355X gfx950, NVIDIA sm_89+): bias 7, max 448, smallest normal 2^-6, subnormal
  step 2^-9, +-0, NaN 0x7f/0xff, no inf.

The same byte is **twice as large** read as e4m3fn as read as e4m3fnuz (one less exponent bias), except the
NaN codes: fnuz's +-240 (0x7f/0xff) are OCP NaNs, and OCP's -0 (0x80) is the fnuz NaN.

Error bounds, derived from the formats (not tuned):

- quantise: ``|code - x / s| <= ulp(x / s)``, one spacing of the format at that magnitude (``2^(e-3)`` in the
  binade ``[2^e, 2^(e+1))``, the subnormal step below the smallest normal). Rounding to nearest is within half
  of it; a full spacing also admits round-toward-zero, which Triton's CPU interpreter does.
- GEMM: FP8 products are exact in float32; ``|c - ref| <= 2^-8 |ref| + (128 u_acc + (K/128) 2^-24) S`` with
  ``S = |a s_a| @ |b s_b|^T``: bfloat16's unit roundoff 2^-8 for the output; a 128-long FP8 dot accumulated at
  ``u_acc`` (float32's 2^-24 on MI300X's MFMA and the CPU; **2^-14 on NVIDIA Hopper**, whose FP8 tensor cores
  keep about 14 bits, DeepSeek-V3 report section 3.3.2); and the float32 sum of the K/128 scaled block products.
"""

from __future__ import annotations

import torch

from rocmlab import settings
from rocmlab.comm import torch_codec as C
from rocmlab.course import puzzles as P
from rocmlab.course.puzzles import Puzzle, cdiv, make_case, rand_int

LAB = "10-fp8-gemm"
KERNELS = "rocmlab.course.labs.lab10_fp8_gemm.kernels"
#: The scale block: 1 x 128 for activations, 128 x 128 for weights (DeepSeek-V3, AMD's FP8 GEMM problem).
BLOCK = 128

TORCH_DTYPES = {"e4m3fnuz": torch.float8_e4m3fnuz, "e4m3fn": torch.float8_e4m3fn}
TRITON_TYPES = {"e4m3fnuz": "fp8e4b8", "e4m3fn": "fp8e4nv"}    # the names in triton.language / signatures

#: The format the puzzles draw their FP8 tensors in; set with :func:`use_format` (the lab does).
FORMAT = settings.FP8_FORMATS[settings.DEFAULT_TARGET] or "e4m3fnuz"


def fmax(fmt: str) -> float:
    """240 (e4m3fnuz) or 448 (e4m3fn)."""
    return C.get_codec(fmt).fp8_max


def bias(fmt: str) -> int:
    return C.FP8_FORMAT[C.get_codec(fmt).name][2]


def other(fmt: str) -> str:
    return "e4m3fn" if fmt == "e4m3fnuz" else "e4m3fnuz"


def machine_format(target: str | None = None) -> str:
    """The FP8 format the puzzles must use here: the GPU's own (an NVIDIA GPU or gfx950: e4m3fn; gfx942:
    e4m3fnuz); on a CPU the format of ``target`` (default MI300X, gfx942)."""
    from rocmlab.machine.detect import current

    plat = current()
    if plat.backend == "cuda":
        return "e4m3fn"
    if plat.backend == "rocm":
        if settings.FP8_FORMATS.get(plat.target or ""):
            return settings.FP8_FORMATS[plat.target]
    t = target or settings.DEFAULT_TARGET
    fmt = settings.FP8_FORMATS.get(t)
    if not fmt:
        known = ", ".join(k for k, v in settings.FP8_FORMATS.items() if v)
        raise ValueError(f"target {t!r} has no FP8 format: use one of {known}")
    return fmt


def use_format(fmt: str) -> str:
    """Draw the puzzles' FP8 tensors in ``fmt`` ('e4m3fnuz' or 'e4m3fn') from now on."""
    global FORMAT
    if fmt not in TORCH_DTYPES:
        raise ValueError(f"unknown FP8 format {fmt!r}: use 'e4m3fnuz' (gfx942) or 'e4m3fn' (OCP: gfx950, NVIDIA)")
    FORMAT = fmt
    return fmt


def ulp(v: torch.Tensor, fmt: str) -> torch.Tensor:
    """The spacing of FP8 format ``fmt`` at |v| (float64): ``2^(floor(log2|v|) - 3)`` for normal values, the
    subnormal step ``2^(1 - bias - 3)`` below the smallest normal ``2^(1 - bias)`` (and at 0)."""
    v = v.double().abs()
    b = bias(fmt)
    sub = 2.0 ** (1 - b - 3)
    e = torch.floor(torch.log2(v.clamp_min(2.0 ** (1 - b))))
    return torch.where(v < 2.0 ** (1 - b), torch.full_like(v, sub), torch.exp2(e - 3))


def block_scales(x: torch.Tensor, fmt: str, block: int = BLOCK) -> torch.Tensor:
    """float64 scales ``amax / FP8_MAX`` per 1 x ``block`` of each row of x (1 for an all-zero block)."""
    m, k = x.shape
    amax = x.double().reshape(m, k // block, block).abs().amax(-1)
    return torch.where(amax > 0, amax / fmax(fmt), torch.ones_like(amax))


def quantize(x: torch.Tensor, fmt: str, block: int = BLOCK) -> tuple[torch.Tensor, torch.Tensor]:
    """(codes in ``fmt``, float32 scales (M, K // block)): per-1 x block quantisation in torch, the reference
    of puzzle 1 (torch rounds to nearest even, and clamps first: torch's cast does not saturate)."""
    s = block_scales(x, fmt, block)
    m, k = x.shape
    y = (x.double().reshape(m, k // block, block) / s[..., None]).clamp(-fmax(fmt), fmax(fmt))
    return y.reshape(m, k).float().to(TORCH_DTYPES[fmt]), s.float()


def misread(fmt_written: str, fmt_read: str, x: torch.Tensor) -> dict:
    """Quantise x per block in ``fmt_written``, read the bytes as ``fmt_read``, dequantise with the same scales:
    the ratio to the right answer, and how many values became NaN."""
    q, s = quantize(x, fmt_written)
    right = q.float().double()
    wrong = q.view(torch.uint8).view(TORCH_DTYPES[fmt_read]).float().double()
    ok = torch.isfinite(wrong) & (right != 0)
    ratio = (wrong[ok] / right[ok])
    return dict(written=fmt_written, read_as=fmt_read,
                ratio_min=float(ratio.min()) if ok.any() else float("nan"),
                ratio_max=float(ratio.max()) if ok.any() else float("nan"),
                nan=int((~torch.isfinite(wrong)).sum()), values=x.numel(),
                rel_error=float((wrong.nan_to_num(0) - right).norm() / right.norm()))


def acc_unit() -> float:
    """The unit roundoff of a 128-long FP8 dot's accumulation here: 2^-14 on an NVIDIA GPU (Hopper's FP8 tensor
    cores keep about 14 bits, DeepSeek-V3 section 3.3.2), float32's 2^-24 elsewhere (MI300X MFMA, the CPU)."""
    return 2.0 ** -14 if torch.cuda.is_available() and torch.version.hip is None else 2.0 ** -24


# --- puzzle 1: quantise per 1 x 128 block ------------------------------------------------------------------

def _quant_case(s, g):
    m, kb = s["M"], s["KB"]
    # blocks of very different magnitudes (1e-3 .. 1e3), some all-zero values: a per-tensor scale would fail
    mag = torch.exp(torch.empty(m, kb, 1).uniform_(-7, 7, generator=g))
    x = (torch.randn(m, kb, BLOCK, generator=g) * mag).reshape(m, kb * BLOCK)
    x[torch.rand(m, kb * BLOCK, generator=g) < 0.02] = 0.0
    return make_case(dict(x=x, M=m, K=kb * BLOCK), (m, kb * BLOCK), (m, kb), ["x", "z", "M", "K"], dict(BK=BLOCK),
                 out_dtype=TORCH_DTYPES[FORMAT])


def _quant_ref(case):
    x = case.inputs["x"].detach().cpu()
    s = block_scales(x, FORMAT)
    m, k = x.shape
    return (x.double().reshape(m, k // BLOCK, BLOCK) / s[..., None]).reshape(m, k).float()


def _quant_bound(case, expected):
    return ulp(expected, FORMAT) + expected.double().abs() * 2.0 ** -20


# --- puzzle 2: the block-scaled GEMM ------------------------------------------------------------------------

def _scales(g, *shape) -> torch.Tensor:
    """Scales spread over 2^-4 .. 2^4 (so that the wrong block's scale is visibly wrong)."""
    return torch.exp2(torch.randint(-4, 5, shape, generator=g).float()) * torch.empty(*shape).uniform_(0.5, 1.0, generator=g)


def _gemm_case(s, g):
    m, nb, kb = s["M"], s["NB"], s["KB"]
    n, k = nb * BLOCK, kb * BLOCK
    dt = TORCH_DTYPES[FORMAT]
    a = (torch.randn(m, k, generator=g) * 2).clamp(-fmax(FORMAT), fmax(FORMAT)).to(dt)
    b = (torch.randn(n, k, generator=g) * 2).clamp(-fmax(FORMAT), fmax(FORMAT)).to(dt)
    ins = dict(a=a, b=b, a_scale=_scales(g, m, kb), b_scale=_scales(g, nb, kb), M=m, N=n, K=k)
    return make_case(ins, (m, n), (cdiv(m, 32), cdiv(n, 64)), ["a", "b", "a_scale", "b_scale", "z", "M", "N", "K"],
                 dict(BM=32, BN=64, BK=BLOCK), out_dtype=torch.bfloat16)


def dequantized(case) -> tuple[torch.Tensor, torch.Tensor]:
    """float64 (a * a_scale, b * b_scale) of a GEMM case, each scale over its 1 x 128 or 128 x 128 block."""
    a = case.inputs["a"].detach().cpu().double()
    b = case.inputs["b"].detach().cpu().double()
    sa = case.inputs["a_scale"].detach().cpu().double().repeat_interleave(BLOCK, 1)
    sb = case.inputs["b_scale"].detach().cpu().double().repeat_interleave(BLOCK, 0).repeat_interleave(BLOCK, 1)
    return a * sa, b * sb


def _gemm_ref(case):
    a, b = dequantized(case)
    return (a @ b.T).float()


def gemm_bound(a: torch.Tensor, b: torch.Tensor, ref: torch.Tensor, u_acc: float) -> torch.Tensor:
    """The GEMM error bound (float64) for dequantised a (M, K), b (N, K): see the module docstring."""
    k = a.shape[1]
    s = a.abs() @ b.abs().T
    return 2.0 ** -8 * ref.double().abs() + (BLOCK * u_acc + (k // BLOCK) * 2.0 ** -24) * s + 2.0 ** -133


def _gemm_bound(case, expected):
    a, b = dequantized(case)
    return gemm_bound(a, b, expected, acc_unit())


#: What NaN outputs mean in an FP8 puzzle: FP8's range, not a missing store or a softmax.
FP8_NAN = ("most likely FP8's range: e4m3fnuz (MI300X) has no inf and its max is 240, so a value past 240 cast to it "
           "becomes NaN (e4m3fn's max is 448); divide by scale = amax / FP8_MAX with this machine's FP8_MAX (F.FORMAT), "
           "clamp to +-FP8_MAX before the store, and read codes in the format they were written in (0x80 is "
           "e4m3fnuz's NaN, e4m3fn's -0). Else: a value never written (a missing store)")


def _register() -> None:
    if "fp8-quantize" in P.LABS.get(LAB, {}):
        return
    P.register(Puzzle(
        "fp8-quantize", "Quantise activations to FP8, one scale per 1 x 128 block",
        "x `(M, K)` float32, `K` a multiple of 128; z `(M, K)` is FP8 **in this machine's format** (`F.FORMAT`: "
        "e4m3fnuz on MI300X, max 240; OCP e4m3fn on MI355X and NVIDIA, max 448). Grid `(M, K // 128)`: each program "
        "takes one 1 x 128 block, `scale = max|x| / FP8_MAX`, `z = fp8(x / scale)`. The checker reads your codes "
        "with the format's decoder and compares them with `x / scale`; blocks span 1e-3 to 1e3.",
        "def fp8_quant_kernel(x_ptr, z_ptr, M, K, BK: tl.constexpr):",
        lambda g: dict(M=rand_int(g, 6, 16), KB=rand_int(g, 2, 4)),
        _quant_case,
        _quant_ref,
        ("`tl.max(tl.abs(x), axis=0)` is the block's amax; FP8_MAX is 240 for e4m3fnuz and 448 for e4m3fn "
         "(`z_ptr.dtype.element_ty == tl.float8e4b8` tells you which at compile time).",
         "Clamp `x / scale` to +-FP8_MAX before the store (a cast past the max gives NaN on e4m3fnuz, which has "
         "no inf); `tl.store` converts float32 to the pointer's FP8 type."),
        solution="fp8_quant", lab=LAB, points=2, module=KERNELS,
        wrongs=("fp8_quant_wrong_other_max", "fp8_quant_wrong_other_bytes", "fp8_quant_wrong_signed_max"),
        bound=_quant_bound, nan_text=FP8_NAN,
        bound_text="|your code - x / scale| <= one spacing of the format at |x / scale| (its ulp; 2^-10 or 2^-9 "
                   "below the smallest normal)"))

    P.register(Puzzle(
        "fp8-gemm", "Block-scaled FP8 GEMM (DeepSeek-V3's recipe)",
        "a `(M, K)` and b `(N, K)` FP8 (this machine's format), `a_scale (M, K // 128)` (1 x 128 blocks), "
        "`b_scale (N // 128, K // 128)` (128 x 128 blocks), float32; `c = (a * a_scale) @ (b * b_scale)^T` in "
        "bfloat16, `(M, N)`. Grid `(cdiv(M, BM), cdiv(N, BN))`, `BK = 128`: per K block, an FP8 `tl.dot` "
        "(accumulated in float32), scaled by the row's and the column's scale, added to a float32 accumulator.",
        "def fp8_gemm_kernel(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr, "
        "BN: tl.constexpr, BK: tl.constexpr):",
        lambda g: dict(M=rand_int(g, 33, 90), NB=rand_int(g, 2, 3), KB=rand_int(g, 2, 4)),
        _gemm_case,
        _gemm_ref,
        ("`tl.dot(a, tl.trans(b))` of a `BM x 128` and a `BN x 128` FP8 tile is a `BM x BN` float32 block product; "
         "scale it by `sa[:, None] * sb[None, :]` before adding it to `acc`.",
         "Row i's scale for K block kb is `a_scale[i, kb]` at `i * (K // 128) + kb`; column j's is "
         "`b_scale[j // 128, kb]` at `(j // 128) * (K // 128) + kb`. Store `acc.to(tl.bfloat16)`."),
        solution="fp8_gemm", lab=LAB, points=4, module=KERNELS,
        wrongs=("fp8_gemm_wrong_per_tensor", "fp8_gemm_wrong_scales_transposed", "fp8_gemm_wrong_format_mixed"),
        bound=_gemm_bound, nan_text=FP8_NAN,
        bound_text="|yours - float64 dequantised reference| <= 2^-8 |ref| + (128 u_acc + K/128 * 2^-24) "
                   "(|a s_a| @ |b s_b|^T), u_acc = 2^-24 (MFMA, CPU) or 2^-14 (Hopper FP8 tensor cores)"))


_register()
PUZZLES = P.LABS[LAB]
POINTS = {k: p.points for k, p in PUZZLES.items()}
