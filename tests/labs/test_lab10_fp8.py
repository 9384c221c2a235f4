"""Lab 10's FP8 puzzles and formats: references pass and wrong kernels fail with the learner's message in both FP8
formats (Triton's CPU interpreter, a child process); the error bounds at the formats' edges (max, subnormals, zero,
NaN of e4m3fnuz); reading one format as the other is exactly x2 / x0.5 (and -0 becomes NaN); the interpreter rounds
like the GPUs; the GEMM compiles offline to each target's FP8 MFMA."""

from __future__ import annotations

import ast
import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F
from rocmlab.course import progress

pytest.importorskip("triton")

CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from rocmlab.course import puzzles as P
    mode = P.setup()
    import triton, triton.language as tl
    from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F
    out = {}
    for fmt in ("e4m3fnuz", "e4m3fn"):
        F.use_format(fmt)
        out[fmt] = P.self_test(int(sys.argv[1]), lab=F.LAB)

    @triton.jit
    def rounds(x_ptr, z_ptr, w_ptr, B: tl.constexpr):
        o = tl.arange(0, B)
        x = tl.load(x_ptr + o)
        tl.store(z_ptr + o, x.to(tl.float8e4b8))
        tl.store(w_ptr + o, x.to(tl.bfloat16))
    import torch
    x = torch.tensor([63.5, 62.0, 239.0, 0.0009765625, 167.9, -3.1, 1.0, 0.0])
    z = torch.empty(8, dtype=torch.float8_e4m3fnuz)
    w = torch.empty(8, dtype=torch.bfloat16)
    rounds[(1,)](x, z, w, 8)
    print(json.dumps(dict(mode=mode, rows=out, fp8=z.float().tolist(), want_fp8=x.to(torch.float8_e4m3fnuz).float().tolist(),
                          bf16=w.float().tolist(), want_bf16=x.to(torch.bfloat16).float().tolist())))
