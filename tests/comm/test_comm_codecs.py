"""rocmlab.comm.torch_codec: the exact reference, wire sizes, bounds, bad input (no processes, no Triton)."""

from __future__ import annotations

import os

import pytest
import torch

from rocmlab.comm import torch_codec as C

SEED = int.from_bytes(os.urandom(4), "little")   # fresh data each run; printed on failure


def test_wire_sizes_reproduce_the_article_and_vllm():
    n = (8 << 20) // 2                                      # 8 MB of float16
    assert C.wire_bytes("q4", n) == 2.25 * (1 << 20)        # 2 MB of codes + 256 KB of scales
    assert C.get_codec("q4").codes_bytes(n) == 2 << 20
    assert round(C.get_codec("q4").compression(), 2) == 3.56   # "about 3.6x"
    assert (C.qr_atom_bytes("q4"), C.qr_atom_bytes("q6"), C.qr_atom_bytes("q8")) == (1152, 1664, 2176)
    assert C.qr_atom_bytes("fp") == 4096
    # the formula: n*bits/8 + n/block*scale_bytes, for other parameters too
    assert C.wire_bytes("q6", 4096, block_size=64, scale_dtype=torch.float32) == 4096 * 6 // 8 + 64 * 4
    # and a wrong formula would fail: Q6 is not 6/16 of the input without its scales
    assert C.qr_atom_bytes("q6") != 4096 * 6 // 16


@pytest.mark.parametrize("name", C.CODECS)
@pytest.mark.parametrize("dtype", C.INPUT_DTYPES)
def test_payload_size_matches_the_formula_and_roundtrip_is_within_bound(name, dtype):
    codec = C.get_codec(name)
    x = C.activations("outliers", 4096 * 3, seed=SEED, dtype=dtype)
    enc = C.encode_reference(x, codec)
    assert enc.payload.dtype == torch.uint8 and enc.nbytes == codec.wire_bytes(x.numel())
    y32 = C.decode_reference(enc, torch.float32)
    err = (y32 - x.float()).abs()
    bound = C.error_bound(x, codec)
    assert bool((err <= bound).all()), f"seed {SEED}: max err/bound {(err / bound.clamp_min(1e-30)).max()}"
    if codec.quantized:   # the bound is tight, not vacuous: the worst value comes close to it
        assert float((err / bound).max()) > 0.4, f"seed {SEED}"
    y = C.decode_reference(enc)
    assert y.dtype == dtype and torch.equal(y, y32.to(dtype))


def test_the_bound_check_can_fail():
    x = C.activations("normal", 4096, seed=SEED)
    y = C.decode_reference(C.encode_reference(x, "q4"), torch.float32)
    # Q4's error does not fit Q8's bound: the comparison catches a wrong codec
    assert not bool(((y - x.float()).abs() <= C.error_bound(x, "q8")).all())


def test_codes_use_the_full_range_with_quickreduce_negative_scale():
    x = torch.tensor([1.0] + [0.0] * 31 + [-1.0] + [0.5] * 31, dtype=torch.float16)
    enc = C.encode_reference(x, "q4")
    d = enc.scales().float()
    assert d[0] < 0 and d[0] == -1 / 8                       # scale = absmax * -1/8
    q = C._unpack(enc.codes(), 4)
    assert q[0] == 0 and q[1] == 8                            # +max -> code 0 (-8 + bias 8); 0 -> bias
    assert q[32] == 15                                        # -max -> +8, clamped to 7 -> code 15
    y = C.decode_reference(enc, torch.float32)
    assert y[0] == 1.0 and y[32] == -7 / 8                    # one full step lost, as the bound allows


def test_fp8_reference_equals_torch_native_e4m3fn_on_the_cpu():
    g = torch.Generator().manual_seed(SEED)
    v = (torch.randn(1 << 16, generator=g) * torch.exp2(torch.randint(-14, 9, (1 << 16,), generator=g).float()))
    v = v.clamp(-448, 448)
    v[:6] = torch.tensor([0.0, 448.0, -448.0, 2 ** -6, 2 ** -9, 1.5 * 2 ** -9])
    native = v.to(torch.float8_e4m3fn).view(torch.uint8).to(torch.int32)
    assert torch.equal(C.e4m3_bits(v), native), f"seed {SEED}"
    codes = torch.arange(256)
    codes = codes[(codes & 0x7F) != 0x7F]
    assert torch.equal(C.e4m3_values(codes), codes.to(torch.uint8).view(torch.float8_e4m3fn).float()
                       .where(codes != 0x80, torch.tensor(0.0)))
    assert C.e4m3_values(torch.tensor([0x80])).item() == 0.0 and not torch.signbit(C.e4m3_values(torch.tensor([0x80])))


