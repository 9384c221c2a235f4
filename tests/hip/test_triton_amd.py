"""rocmlab.triton_amd: Triton kernels compiled offline for gfx942 / gfx950, and what the AMDGCN shows.
Each fact has a control that differs (a wrong reading would fail)."""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton")
import triton.language as tl  # noqa: E402

from rocmlab import triton_amd as TA  # noqa: E402

ADD_SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32", "n": "i32"}
MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32"}
MM_CONST = {"BM": 128, "BN": 128, "BK": 64}
ALIGNED = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K")


@triton.jit
def vadd(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(z_ptr + o, tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


@triton.jit
def mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


def test_wave64_num_warps_and_vector_load_width():
    r4, r8 = TA.compile_variants(vadd, ADD_SIG, {"BLOCK": 1024}, "gfx942", [dict(num_warps=4), dict(num_warps=8)],
                                 divisible=("x_ptr", "y_ptr", "z_ptr", "n"))
    assert r4.wavefront_size == 64 and r4.threads_per_workgroup == 256 and r8.threads_per_workgroup == 512
    assert r4.loads() == {"16B": 2}          # 1024 floats / 256 lanes = 4 per lane: one 16-byte load per input
    assert r8.loads() == {"8B": 2}           # 512 lanes: 2 floats each
    unaligned = TA.compile_amd(vadd, ADD_SIG, {"BLOCK": 1024}, "gfx942", divisible=("x_ptr", "y_ptr", "z_ptr"))
    assert "16B" not in unaligned.loads()    # n not known divisible: the masked loads stay 4 bytes wide


def test_mfma_shape_kpack_and_waves_per_eu():
    base, m16, kp2, w4 = TA.compile_variants(
        mm, MM_SIG, MM_CONST, "gfx942",
        [dict(matrix_instr_nonkdim=32), dict(matrix_instr_nonkdim=16), dict(kpack=2), dict(waves_per_eu=4)],
        divisible=ALIGNED)
    assert set(base.mfma()) == {"v_mfma_f32_32x32x8_f16"} and set(m16.mfma()) == {"v_mfma_f32_16x16x16_f16"}
    assert "ds_read_b128" in kp2.lds_ops() and "ds_read_b128" not in base.lds_ops()
    assert w4.vgprs <= 128 < base.vgprs      # 4 waves per SIMD leave 512 / 4 = 128 VGPRs per wave
    ob, o4 = base.occupancy(), w4.occupancy()
    assert ob.limits["VGPRs"] < o4.limits["VGPRs"] and ob.limiting == "VGPRs"
    assert o4.limiting == "LDS"              # fewer VGPRs alone do not raise occupancy: 64 KiB of LDS per CU does not fit more
    assert base.lds_bytes > 0


def test_gfx950_has_the_double_k_mfma_and_loads_to_lds():
    r = TA.compile_amd(mm, MM_SIG, MM_CONST, "gfx950", divisible=ALIGNED)
    assert set(r.mfma()) == {"v_mfma_f32_32x32x16_f16"} and "16B to LDS" in r.loads()


def test_compiling_under_the_interpreter_goes_through_a_child(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert TA.interpreting()
    r = TA.compile_amd(vadd, ADD_SIG, {"BLOCK": 256}, "gfx942", num_warps=1, divisible=("x_ptr", "y_ptr", "z_ptr", "n"))
    assert r.wavefront_size == 64 and r.loads() == {"16B": 2}


def test_bad_input_names_the_fix():
    with pytest.raises(TA.TritonAmdError, match="not an AMD target"):
        TA.compile_amd(vadd, ADD_SIG, {"BLOCK": 256}, "sm_90")
    with pytest.raises(TA.TritonAmdError, match=r"no type or value for argument\(s\) \['n'\]"):
        TA.compile_amd(vadd, {"x_ptr": "*fp32", "y_ptr": "*fp32", "z_ptr": "*fp32"}, {"BLOCK": 256})
    with pytest.raises(TA.TritonAmdError, match="unknown option"):
        TA.compile_variants(vadd, ADD_SIG, {"BLOCK": 256}, "gfx942", [dict(warps=4)])
