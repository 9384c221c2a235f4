"""The speed ladders of Labs 09 and 10 (rocmlab.course.labs.lab09_attention_on_mi300x.ladder, rocmlab.course.labs.lab10_fp8_gemm.ladder): every step gives the reference's answer on fresh
inputs in Triton's CPU interpreter (a child process: the interpreter is chosen before triton is imported), a wrong
comparison fails, a step's preconditions are refused with the reason, and the offline gfx942/gfx950 code shows
what the steps change (fewer multiplies and masks per MFMA)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("triton")

CHILD = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("ignore")
    from rocmlab.course import puzzles as P
    P.setup()                 # the interpreter on a CPU; on a GPU machine the kernels compile for the GPU
    import torch
    dev = P.device()
    from rocmlab.course.labs.lab09_attention_on_mi300x import ladder as L
    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10
    rows = L.check_steps(n=96, d=32, seed=int(sys.argv[1])) + L10.check_steps(seed=int(sys.argv[1]))
    # control: the non-causal answer compared with the causal reference must fail the same bound
    g = torch.Generator().manual_seed(int(sys.argv[1]))
    q, k, v = (torch.randn(1, 2, 96, 32, generator=g).to(torch.float16).to(dev) for _ in range(3))
    wrong = L.flash(q, k, v, False, dict(L.OFF), (32, 16, 4, 1)).double().cpu()
    ref = L.attention_reference(q, k, v, True).cpu()
    control = float((wrong - ref).abs().max()) > 2.0 ** -9 * float(v.abs().max())
    errors = []
    # control: the key-split step's non-causal answer against the causal reference must fail too
    wrong_split = L.flash(q, k, v, False, L.ONE_LOOP, (32, 16, 4, 1, 2)).double().cpu()
    split_control = float((wrong_split - ref).abs().max()) > 2.0 ** -9 * float(v.abs().max())
    for bad in ((q[:, :, :90], dict(L.OFF, EVEN=True), (32, 16, 4, 1)), (q, dict(L.OFF, SPLIT=True), (32, 64, 4, 1)),
                (q, dict(L.OFF, DESC=True), (32, 16, 4, 1)), (q, dict(L.OFF, ONE_LOOP=True), (32, 16, 4, 1)),
                (q, dict(L.FAST_ATTENTION, SPLIT_KV=2), (32, 16, 4, 1))):
        try:
            L.flash(bad[0], bad[0], bad[0], True, bad[1], bad[2])
        except ValueError as exc:
            errors.append(str(exc))
    a = torch.zeros(64, 256).to(torch.float8_e4m3fn).to(dev)
    for sw, tile in ((dict(GROUP_M=8, EVEN=True, SCALAR_SB=True), (32, 64, 4, 1)),
                     (dict(GROUP_M=8, EVEN=False, DESC=True), (32, 128, 4, 1)),
                     (dict(GROUP_M=8, EVEN=True, SPLIT_K=2), (32, 128, 4, 1)),
                     (L10.UNROLLED, (32, 128, 4, 1, 3)), (L10.UNROLLED, (32, 128, 4, 1, 1, 2, 1)),
                     (L10.UNROLLED, (32, 128, 4, 1, 1, 2, 0, 1)), (L10.AHEAD, (32, 128, 4, 1, 2, 1, 0, 1)),
                     (L10.AHEAD, (32, 128, 4, 1, 1, 1, 1, 1))):
        b = a if tile[1] == 64 or not sw.get("EVEN") else torch.zeros(128, 256).to(torch.float8_e4m3fn).to(dev)
        try:
            L10.fp8_gemm(a, b, torch.ones(64, 2, device=dev), torch.ones(b.shape[0] // 128 or 1, 2, device=dev), sw,
                         tile)
        except ValueError as exc:
            errors.append(str(exc))
    # control: the split-K, in-place step's answer against a reference whose weight scales are transposed must fail the bound
    from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F
    dt = F.TORCH_DTYPES[F.machine_format()]
    a8 = (torch.randn(64, 512, generator=g) * 4).to(dt)
    b8 = (torch.randn(256, 512, generator=g) * 4).to(dt)
    sa = torch.rand(64, 4, generator=g) + 0.5
    sb = torch.rand(2, 4, generator=g) + 0.5
    out = L10.fp8_gemm(a8.to(dev), b8.to(dev), sa.to(dev), sb.to(dev), L10.IN_PLACE, (32, 128, 4, 1, 2)).double().cpu()
    ad = a8.double() * sa.double().repeat_interleave(128, 1)
    swapped = sb.t().reshape(2, 4)                              # the (K/128, N/128) reading of a (N/128, K/128) array
    bd = b8.double() * swapped.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    ref = ad @ bd.T
    fp8_control = bool(((out - ref).abs() > F.gemm_bound(ad, bd, ref, F.acc_unit())).any())
    # the same control for the stream-K step (tiles split between 5 programs)
    out = L10.fp8_gemm(a8.to(dev), b8.to(dev), sa.to(dev), sb.to(dev), L10.STREAM, (32, 128, 4, 1),
                       units=5).double().cpu()
    stream_control = bool(((out - ref).abs() > F.gemm_bound(ad, bd, ref, F.acc_unit())).any())
    print(json.dumps(dict(rows=rows, control=control, errors=errors, fp8_control=fp8_control,
                          split_control=split_control, stream_control=stream_control)))
""")


