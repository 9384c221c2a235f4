"""The fused Triton codec: bit-exact with the torch reference (Triton's interpreter on the CPU, the
compiled kernel on a GPU), and what it compiles to for MI300X (gfx942) without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from rocmlab.comm import torch_codec as C
from rocmlab.comm import triton_codec as T

needs_triton = pytest.mark.skipif(not T.available(), reason="Triton is not installed (pip install triton)")

CHECK = textwrap.dedent("""
    import json, sys, torch
    from rocmlab.comm import torch_codec as C, triton_codec as T
    seed = int(sys.argv[1]); bad = []; n_checks = 0
    for i, name in enumerate(C.QUANTIZED):
        for dt, bs, sd in [(torch.float16, 32, torch.float16), (torch.bfloat16, 16, torch.bfloat16),
                           (torch.float16, 128, torch.float32)]:
            codec = C.get_codec(name, bs, sd)
            x = C.activations(C.ACTIVATIONS[i % 3], 2048 * 3 + bs * 5, seed=seed + i, dtype=dt)
            x[:bs] = 0; x[bs:2 * bs] *= 1e-6                  # a zero block, a tiny block
            ref = C.encode_reference(x, codec)
            # the default (FLAT=1: encode's [ROWS, BLOCK] tile, decode's store-layout loads), a persistent
            # FLAT=1 loop, and a persistent loop on the old layouts (FLAT=0)
            for cfg in [None, (2048, 4, 2, 3, 1), (1024, 4, 2, 3, 0)]:
                got = T.encode(x, codec, impl="triton", config=cfg)
                y = T.decode(ref, impl="triton", config=cfg)
                y32 = T.decode(ref, torch.float32, impl="triton", config=cfg)
                n_checks += 1
                if not (torch.equal(ref.payload, got.payload)
                        and torch.equal(C.decode_reference(ref).view(torch.int16), y.view(torch.int16))
                        and torch.equal(C.decode_reference(ref, torch.float32).view(torch.int32), y32.view(torch.int32))):
                    bad.append([name, str(dt), bs, str(sd), str(cfg)])
    # payloads at 16-byte-aligned offsets inside a larger buffer, as the two-shot receives them
    seg = 32 * 9
    xs = C.activations("normal", seg, seed=seed)
    for name in C.QUANTIZED:
        p = C.encode_reference(xs, name)
        slot = -(-p.nbytes // 16) * 16
        buf = torch.zeros(3 * slot, dtype=torch.uint8)
        buf[slot:slot + p.nbytes] = p.payload
        sub = C.Encoded(buf[slot:slot + p.nbytes], p.codec, seg, xs.dtype)
        n_checks += 1
        if not torch.equal(T.decode(sub, impl="triton").view(torch.int16), C.decode_reference(p).view(torch.int16)):
            bad.append([name, "offset payload"])
    # every FP8 code (subnormals, both zeros, 0x7F/0xFF, fnuz's 0x80) against random scales, both
    # decode layouts, in both formats
    for f8name in C.FP8_CODECS:
        fp8 = C.get_codec(f8name)
        n8 = 256 * 8
        g8 = torch.Generator().manual_seed(seed)
        codes8 = torch.arange(256, dtype=torch.uint8).repeat(8)[torch.randperm(n8, generator=g8)]
        sc8 = (torch.randn(n8 // 32, generator=g8) * torch.exp2(torch.randint(-24, 4, (n8 // 32,), generator=g8).float())).half()
        sc8[0] = 0.0; sc8[1] = 6e-8
        e8 = C.Encoded(torch.cat([codes8, sc8.view(torch.uint8)]), fp8, n8, torch.float16)
        assert e8.payload.numel() == fp8.wire_bytes(n8)
        for cfg in [None, (1024, 4, 1, 0, 0)]:
            for odt, iv in ((torch.float16, torch.int16), (torch.float32, torch.int32)):
                n_checks += 1
                if not torch.equal(T.decode(e8, odt, impl="triton", config=cfg).view(iv),
                                   C.decode_reference(e8, odt).view(iv)):
                    bad.append([f8name + " all codes", str(cfg), str(odt)])
    # the two FP8 formats give different bytes: a kernel that ignored FNUZ would fail above
    ocp = T.encode(x, "fp8", impl="triton").payload
    caught_format = not torch.equal(ocp, C.encode_reference(x, "fp8fnuz").payload)
    # a corrupted payload must not pass: the comparison can fail
    enc = T.encode(x, "q6", impl="triton"); enc.payload[3] ^= 0x10
    caught = not torch.equal(enc.payload, C.encode_reference(x, "q6").payload)
    print(json.dumps(dict(bad=bad, checks=n_checks, caught=caught and caught_format)))
""")


@needs_triton
def test_triton_interpreter_is_bit_exact_with_the_reference():
    seed = int.from_bytes(os.urandom(4), "little")
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", CHECK, str(seed)], capture_output=True, text=True, env=env,
                         timeout=400)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["checks"] == 3 * 3 * len(C.QUANTIZED) + len(C.QUANTIZED) + 4 * len(C.FP8_CODECS)
    assert out["bad"] == [], f"seed {seed}: {out['bad']}"
    assert out["caught"]


@needs_triton
def test_cpu_tensor_without_the_interpreter_is_refused_with_a_fix():
    if T.INTERPRET:
        pytest.skip("this process runs Triton's interpreter")
    with pytest.raises(C.CodecError, match="TRITON_INTERPRET=1"):
        T.encode(torch.randn(64).half(), "q4", impl="triton")
    assert T.resolve_impl("auto", torch.device("cpu")) == "torch"


@needs_triton
def test_hwfp8_variant_is_refused_where_it_cannot_be_exact():
    with pytest.raises(C.CodecError, match="fp8 codecs"):
        T.encode(torch.randn(64).half(), "q8", impl="triton", variant="hwfp8")
    if T.INTERPRET:
        with pytest.raises(C.CodecError, match="GPU only"):
            T.encode(torch.randn(64).half(), "fp8", impl="triton", variant="hwfp8")


@needs_triton
def test_mi300x_compile_report_shows_wave64_and_16_byte_loads():
    rep = T.compile_report("q6", "encode", "gfx942")
    assert rep["wavefront_size"] == 64
    assert rep["loads_16B"] >= 1 and rep["vgpr_count"] and rep["vgpr_count"] <= 128


@needs_triton
def test_gfx942_hwfp8_encode_uses_the_hardware_fnuz_conversion():
    """Offline AMDGCN for MI300X: the fnuz codec's 'hwfp8' variant compiles to v_cvt_pk_fp8_f32 (the
    e4m3fnuz conversion); the bit-level default has none, and neither has a q8 kernel (the control)."""
    default, hw = T.fp8_conversion_report("gfx942")
    assert default["codec"] == hw["codec"] == "fp8fnuz"
    assert hw["cvt_to_fp8"] > 0 and default["cvt_to_fp8"] == 0
    assert T.compile_report("q8", "encode", "gfx942")["cvt_to_fp8"] == 0


@pytest.mark.gpu
@needs_triton
def test_gpu_kernels_are_bit_exact():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU backend (rocm or cuda)")
    seed = int.from_bytes(os.urandom(4), "little")
    for name in C.QUANTIZED:
        x = C.activations("outliers", (1 << 20) + 7 * 32, seed=seed, dtype=torch.float16).cuda()
        x[32:64] *= 1e-6
        ref = C.encode_reference(x, name)
        assert torch.equal(ref.payload, T.encode(x, name, impl="triton").payload), (name, seed)
        assert torch.equal(C.decode_reference(ref).view(torch.int16),
                           T.decode(ref, impl="triton").view(torch.int16)), (name, seed)


def test_default_encode_variant():
    """The hardware e4m3 cast is the FP8 default only where it exists and was measured exact (NVIDIA sm_89+)."""
    from rocmlab.comm.torch_codec import get_codec

    cpu = torch.device("cpu")
    assert T.default_encode_variant(get_codec("fp8"), cpu) == "default"
    for name in ("q8", "q6", "q4"):
        assert T.default_encode_variant(get_codec(name), cpu) == "default"
    if torch.cuda.is_available() and torch.version.cuda:
        cap = torch.cuda.get_device_capability(0)
        want = "hwfp8" if cap >= (8, 9) else "default"
        assert T.default_encode_variant(get_codec("fp8"), torch.device("cuda", 0)) == want
