"""The grader's isa check and the needs option, on hand-made compiler results (no compiler needed)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rocmlab.grader import checks, isa_check, load
from rocmlab.grader.spec import CheckSpec
from rocmlab.hip.inspector import Inspection
from rocmlab.hip.resources import IsaLine, KernelIsa, KernelResources


def _inspection(mnemonics, vgprs=40, agprs=0, scratch=0, occupancy=8, ok=True):
    k = KernelResources("gemm_mfma(float const*)", "_Z9gemm_mfmaPKf", "gfx942", vgprs, 20, agprs, 0, scratch, 0, 0,
                        64, occupancy)
    isa = KernelIsa(k.name, k.symbol, [IsaLine(f"\t{m} v[0:3], v[4:5], v[6:7], v[0:3]", "matrix") for m in mnemonics])
    return Inspection(ok, "gfx942", "test compiler", "AMDGCN", [k], [isa], "")


@pytest.fixture
def ctx():
    ex = load("mfma-gemm")
    return checks.Context(ex, ex.solution, SimpleNamespace(backend="cpu", device=None), 0)


def _run(monkeypatch, ctx, ins, **opts):
    monkeypatch.setattr(isa_check, "inspect_submission", lambda c, t: (ins, ""))
    return isa_check.check_isa(ctx, CheckSpec("x", "isa", 2.0, {"kernel": "gemm_mfma", **opts}))


def test_mnemonic_and_count(monkeypatch, ctx):
    ins = _inspection(["v_mfma_f32_16x16x16_f16"] * 4)
    assert _run(monkeypatch, ctx, ins, mnemonic="^v_mfma", min_count=4).status == "passed"
    r = _run(monkeypatch, ctx, ins, mnemonic="^v_mfma", min_count=5)
    assert r.status == "failed" and r.points == 0 and "4 found, 5 needed" in r.message


def test_forbid(monkeypatch, ctx):
    r = _run(monkeypatch, ctx, _inspection(["global_atomic_cmpswap"]), mnemonic="add_f32", forbid="cmpswap")
    assert r.status == "failed" and "global_atomic_cmpswap" in r.message and "not allowed" in r.message


def test_accumulators_scratch_and_occupancy(monkeypatch, ctx):
    good = _run(monkeypatch, ctx, _inspection([], agprs=16), accumulators="registers", min_occupancy=4)
    assert good.status == "passed" and "16 AGPRs" in good.message
    spilled = _run(monkeypatch, ctx, _inspection([], scratch=1040), accumulators="registers")
    assert spilled.status == "failed" and "1040 B of scratch" in spilled.message
    low = _run(monkeypatch, ctx, _inspection([], vgprs=256, occupancy=1), min_occupancy=4)
    assert low.status == "failed" and "occupancy 1 waves/SIMD" in low.message
    assert _run(monkeypatch, ctx, _inspection([]), agprs="required").status == "failed"


def test_missing_kernel_and_missing_compiler(monkeypatch, ctx):
    r = _run(monkeypatch, ctx, _inspection([]), **{"kernel": "other"})
    assert r.status == "failed" and "no kernel 'other'" in r.message
    none = Inspection(False, "gfx942", "", "", [], [], "no compiler", [])
    assert _run(monkeypatch, ctx, none).status == "skipped"


def test_needs_amd_gpu_skips_everywhere_but_rocm(ctx):
    calls = []
    wrapped = isa_check.with_needs(lambda c, s: calls.append(s.id) or "ran")
    spec = CheckSpec("runs", "run", 1.0, {"needs": "amd-gpu", "why": "not run: MFMA needs an AMD GPU"})
    for backend in ("cpu", "cuda"):
        ctx.plat = SimpleNamespace(backend=backend, device=None)
        r = wrapped(ctx, spec)
        assert r.status == "skipped" and r.points == 0 and r.message.startswith("not run: MFMA needs an AMD GPU")
    ctx.plat = SimpleNamespace(backend="rocm", device=None)
    assert wrapped(ctx, spec) == "ran" and calls == ["runs"]
    with pytest.raises(ValueError, match="needs"):
        wrapped(ctx, CheckSpec("runs", "run", 1.0, {"needs": "a-tpu"}))


def test_every_check_type_is_registered_once():
    assert "isa" in checks.CHECKS
    assert all(hasattr(fn, "__wrapped__") for fn in checks.CHECKS.values())
    isa_check.register(checks.CHECKS)   # a second registration does not wrap twice
    assert all(not hasattr(fn.__wrapped__, "__wrapped__") for fn in checks.CHECKS.values())
