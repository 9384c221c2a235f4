"""QuickReduce-style block codecs for all-reduce traffic: FP8 (e4m3), Q8, Q6, Q4, and FP (no codec).

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

FP8 (e4m3fn, the OCP format: 4 exponent bits, 3 mantissa bits, max 448), per block:
``d = scale_dtype(a / 448)`` (positive), ``code = e4m3(clamp(x * r, -448, 448))`` with
round-half-even, decode ``y = float32(e4m3 value) * d``.

Packed payload, one uint8 tensor (little-endian, like every GPU and CPU torch runs on):

=========  ===================================================================  ======================
codec      codes region                                                         then the scales
=========  ===================================================================  ======================
``q4``     nibble i = code i (byte i//2; low nibble for even i): n/2 bytes      n/block x scale bytes
``q6``     low 4 bits as in q4 (n/2 bytes), then the high 2 bits, 4 per byte    n/block x scale bytes
           (crumb i at bits 2*(i%4) of byte i//4): n/4 bytes
``q8``     byte i = code i: n bytes                                             n/block x scale bytes
``fp8``    byte i = e4m3 bits of value i: n bytes                               n/block x scale bytes
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

CODECS = ("fp", "fp8", "q8", "q6", "q4")
QUANTIZED = ("fp8", "q8", "q6", "q4")
BITS = {"fp": 16, "fp8": 8, "q8": 8, "q6": 6, "q4": 4}
INPUT_DTYPES = (torch.float16, torch.bfloat16)
SCALE_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
BLOCK_SIZES = (16, 32, 64, 128, 256)
FP8_MAX = 448.0
#: float32's smallest normal number: a scale below it decodes to zeros (its reciprocal would overflow).
_TINY = 2.0 ** -126
#: vLLM's accuracy criterion for QuickReduce (tests/distributed/test_quick_all_reduce.py).
VLLM_ATOL, VLLM_RTOL = 2.5, 0.1
#: QuickReduce's float16 atom: 256 threads x 16 bytes.
QR_ATOM_BYTES = 4096
#: vLLM's env-var names for each codec (VLLM_ROCM_QUICK_REDUCE_QUANTIZATION).
VLLM_NAMES = {"fp": "FP", "q8": "INT8", "q6": "INT6", "q4": "INT4"}

_ALIASES = {"int8": "q8", "int6": "q6", "int4": "q4", "e4m3": "fp8", "none": "fp", "fp16": "fp"}


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
        return f"{self.name.upper()} (block {self.block_size}, {sd} scale)"


def get_codec(name, block_size: int = 32, scale_dtype: torch.dtype = torch.float16) -> Codec:
    """A codec by name: ``fp``, ``fp8``, ``q8``, ``q6``, ``q4`` (also vLLM's INT8/INT6/INT4/FP)."""
    if isinstance(name, Codec):
        return name
    key = str(name).strip().lower()
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
    if codec.name == "fp8":
        # a tensor divisor: torch on CUDA multiplies by the reciprocal when dividing by a scalar,
        # which is not the correctly rounded a / 448 (seen on an H200 with float32 scales)
        d32 = a / torch.full_like(a, FP8_MAX)
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
    if codec.name == "fp8":
        return e4m3_bits(w.clamp(-FP8_MAX, FP8_MAX)).reshape(-1)
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
    else:
        v = (q - codec.levels).float()
    y = v.reshape(-1, codec.block_size) * ds[:, None]
    return y.reshape(-1).to(out_dtype)


def roundtrip(x: torch.Tensor, codec, impl: str = "auto") -> torch.Tensor:
    """decode(encode(x)) in x's dtype and shape."""
    from rocmlab.comm import triton_codec

    enc = triton_codec.encode(x, codec, impl=impl)
    return triton_codec.decode(enc, impl=impl).reshape(x.shape)


def error_bound(x: torch.Tensor, codec) -> torch.Tensor:
    """A per-value bound on |decode(encode(x)) - x| in float32 (before the final rounding to x's dtype).

    Integer codecs: half a step, |d|/2; one full step for values near the block maximum whose
    sign maps them to +L, which is clamped to L-1 (QuickReduce's negative scale puts +a at -L and
    -a at +L); plus the slack from rounding d to scale_dtype. FP8: half an e4m3 ulp, |x|/16 for normal values,
    2**-10 * d in the subnormal range, plus the same slack. Add half an ulp of the output dtype for
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
    if codec.name == "fp8":
        d = a / FP8_MAX
        b = torch.maximum(xf.abs() / 16.0, d * 2.0 ** -10) + a * eps_s * 2 + FP8_MAX * sub
    else:
        L = codec.levels
        d = a / L * (1 + 2 * eps_s)
        # half a step, except where x * r rounds past L - 1 (the block maximum when it is
        # negative: the scale is negative, so -a maps to +L and is clamped): one full step
        b = torch.where(xf.abs() > (L - 1) * a / L, d, d / 2) + a * eps_s * 2 + L * sub
    return b.expand_as(xf).reshape(-1)


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