def test_fnuz_reference_equals_torch_native_e4m3fnuz_on_the_cpu():
    g = torch.Generator().manual_seed(SEED)
    v = (torch.randn(1 << 16, generator=g) * torch.exp2(torch.randint(-15, 8, (1 << 16,), generator=g).float()))
    v = v.clamp(-240, 240)
    v[:8] = torch.tensor([0.0, 240.0, -240.0, 2 ** -7, 2 ** -10, 1.5 * 2 ** -10, -0.0, -2 ** -12])
    native = v.to(torch.float8_e4m3fnuz).view(torch.uint8).to(torch.int32)
    assert torch.equal(C.e4m3fnuz_bits(v), native), f"seed {SEED}"
    assert int(C.e4m3fnuz_bits(torch.tensor([-0.0, -2 ** -12])).max()) == 0       # no minus zero (0x80 is NaN)
    codes = torch.arange(256)
    codes = codes[codes != 0x80]
    assert torch.equal(C.e4m3fnuz_values(codes), codes.to(torch.uint8).view(torch.float8_e4m3fnuz).float())
    # the OCP function is not the fnuz one: the same value has other bits (a swapped format fails)
    assert not torch.equal(C.e4m3_bits(v[1:]), native[1:])


@pytest.mark.parametrize("target,codec,fmax", [("gfx942", "fp8fnuz", 240.0), ("gfx950", "fp8", 448.0),
                                               ("sm_90", "fp8", 448.0)])
def test_fp8_format_is_chosen_by_target(target, codec, fmax):
    name = C.fp8_codec_for(target)
    assert name == codec and C.get_codec(name).fp8_max == fmax
    x = C.activations("normal", 4096, seed=SEED)
    d = C.encode_reference(x, name).scales().float()
    a = x.float().view(-1, 32).abs().amax(1)
    assert torch.allclose(d, (a / fmax).half().float())          # absmax / 240 on MI300X, / 448 elsewhere


def test_target_without_fp8_is_refused_with_a_fix():
    with pytest.raises(C.CodecError, match="no FP8 conversion in hardware: use q8"):
        C.fp8_codec_for("gfx90a")


def test_zero_and_tiny_blocks():
    x = torch.zeros(64, dtype=torch.float16)
    x[32:] = torch.randn(32).half() * 1e-6
    for name in C.QUANTIZED:
        y = C.decode_reference(C.encode_reference(x, name))
        assert torch.isfinite(y.float()).all()
        assert float((y[:32].float()).abs().max()) == 0.0
        assert bool(((y.float() - x.float()).abs() <= C.error_bound(x, name)).all()), name


@pytest.mark.parametrize("bad,msg", [
    (torch.randn(64), "unsupported dtype torch.float32"),
    (torch.arange(64), "integer"),
    (torch.randn(70).half(), "not a multiple of the block size 32: pad the tensor with 26 zeros"),
])
def test_bad_input_names_the_problem_and_the_fix(bad, msg):
    with pytest.raises(C.CodecError, match=msg.replace("(", r"\(")):
        C.encode_reference(bad, "q4")


def test_bad_parameters():
    with pytest.raises(C.CodecError, match="block_size 48"):
        C.get_codec("q4", block_size=48)
    with pytest.raises(C.CodecError, match="unknown codec 'q5'"):
        C.get_codec("q5")
    assert C.get_codec("INT6").name == "q6" and C.get_codec("e4m3fn").name == "fp8"
    assert C.get_codec("e4m3fnuz").name == "fp8fnuz"
    with pytest.raises(C.CodecError, match="names two formats"):   # ambiguous: say which
        C.get_codec("e4m3")


def test_error_metrics_and_vllm_criterion():
    x = C.activations("vllm-test", 4096, seed=SEED)
    m = C.error_metrics(x, C.decode_reference(C.encode_reference(x, "q4")))
    assert m.vllm_pass and 0 < m.rel_l2 < 0.1
    bad = x.clone().float()
    bad[7] += 2.5 + 0.1 * abs(float(x[7])) + 0.01         # just outside atol + rtol*|ref|
    m2 = C.error_metrics(x, bad)
    assert not m2.vllm_pass and m2.vllm_violations == 1


@pytest.mark.parametrize("kind", C.ACTIVATIONS)
def test_activations_are_fresh_and_shaped(kind):
    a = C.activations(kind, 8192, seed=SEED)
    b = C.activations(kind, 8192, seed=SEED + 1)
    assert a.shape == (8192,) and not torch.equal(a, b)
    if kind == "heavy-tailed":   # heavier tails than a Gaussian
        z = a.float()
        assert float(((z - z.mean()) ** 4).mean() / z.var() ** 2) > 4
    if kind == "outliers":
        assert float(a.float().abs().max()) > 15
