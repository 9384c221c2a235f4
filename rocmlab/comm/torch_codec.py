"""QuickReduce-style block codecs for all-reduce traffic: FP8 (two formats), Q8, Q6, Q4, and FP (no codec).

This is the *exact* reference, written in plain torch so it runs on any device. The fused
Triton kernels in :mod:`rocmlab.comm.triton_codec` are checked bit for bit against it.

The format (our own layout; its size is exactly QuickReduce's)
--------------------------------------------------------------
A tensor of ``n`` float16/bfloat16 values is cut into blocks of ``block_size`` values
(default 32, as in QuickReduce). Each block gets one scale in ``scale_dtype`` (default float16).

Integer codecs (bits b = 8, 6, 4; L = 2**(b-1) = 128, 32, 8), per block:

1. ``a = max |x|`` over the block (in float32: exact).
2. decoding scale ``d = scale_dtype(a * (-1/L))``: negative, as in QuickReduce, so that the
   largest value maps to code -L, which exists, and all 2**b codes are used.
3. ``r = 1/float32(d)`` (correctly rounded; 0 when d is 0 or below float32's normal range).
4. ``code = clamp(round_half_even(x * r), -L, L-1) + L`` in [0, 2**b).
5. decode: ``y = float32(code - L) * float32(d)``, rounded once to the output dtype.

FP8 comes in two formats with the same 1-4-3 bit layout, and the codec must match the hardware's:

- ``fp8``: **e4m3fn, the OCP format** (exponent bias 7, max 448, +-0, NaN 0x7f/0xff, no inf). Native on
  NVIDIA (sm_89+) and on AMD gfx950 (MI350X/MI355X).
- ``fp8fnuz``: **e4m3fnuz** (exponent bias 8, max 240, one zero, NaN is 0x80, no inf). The FP8 of
  MI300X/MI325X (gfx942): its ``v_cvt_pk_fp8_f32`` writes this format, and QuickReduce's own FP8 codec
  scales by 1/240 (AMD aiter ``csrc/include/quick_all_reduce.h``, ``CodecFP8::kFP8Max = 240``).

The same bits mean different values: 0x7f is 448 in one and 240 in the other, and 1.0 is 0x38 in e4m3fn
but 0x40 in e4m3fnuz. :func:`fp8_codec_for` picks the format by target (``rocmlab.settings.FP8_FORMATS``).
Per block: ``d = scale_dtype(a / MAX)`` (positive), ``code = fp8(clamp(x * r, -MAX, MAX))`` with
round-half-even, decode ``y = float32(fp8 value) * d``; e4m3fnuz never writes 0x80 (its NaN): a value
that rounds to zero is +0.

Packed payload, one uint8 tensor (little-endian, like every GPU and CPU torch runs on):

=========  ===================================================================  ======================
codec      codes region                                                         then the scales
=========  ===================================================================  ======================
``q4``     nibble i = code i (byte i//2; low nibble for even i): n/2 bytes      n/block x scale bytes
``q6``     low 4 bits as in q4 (n/2 bytes), then the high 2 bits, 4 per byte    n/block x scale bytes
           (crumb i at bits 2*(i%4) of byte i//4): n/4 bytes
``q8``     byte i = code i: n bytes                                             n/block x scale bytes
``fp8*``   byte i = e4m3fn / e4m3fnuz bits of value i: n bytes                  n/block x scale bytes
``fp``     the raw float16/bfloat16 bytes: 2n bytes                             none
=========  ===================================================================  ======================

Wire bytes: ``n * bits / 8 + (n / block_size) * scale_bytes``. For QuickReduce's 4096-byte
float16 atom (2048 values, block 32, fp16 scales): Q4 1024 + 128 = 1152, Q6 1536 + 128 = 1664,
Q8 2048 + 128 = 2176 bytes: the same sizes as vLLM's ``kRankTileStride`` constants. QuickReduce
interleaves codes and scales per atom and splits Q6 into a 4-bit and a 2-bit plane per thread;
we keep the two planes per tensor, which is what lets a fused kernel write Q6 with aligned
word stores instead of 3-byte groups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from rocmlab import settings

CODECS = ("fp", "fp8", "fp8fnuz", "q8", "q6", "q4")
QUANTIZED = ("fp8", "fp8fnuz", "q8", "q6", "q4")
FP8_CODECS = ("fp8", "fp8fnuz")
BITS = {"fp": 16, "fp8": 8, "fp8fnuz": 8, "q8": 8, "q6": 6, "q4": 4}
INPUT_DTYPES = (torch.float16, torch.bfloat16)
SCALE_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
BLOCK_SIZES = (16, 32, 64, 128, 256)
#: The largest finite value of each FP8 format (the scale maps a block's absmax onto it).
FP8_MAX = 448.0
FP8_FNUZ_MAX = 240.0
#: codec -> (format name, max, exponent bias)
FP8_FORMAT = {"fp8": ("e4m3fn", FP8_MAX, 7), "fp8fnuz": ("e4m3fnuz", FP8_FNUZ_MAX, 8)}
#: float32's smallest normal number: a scale below it decodes to zeros (its reciprocal would overflow).
_TINY = 2.0 ** -126
#: vLLM's accuracy criterion for QuickReduce (tests/distributed/test_quick_all_reduce.py).
VLLM_ATOL, VLLM_RTOL = 2.5, 0.1
#: QuickReduce's float16 atom: 256 threads x 16 bytes.
QR_ATOM_BYTES = 4096
#: vLLM's env-var names for each codec (VLLM_ROCM_QUICK_REDUCE_QUANTIZATION).
VLLM_NAMES = {"fp": "FP", "q8": "INT8", "q6": "INT6", "q4": "INT4"}

_ALIASES = {"int8": "q8", "int6": "q6", "int4": "q4", "e4m3fn": "fp8", "e4m3fnuz": "fp8fnuz",
            "fp8_fnuz": "fp8fnuz", "none": "fp", "fp16": "fp"}


def fp8_codec_for(target: str) -> str:
    """The FP8 codec whose format a target's hardware converts natively: ``fp8fnuz`` on gfx942
    (MI300X/MI325X), ``fp8`` (OCP e4m3fn) on gfx950 and NVIDIA. Raises for a target without FP8."""
    fmt = settings.FP8_FORMATS.get(target)
    if fmt is None:
        known = ", ".join(t for t, f in settings.FP8_FORMATS.items() if f)
        raise CodecError(f"target {target!r} has no FP8 conversion in hardware: use q8 (INT8), or one of the "
                         f"FP8 targets {known}")
    return {"e4m3fnuz": "fp8fnuz", "e4m3fn": "fp8"}[fmt]


class CodecError(ValueError):
    """Bad input for a codec: the message names the problem and the fix."""


@dataclass(frozen=True)
class Codec:
    """A codec with its parameters. Build one with :func:`get_codec`."""

    name: str
    block_size: int = 32
    scale_dtype: torch.dtype = torch.float16

    @property
    def bits(self) -> int:
        return BITS[self.name]

    @property
    def quantized(self) -> bool:
        return self.name != "fp"

    @property
    def is_fp8(self) -> bool:
        return self.name in FP8_CODECS

    @property
    def fp8_max(self) -> float:
        """448 (e4m3fn) or 240 (e4m3fnuz)."""
        return FP8_FORMAT[self.name][1]

    @property
    def levels(self) -> int:
        """L = 2**(bits-1) for the integer codecs (codes are biased by L)."""
        return 1 << (self.bits - 1)

    @property
    def scale_bytes(self) -> int:
        return 0 if not self.quantized else torch.finfo(self.scale_dtype).bits // 8

    def codes_bytes(self, numel: int) -> int:
        return numel * self.bits // 8

    def wire_bytes(self, numel: int) -> int:
        """Bytes on the wire for ``numel`` values: codes plus one scale per block."""
        if not self.quantized:
            return 2 * numel
        return self.codes_bytes(numel) + (numel // self.block_size) * self.scale_bytes

    def bits_per_value(self) -> float:
        return self.bits + (8 * self.scale_bytes / self.block_size if self.quantized else 0)

    def compression(self) -> float:
        """16-bit input bytes over wire bytes (Q4 at block 32 with fp16 scales: 3.56)."""
        return 16.0 / self.bits_per_value()

    def label(self) -> str:
        if not self.quantized:
            return "FP (16-bit, no codec)"
        sd = str(self.scale_dtype).replace("torch.", "")
        if self.is_fp8:
            return f"FP8 {FP8_FORMAT[self.name][0]} (block {self.block_size}, {sd} scale)"
        return f"{self.name.upper()} (block {self.block_size}, {sd} scale)"


def get_codec(name, block_size: int = 32, scale_dtype: torch.dtype = torch.float16) -> Codec:
    """A codec by name: ``fp``, ``fp8`` (OCP e4m3fn), ``fp8fnuz`` (e4m3fnuz), ``q8``, ``q6``, ``q4``
    (also vLLM's INT8/INT6/INT4/FP). ``e4m3`` alone is refused: say which of the two formats."""
    if isinstance(name, Codec):
        return name
    key = str(name).strip().lower()
    if key == "e4m3":
        raise CodecError("'e4m3' names two formats: 'fp8' (OCP e4m3fn, max 448: NVIDIA, gfx950) or 'fp8fnuz' "
                         "(e4m3fnuz, max 240: MI300X gfx942); codecs.fp8_codec_for(target) picks one")
    key = _ALIASES.get(key, key)
    if key not in CODECS:
        raise CodecError(f"unknown codec {name!r}: choose one of {', '.join(CODECS)} "
                         "(or vLLM's names FP, INT8, INT6, INT4)")
    if block_size not in BLOCK_SIZES:
        raise CodecError(f"block_size {block_size} is not supported: use one of {BLOCK_SIZES} "
                         "(QuickReduce uses 32)")
    if scale_dtype not in SCALE_DTYPES:
        raise CodecError(f"scale_dtype {scale_dtype} is not supported: use torch.float16 (QuickReduce), "
                         "torch.bfloat16 or torch.float32")
    return Codec(key, block_size, scale_dtype)


def wire_bytes(name, numel: int, block_size: int = 32, scale_dtype: torch.dtype = torch.float16) -> int:
    return get_codec(name, block_size, scale_dtype).wire_bytes(numel)


def qr_atom_bytes(name) -> int:
    """Wire bytes of one QuickReduce float16 atom (4096 bytes = 2048 values) under QuickReduce's codec."""
    return get_codec(name).wire_bytes(QR_ATOM_BYTES // 2)


def check_input(x: torch.Tensor, codec: Codec) -> None:
    """Raise :class:`CodecError` with a fix for anything the codecs do not take."""
    if not isinstance(x, torch.Tensor):
        raise CodecError(f"expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype not in INPUT_DTYPES:
        kind = "integer" if not (x.dtype.is_floating_point or x.dtype.is_complex) else str(x.dtype).replace("torch.", "")
        raise CodecError(
            f"unsupported dtype {x.dtype} ({kind}): QuickReduce codecs take float16 or bfloat16 "
            "(vLLM's _SUPPORTED_DTYPES). Cast with x.to(torch.float16) / x.to(torch.bfloat16), "
            "or use an exact all-reduce for float32 and integer tensors.")
    n = x.numel()
    if n == 0:
        raise CodecError("empty tensor: nothing to encode")
    if codec.quantized and n % codec.block_size:
        pad = -n % codec.block_size
        raise CodecError(
            f"size {n} is not a multiple of the block size {codec.block_size}: pad the tensor with "
            f"{pad} zeros (to {n + pad} values) or choose a block size that divides {n}")


@dataclass
class Encoded:
    """A packed payload and what is needed to decode it."""

    payload: torch.Tensor      # uint8, codec.wire_bytes(numel) bytes
    codec: Codec
    numel: int
    dtype: torch.dtype         # the input's dtype (decode's default output dtype)

    @property
    def nbytes(self) -> int:
        return self.payload.numel()

    def codes(self) -> torch.Tensor:
        return self.payload[: self.codec.codes_bytes(self.numel)]

    def scales(self) -> torch.Tensor:
        c = self.codec
        return self.payload[c.codes_bytes(self.numel):].view(c.scale_dtype)


# --- the reference -------------------------------------------------------------------

def block_scales(x: torch.Tensor, codec: Codec) -> tuple[torch.Tensor, torch.Tensor]:
    """(d in scale_dtype, r = 1/d in float32) per block, as the codec defines them."""
    xf = x.reshape(-1, codec.block_size).float()
    a = xf.abs().amax(dim=1)
    if codec.is_fp8:
        # a tensor divisor: torch on CUDA multiplies by the reciprocal when dividing by a scalar,
        # which is not the correctly rounded a / 448 (seen on an H200 with float32 scales)
        d32 = a / torch.full_like(a, codec.fp8_max)
    else:
        d32 = a * (-1.0 / codec.levels)
    fmax = torch.finfo(codec.scale_dtype).max
    d = d32.clamp(-fmax, fmax).to(codec.scale_dtype)
    ds = d.float()
    r = torch.where(ds.abs() >= _TINY, 1.0 / torch.where(ds == 0, torch.ones_like(ds), ds), torch.zeros_like(ds))
    return d, r


def _codes(x: torch.Tensor, codec: Codec, r: torch.Tensor) -> torch.Tensor:
    """int32 codes, one per value, in [0, 2**bits)."""
    w = x.reshape(-1, codec.block_size).float() * r[:, None]
    if codec.is_fp8:
        m = codec.fp8_max
        bits = e4m3_bits if codec.name == "fp8" else e4m3fnuz_bits
        return bits(w.clamp(-m, m)).reshape(-1)
    L = codec.levels
    return (torch.round(w.clamp(-L, L - 1)).to(torch.int32) + L).reshape(-1)


def e4m3_bits(v: torch.Tensor) -> torch.Tensor:
    """float32 values with |v| <= 448 -> e4m3fn bit patterns (int32), round half to even.

    Written with integer operations so that it is the same function on every device: torch's
    own ``.to(torch.float8_e4m3fn)`` is checked against it on the CPU in the tests, and did not
    give the same bytes on an H200 for every input (benchmarks/results/README.md)."""
    v = v.float().contiguous()
    bits = v.view(torch.int32)
    sign = (bits >> 24) & 0x80
    ab = bits & 0x7FFFFFFF
    normal = ((ab + 0x7FFFF + ((ab >> 20) & 1)) >> 20) - 960     # drop 20 mantissa bits, rebias 127 -> 7
    av = v.abs()
    sub = torch.round(av * 512.0).to(torch.int32)                  # subnormals: multiples of 2**-9
    return sign | torch.where(av < 2.0 ** -6, sub, normal)


def e4m3fnuz_bits(v: torch.Tensor) -> torch.Tensor:
    """float32 values with |v| <= 240 -> e4m3fnuz bit patterns (int32), round half to even.

    The same integer steps as :func:`e4m3_bits` with exponent bias 8 (rebias 127 -> 8, smallest
    normal 2**-7, subnormal step 2**-10), and no minus zero: a value that rounds to 0 is 0x00,
    never 0x80 (e4m3fnuz's NaN). Checked against torch's ``float8_e4m3fnuz`` in the tests."""
    v = v.float().contiguous()
    bits = v.view(torch.int32)
    sign = (bits >> 24) & 0x80
    ab = bits & 0x7FFFFFFF
    normal = ((ab + 0x7FFFF + ((ab >> 20) & 1)) >> 20) - 952     # (127 - 8) << 3
    av = v.abs()
    sub = torch.round(av * 1024.0).to(torch.int32)                 # subnormals: multiples of 2**-10
    mag = torch.where(av < 2.0 ** -7, sub, normal)
    return torch.where(mag == 0, torch.zeros_like(mag), sign | mag)


def e4m3fnuz_values(q: torch.Tensor) -> torch.Tensor:
    """e4m3fnuz bit patterns (ints 0..255; 0x80, the NaN, is never written) -> float32 values."""
    q = q.to(torch.int32)
    e = (q >> 3) & 15
    m = q & 7
    normal = (((e + 119) << 23) | (m << 20)).view(torch.float32)
    mag = torch.where(e == 0, m.float() * 2.0 ** -10, normal)
    return torch.where((q & 0x80) != 0, 0.0 - mag, mag)


def e4m3_values(q: torch.Tensor) -> torch.Tensor:
    """e4m3fn bit patterns (ints 0..255, never 0x7f/0xff) -> float32 values."""
    q = q.to(torch.int32)
    e = (q >> 3) & 15
    m = q & 7
    normal = (((e + 120) << 23) | (m << 20)).view(torch.float32)
    mag = torch.where(e == 0, m.float() * 2.0 ** -9, normal)
    # 0 - mag, not -mag: code 0x80 (minus zero) decodes to +0, as Triton's negation (0 - x) gives
    return torch.where((q & 0x80) != 0, 0.0 - mag, mag)


def _pack(q: torch.Tensor, bits: int) -> torch.Tensor:
    """Pack int32 codes (< 2**bits, bits in 2, 4, 8) little-end-first into uint8."""
    per = 8 // bits
    q = q.reshape(-1, per)
    out = q[:, 0].clone()
    for k in range(1, per):
        out |= q[:, k] << (bits * k)
    return out.to(torch.uint8)


def _unpack(b: torch.Tensor, bits: int) -> torch.Tensor:
    per = 8 // bits
    b = b.to(torch.int32)
    mask = (1 << bits) - 1
    return torch.stack([(b >> (bits * k)) & mask for k in range(per)], dim=1).reshape(-1)


def encode_reference(x: torch.Tensor, codec) -> Encoded:
    """Encode ``x`` (float16/bfloat16, any device) into a packed payload: the exact reference."""
    codec = get_codec(codec)
    check_input(x, codec)
    x = x.contiguous().reshape(-1)
    if not codec.quantized:
        return Encoded(x.view(torch.uint8).clone(), codec, x.numel(), x.dtype)
    d, r = block_scales(x, codec)
    q = _codes(x, codec, r)
    if codec.name == "q4":
        codes = _pack(q, 4)
    elif codec.name == "q6":
        codes = torch.cat([_pack(q & 15, 4), _pack(q >> 4, 2)])
    else:
        codes = q.to(torch.uint8)
    payload = torch.cat([codes, d.view(torch.uint8)])
    return Encoded(payload, codec, x.numel(), x.dtype)


def decode_reference(enc: Encoded, out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """Decode a payload to a flat tensor (default: the input's dtype; float32 gives the unrounded values)."""
    codec, n = enc.codec, enc.numel
    out_dtype = out_dtype or enc.dtype
    if not codec.quantized:
        return enc.payload.view(enc.dtype).to(out_dtype)
    nc = codec.codes_bytes(n)
    codes = enc.payload[:nc]
    ds = enc.payload[nc:].view(codec.scale_dtype).float()
    if codec.name == "q4":
        q = _unpack(codes, 4)
    elif codec.name == "q6":
        q = _unpack(codes[: n // 2], 4) | (_unpack(codes[n // 2:], 2) << 4)
    else:
        q = codes.to(torch.int32)
    if codec.name == "fp8":
        v = e4m3_values(q)
    elif codec.name == "fp8fnuz":
        v = e4m3fnuz_values(q)
    else:
        v = (q - codec.levels).float()
    y = v.reshape(-1, codec.block_size) * ds[:, None]
    return y.reshape(-1).to(out_dtype)


def integer_roundtrip(x: torch.Tensor, bits: int, block_size: int = 32,
                      scale_dtype: torch.dtype = torch.float16) -> torch.Tensor:
    """decode(encode(x)) in float32 for a b-bit integer codec with QuickReduce's rule (any 2 <= b <= 8),
    without packing: for codecs with no packed payload here, e.g. vLLM's INT3 (b=3), to measure their
    error. For b = 4, 6, 8 it equals the packed codecs' decode (the tests check it)."""
    if not 2 <= bits <= 8:
        raise CodecError(f"bits must be 2..8, not {bits}")
    check_input(x, Codec("q8", block_size, scale_dtype))
    L = 1 << (bits - 1)
    xf = x.reshape(-1, block_size).float()
    fmax = torch.finfo(scale_dtype).max
    d = (xf.abs().amax(dim=1) * (-1.0 / L)).clamp(-fmax, fmax).to(scale_dtype).float()
    r = torch.where(d.abs() >= _TINY, 1.0 / torch.where(d == 0, torch.ones_like(d), d), torch.zeros_like(d))
    q = torch.round((xf * r[:, None]).clamp(-L, L - 1))
    return (q * d[:, None]).reshape(-1)


def error_bound(x: torch.Tensor, codec) -> torch.Tensor:
    """A per-value bound on |decode(encode(x)) - x| in float32 (before the final rounding to x's dtype).

    Integer codecs: half a step, |d|/2; one full step for values near the block maximum whose
    sign maps them to +L, which is clamped to L-1 (QuickReduce's negative scale puts +a at -L and
    -a at +L); plus the slack from rounding d to scale_dtype. FP8: half an ulp, |x|/16 for normal values,
    half the subnormal step times d in the subnormal range (2**-10 * d for e4m3fn, 2**-11 * d for
    e4m3fnuz), plus the same slack. Add half an ulp of the output dtype for
    the rounded output (:func:`ulp`)."""
    codec = get_codec(codec)
    if not codec.quantized:
        return torch.zeros(x.numel(), dtype=torch.float32, device=x.device)
    xf = x.reshape(-1, codec.block_size).float()
    a = xf.abs().amax(dim=1, keepdim=True)
    fi = torch.finfo(codec.scale_dtype)
    eps_s = fi.eps / 2   # half an ulp, relative
    # a scale in the subnormal range (or flushed to 0) is rounded by an absolute half-subnormal,
    # which every code up to the largest magnitude multiplies
    sub = fi.smallest_normal * fi.eps / 2
    if codec.is_fp8:
        m = codec.fp8_max
        d = a / m
        b = torch.maximum(xf.abs() / 16.0, d * fp8_half_subnormal_step(codec)) + a * eps_s * 2 + m * sub
    else:
        L = codec.levels
        d = a / L * (1 + 2 * eps_s)
        # half a step, except where x * r rounds past L - 1 (the block maximum when it is
        # negative: the scale is negative, so -a maps to +L and is clamped): one full step
        b = torch.where(xf.abs() > (L - 1) * a / L, d, d / 2) + a * eps_s * 2 + L * sub
    return b.expand_as(xf).reshape(-1)


def fp8_half_subnormal_step(codec) -> float:
    """Half the subnormal spacing of the codec's FP8 format: 2**-10 (e4m3fn), 2**-11 (e4m3fnuz)."""
    bias = FP8_FORMAT[get_codec(codec).name][2]
    return 2.0 ** (1 - bias - 3 - 1)


def ulp(y: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The spacing of ``dtype`` at |y| (float32 result): half of it bounds one rounding to dtype."""
    fi = torch.finfo(dtype)
    ay = y.abs().float().clamp_min(fi.tiny)
    return torch.exp2(torch.floor(torch.log2(ay))) * fi.eps


# --- error metrics and realistic activations ------------------------------------------

@dataclass(frozen=True)
class ErrorMetrics:
    rel_l2: float          # ||y - x|| / ||x||
    max_abs: float
    mean_abs: float
    snr_db: float
    vllm_violations: int   # values outside |y - x| <= 2.5 + 0.1 |x| (vLLM's assert_close)
    numel: int

    @property
    def vllm_pass(self) -> bool:
        return self.vllm_violations == 0

    def row(self) -> dict:
        return {"rel L2": self.rel_l2, "max |err|": self.max_abs, "mean |err|": self.mean_abs,
                "SNR dB": self.snr_db, "vLLM assert_close": "pass" if self.vllm_pass else
                f"FAIL ({self.vllm_violations} of {self.numel})"}


def error_metrics(ref: torch.Tensor, got: torch.Tensor, atol: float = VLLM_ATOL, rtol: float = VLLM_RTOL) -> ErrorMetrics:
    """Compare ``got`` with ``ref`` (both cast to float64 on the CPU)."""
    r = ref.detach().reshape(-1).double().cpu()
    g = got.detach().reshape(-1).double().cpu()
    if r.shape != g.shape:
        raise ValueError(f"shapes differ: {tuple(ref.shape)} vs {tuple(got.shape)}")
    e = (g - r).abs()
    nr = float(r.norm())
    ne = float((g - r).norm())
    rel = ne / nr if nr > 0 else (0.0 if ne == 0 else math.inf)
    snr = 20 * math.log10(nr / ne) if ne > 0 and nr > 0 else math.inf
    bad = int((~(e <= atol + rtol * r.abs())).sum())   # NaN counts as a violation
    return ErrorMetrics(rel, float(e.max()), float(e.mean()), snr, bad, r.numel())


ACTIVATIONS = ("normal", "heavy-tailed", "outliers", "vllm-test")


def activations(kind: str, numel: int, seed: int | None = None, dtype=torch.float16, hidden: int = 4096,
                device="cpu") -> torch.Tensor:
    """Activation-like test data (a flat tensor of ``numel`` values).

    - ``normal``: N(0, 1).
    - ``heavy-tailed``: Student's t with 3 degrees of freedom (kurtosis far above a Gaussian's).
    - ``outliers``: N(0, 1) with a few fixed hidden channels (0.5 %) scaled by 20-60x, the
      systematic outlier features of LLM activations (Dettmers et al., LLM.int8(), 2022).
    - ``vllm-test``: integers 1..22, the data of vLLM's QuickReduce test.
    """
    g = torch.Generator().manual_seed(int(seed) if seed is not None else int(torch.seed() % (2**63)))
    if kind == "normal":
        x = torch.randn(numel, generator=g)
    elif kind == "heavy-tailed":
        z = torch.randn(numel, generator=g)
        chi2 = torch.randn(numel, 3, generator=g).pow(2).sum(1)
        x = z / torch.sqrt(chi2 / 3)
    elif kind == "outliers":
        x = torch.randn(numel, generator=g)
        h = min(hidden, numel)
        nout = max(1, h // 200)
        cols = torch.randperm(h, generator=g)[:nout]
        gain = 20 + 40 * torch.rand(nout, generator=g)
        rows = x[: numel - numel % h].view(-1, h)
        rows[:, cols] *= gain
    elif kind == "vllm-test":
        x = torch.randint(1, 23, (numel,), generator=g).float()
    else:
        raise ValueError(f"unknown activation kind {kind!r}: choose one of {ACTIVATIONS}")
    return x.to(dtype).to(device)