def test_every_step_matches_the_reference_in_the_interpreter():
    import os
    seed = int.from_bytes(os.urandom(3), "little")
    done = subprocess.run([sys.executable, "-c", CHILD, str(seed)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    rows = out["rows"]
    assert {r["ladder"] for r in rows} == {"attention", "fp8 gemm"} and len(rows) == 2 * 21 + 17   # 15 steps + 6 cases, causal and not; FP8
    bad = [r for r in rows if not r["ok"]]
    assert not bad, (seed, bad)
    assert out["control"], "a wrong (non-causal) answer passed the causal bound"
    assert out["fp8_control"], "the split-K in-place GEMM passed against a reference with transposed weight scales"
    assert out["split_control"], "a wrong (non-causal) key-split answer passed the causal bound"
    assert out["stream_control"], "the stream-K GEMM passed against a reference with transposed weight scales"
    errors = out["errors"]
    assert len(errors) == 13 and "multiple of both tiles" in errors[0] and "BM a multiple" in errors[1], errors
    assert "DESC step needs EVEN" in errors[2] and "ONE_LOOP step needs EVEN" in errors[3], errors
    assert "builds on HEADS_FIRST" in errors[4], errors
    assert "BN = 128" in errors[5] and "DESC step needs EVEN" in errors[6], errors
    assert "build on DESC and SCALAR_SB" in errors[7] and "SPLIT_K = 3" in errors[8], errors
    assert "choose one" in errors[9], errors
    assert "SCALES_AHEAD and STREAM_K steps build on SA_MMAJOR" in errors[10], errors
    assert "SPLIT_K = 1, SCALES_AHEAD on" in errors[11], errors
    assert "RESCALE (in-place accumulation) is not offered" in errors[12], errors   # the race found on an H100


def test_offline_code_shows_what_the_steps_change():
    from rocmlab.course.labs.lab09_attention_on_mi300x import ladder as L
    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10

    plain, even = L.isa_steps("gfx942", d=64, steps=("v0 plain", "v3 even"))
    for r in (plain, even):
        assert r["v_mfma"] > 0 and r["VGPRs"] <= 256 and r["compiler's waves/SIMD"] >= 1, r
    # exp2 with the folded scale: fewer multiplies per MFMA; no bounds/causal masks off the diagonal: fewer selects
    assert even["multiplies / MFMA"] < plain["multiplies / MFMA"]
    assert even["v_cndmask (masks) / MFMA"] < plain["v_cndmask (masks) / MFMA"] / 2
    (fast950,) = L.isa_steps("gfx950", d=64, steps=("v3 even",))
    assert fast950["v_mfma"] > 0 and fast950["compiler's waves/SIMD"] >= 1
    # the last steps (fp16 O, tensor descriptors) compile for both AMD targets, on MFMAs, within the registers
    for target in ("gfx942", "gfx950"):
        (desc,) = L.isa_steps(target, d=64, steps=("v6 descriptors",))
        assert desc["v_mfma"] > 0 and desc["VGPRs"] <= 256 and desc["compiler's waves/SIMD"] >= 1, desc
    for target in ("gfx942", "gfx950"):
        (gemm,) = L10.isa_fp8_steps(target, steps=("v4 descriptors",))
        assert gemm["FP8 MFMA"] > 0 and gemm["VGPRs"] <= 256 and gemm["compiler's waves/SIMD"] >= 1, gemm


def test_timing_says_why_not_on_a_cpu():
    import torch

    from rocmlab.course.labs.lab09_attention_on_mi300x import ladder as L
    from rocmlab.course.labs.lab10_fp8_gemm import ladder as L10
    if torch.cuda.is_available():
        pytest.skip("a GPU is here: benchmarks/lab09_lab10_gpu.py times the ladders")
    assert L.time_steps().startswith("not timed") and L10.time_fp8_steps().startswith("not timed")