""")

EXPECTED = {   # wrong kernel -> a phrase of the message the learner sees (either format)
    "fp8_quant_wrong_other_max": ("values differ", "NaN"),
    "fp8_quant_wrong_other_bytes": ("values differ", "NaN"),
    "fp8_quant_wrong_signed_max": ("values differ",),
    "fp8_gemm_wrong_per_tensor": ("values differ",),
    "fp8_gemm_wrong_scales_transposed": ("values differ",),
    "fp8_gemm_wrong_format_mixed": ("values differ",),
}


def test_references_pass_and_wrong_kernels_fail_in_both_formats():
    seed = str(int.from_bytes(os.urandom(4), "little"))
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", CHILD, seed], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["mode"] == "interpreter"
    for fmt, rows in out["rows"].items():
        assert [r["key"] for r in rows] == ["fp8-quantize", "fp8-gemm"]
        for r in rows:
            assert r["reference"], f"{fmt} {r['key']} reference failed (seed {seed}): {r['reference_message']}"
            for w in r["wrongs"]:
                assert w["caught"], f"{fmt}: wrong kernel {w['name']} passed (seed {seed})"
                assert any(p in w["message"] for p in EXPECTED[w["name"]]), (fmt, w["name"], w["message"])
                if "are NaN" in w["message"]:        # the hint is FP8's range, never a softmax's
                    assert "FP8's range" in w["message"] and "softmax" not in w["message"], w["message"]
        # the overflow itself: 448 as the max on e4m3fnuz (max 240) casts values past 240, which are NaN there
        if fmt == "e4m3fnuz":
            over = next(w for w in rows[0]["wrongs"] if w["name"] == "fp8_quant_wrong_other_max")
            assert "are NaN" in over["message"] and "max is 240" in over["message"], over["message"]
    # the interpreter rounds to nearest even with the carry, as the GPUs (63.5 -> 64 in e4m3fnuz, not 32)
    assert out["fp8"] == out["want_fp8"] and out["fp8"][0] == 64.0
    assert out["bf16"] == out["want_bf16"] and out["bf16"][4] == 168.0


def test_signatures_points_and_format_choice():
    from rocmlab.course.labs.lab10_fp8_gemm import kernels as fp8_kernels  # noqa: F401 - imports triton; only the source is read below
    src = inspect.getsource(sys.modules["rocmlab.course.labs.lab10_fp8_gemm.kernels"])
    defs = {n.name: [a.arg for a in n.args.args] for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef)}
    for key, p in F.PUZZLES.items():
        want = [a.arg for a in ast.parse(p.signature + " pass").body[0].args.args]
        assert defs[p.solution] == want and all(defs[w] == want for w in p.wrongs), key
    assert progress.LAB_TASKS[F.LAB] == F.POINTS == {"fp8-quantize": 2, "fp8-gemm": 4}
    assert F.machine_format("gfx950") in ("e4m3fn", "e4m3fnuz")
    if not torch.cuda.is_available():
        assert F.machine_format("gfx942") == "e4m3fnuz" and F.machine_format("gfx950") == "e4m3fn"
        with pytest.raises(ValueError, match="no FP8 format"):
            F.machine_format("gfx90a")
    with pytest.raises(ValueError, match="unknown FP8 format"):
        F.use_format("e4m3")


def test_ulp_at_the_edges_of_each_format():
    ulp = lambda v, f: float(F.ulp(torch.tensor([v]), f)[0])  # noqa: E731
    # max: 240 in [128, 256) -> 16; 448 in [256, 512) -> 32
    assert ulp(240, "e4m3fnuz") == 16 and ulp(448, "e4m3fn") == 32
    # zero and subnormals: the subnormal step, 2^-10 (fnuz) and 2^-9 (OCP)
    assert ulp(0, "e4m3fnuz") == 2.0 ** -10 and ulp(0, "e4m3fn") == 2.0 ** -9
    assert ulp(3 * 2.0 ** -10, "e4m3fnuz") == 2.0 ** -10 and ulp(2.0 ** -8, "e4m3fn") == 2.0 ** -9
    # the smallest normal: 2^-7 (fnuz), 2^-6 (OCP): spacing 2^-10 / 2^-9 continues across it
    assert ulp(2.0 ** -7, "e4m3fnuz") == 2.0 ** -10 and ulp(2.0 ** -6, "e4m3fn") == 2.0 ** -9
    # every representable value's neighbour is exactly one ulp away (checked over all finite codes)
    for fmt, dt in F.TORCH_DTYPES.items():
        vals = torch.arange(256, dtype=torch.uint8).view(dt).float()
        pos = torch.unique(vals[torch.isfinite(vals) & (vals >= 0)]).double()
        assert torch.equal(pos[1:] - pos[:-1], F.ulp(pos[:-1], fmt)), fmt
        assert float(pos.max()) == F.fmax(fmt)


def test_nan_and_zero_handling_of_e4m3fnuz():
    fnuz, ocp = torch.float8_e4m3fnuz, torch.float8_e4m3fn
    assert torch.isnan(torch.tensor([0x80], dtype=torch.uint8).view(fnuz).float()).all()     # fnuz's only NaN
    assert torch.tensor([-0.0]).to(fnuz).view(torch.uint8).item() == 0                      # no -0 in fnuz
    assert torch.tensor([-0.0]).to(ocp).view(torch.uint8).item() == 0x80                    # OCP has -0
    assert torch.isnan(torch.tensor([250.0]).to(fnuz).float()).all()                         # torch does not saturate
    # quantising: clamp first, so the max code is written, never NaN; an all-zero block quantises to zeros
    x = torch.zeros(2, 256)
    x[0, :128] = torch.linspace(-5, 5, 128)
    x[0, 7] = 1e30
    q, s = F.quantize(x, "e4m3fnuz")
    assert torch.isfinite(q.float()).all() and q.float().abs().max() == 240 and (q.float()[1] == 0).all()
    assert float(s[1, 0]) == 1.0


def test_the_bounds_are_derived_and_tight():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(32, 512, generator=g) * torch.exp(torch.empty(32, 1).uniform_(-6, 6, generator=g))
    for fmt in ("e4m3fnuz", "e4m3fn"):
        q, s = F.quantize(x, fmt)
        exact = x.double() / s.double().repeat_interleave(F.BLOCK, 1)
        use = (q.double() - exact).abs() / F.ulp(exact, fmt)
        assert float(use.max()) <= 0.5 + 1e-6 and float(use.max()) > 0.4   # round to nearest: half an ulp, reached
        wrong = q.view(torch.uint8).view(F.TORCH_DTYPES[F.other(fmt)]).double()
        ok = torch.isfinite(wrong)
        assert ((wrong[ok] - exact[ok]).abs() > F.ulp(exact[ok], fmt)).any()                 # the other format fails
    # GEMM: the bf16-rounded exact product is within the bound; two bf16 spacings off is not
    a = torch.randn(16, 256, generator=g, dtype=torch.float64)
    b = torch.randn(8, 256, generator=g, dtype=torch.float64)
    ref = a @ b.T
    bound = F.gemm_bound(a, b, ref, 2.0 ** -24)
    rounded = ref.float().to(torch.bfloat16).double()
    assert ((rounded - ref).abs() <= bound).all()
    assert not ((ref * (1 + 2 * 2.0 ** -7) - ref).abs() <= bound).all()


def test_misread_is_exactly_x2_and_x_half():
    x = torch.randn(8, 256) * 3
    x[:, 5] = -1e-9          # rounds to -0 in OCP
    up = F.misread("e4m3fnuz", "e4m3fn", x)
    down = F.misread("e4m3fn", "e4m3fnuz", x)
    assert up["ratio_min"] == up["ratio_max"] == 2.0
    assert down["ratio_min"] == down["ratio_max"] == 0.5 and down["nan"] >= 8     # every -0 is a fnuz NaN
    same = F.misread("e4m3fn", "e4m3fn", x)
    assert same["ratio_min"] == same["ratio_max"] == 1.0 and same["nan"] == 0


def test_gemm_compiles_to_each_targets_fp8_mfma():
    from rocmlab.course.labs.lab10_fp8_gemm import lab as L

    mt = L.mfma_table(L.mfma_reports())
    row = {(r["target"], r["FP8 format"]): r for r in mt.to_dict("records")}
    assert "v_mfma_f32_32x32x16_fp8_fp8" in row[("gfx942", "e4m3fnuz")]["MFMA"]
    assert "f8f6f4" in row[("gfx950", "e4m3fn")]["MFMA"]
    assert row[("gfx942", "e4m3fnuz")]["FP8 MFMA"] == 4 * row[("gfx950", "e4m3fn")]["FP8 MFMA"] > 0   # 16 vs 64 K each
    assert row[("gfx942", "e4m3fn")]["FP8 MFMA"] == 0 and "f16" in row[("gfx942", "e4m3fn")]["MFMA"]  # fallback
    assert row[("gfx950", "e4m3fnuz")]["FP8 MFMA"] == 0
    assert row[("gfx942", "e4m3fnuz")]["native"] and not row[("gfx942", "e4m3fn")]["native"]
    for key, r in row.items():   # arch VGPRs apart from AGPRs; the calculator agrees with the compiler's listing
        assert r["VGPRs"] <= 256 and r["AGPRs"] is not None, key
        assert r["waves/SIMD"] <= r["compiler's waves/SIMD"], key


def test_timing_says_why_not_on_a_cpu():
    from rocmlab.course.labs.lab10_fp8_gemm import lab as L
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: timing runs in benchmarks/lab09_lab10_gpu.py")
    assert L.time_gemm().startswith("not timed")


@pytest.mark.parametrize("target", ["gfx942", "gfx950"])
def test_both_solutions_compile_offline_in_the_targets_format(target):
    from rocmlab.course.labs.lab10_fp8_gemm import lab as L

    reps = L.solution_reports(target)
    cvt = {"gfx942": "v_cvt_pk_fp8_f32", "gfx950": "v_cvt_scalef32_pk_fp8_f32"}[target]
    assert reps["fp8-quantize"].count(cvt) > 0                 # the hardware's float32 -> FP8 conversion
    assert sum(n for k, n in reps["fp8-gemm"].mfma().items() if "fp8" in k or "f8" in k) > 0
