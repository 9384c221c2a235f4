"""Fused one-pass Triton encode and decode for the codecs of :mod:`rocmlab.comm.torch_codec`.

One kernel reads each input value once and writes its codes and the block's scale (encode);
one kernel reads codes and scales once and writes the values (decode). Both are bit-exact with
the torch reference: the same float32 operations in the same order, IEEE division
(``div_rn``), and round-half-even done with the 1.5 * 2**23 trick (exact for |v| < 2**22, and
free of the libdevice call that Triton's CPU interpreter lacks). FP8 e4m3 is built from bits,
so no backend's own fp8 conversion (or its saturation rule) is involved.

Tiles are ``[ROWS, BLOCK/16, NW, VPW]``: ROWS blocks, each cut in groups of 16 values, each
group held as NW words of VPW codes (Q4/Q6: 2 words of 8 nibbles; Q8/FP8: 4 words of 4 bytes).
A word is built by a reduction over the last axis, which stays inside one thread, and is
stored as one aligned 32-bit store; Q6's high 2-bit plane is one 32-bit word per 16 values.
Nothing here depends on the warp or wavefront size (32 on NVIDIA, 64 on MI300X).
By default (``flat=1``, :class:`LaunchConfig`) decode uses a 2-D ``[rows, VPW]`` tile, so that a warp's
fp16 stores are consecutive 16-byte pieces and every load has the stores' layout, and encode a 2-D
``[ROWS, BLOCK]`` tile, for the same reason on its fp16 loads and code stores (``_decode_kernel``,
``_encode_kernel``; the measurements behind the choice are in benchmarks/results/README.md).

Where it runs: ``impl="triton"`` on a CUDA or ROCm tensor compiles the kernel (autotuned per
size); on a CPU tensor it runs the same kernel source in Triton's interpreter (slow: for tests).
``impl="torch"`` is the reference; ``impl="auto"`` takes Triton on a GPU when Triton is installed,
the reference otherwise.
"""

import functools
import os
import re
from typing import NamedTuple

import torch

from rocmlab import settings
from rocmlab.comm.torch_codec import (
    FP8_MAX,
    Codec,
    CodecError,
    Encoded,
    check_input,
    decode_reference,
    encode_reference,
    fp8_codec_for,
    get_codec,
)
from rocmlab.profile.timing import graph_bench

#: The kernels' CODEC constexpr; both FP8 formats are codec 0, told apart by the FNUZ constexpr.
CODEC_ID = {"fp8": 0, "fp8fnuz": 0, "q8": 1, "q6": 2, "q4": 3}
class LaunchConfig(NamedTuple):
    """One launch configuration of the encode or decode kernel.

    tile: values per tile; num_warps: Triton's warps per program (a wavefront of 64 on AMD);
    stages: software-pipelining depth of the tile loop; occ: 0 launches one program per tile, k launches
    k programs per multiprocessor that loop over the tiles (persistent, the next tile's loads in flight);
    flat: the tile's layout: 1 (the default) a 2-D tile whose loads and stores are coalesced (see
    ``_encode_kernel`` / ``_decode_kernel``), 0 the earlier 4-D [ROWS, G, NW, VPW] tile, kept to compare."""
    tile: int
    num_warps: int
    stages: int = 1
    occ: int = 0
    flat: int = 1


#: What the autotuner tries per size, for encode and for decode. Earlier layouts' winners (flat=0) stay in
#: the lists so that each sweep measures them against the current one (benchmarks/results/README.md).
ENC_CONFIGS = (
    LaunchConfig(2048, 4, 1, 0, 0), LaunchConfig(4096, 4, 1, 0, 0), LaunchConfig(8192, 8, 1, 0, 0),
    LaunchConfig(16384, 16, 1, 0, 0), LaunchConfig(1024, 4, 1, 0, 1), LaunchConfig(2048, 4, 1, 0, 1),
    LaunchConfig(4096, 4, 1, 0, 1), LaunchConfig(8192, 4, 1, 0, 1), LaunchConfig(4096, 8, 1, 0, 1),
    LaunchConfig(8192, 8, 1, 0, 1), LaunchConfig(16384, 16, 1, 0, 1), LaunchConfig(4096, 4, 1, 8, 1),
)
DEC_CONFIGS = (
    LaunchConfig(1024, 4, 1, 0, 0), LaunchConfig(1024, 2, 1, 0, 0), LaunchConfig(2048, 4, 3, 8, 0),
    LaunchConfig(1024, 4, 1, 0, 1), LaunchConfig(2048, 4, 1, 0, 1), LaunchConfig(4096, 4, 1, 0, 1),
    LaunchConfig(8192, 4, 1, 0, 1), LaunchConfig(4096, 8, 1, 0, 1), LaunchConfig(8192, 8, 1, 0, 1),
    LaunchConfig(16384, 16, 1, 0, 1), LaunchConfig(4096, 4, 1, 8, 1), LaunchConfig(8192, 8, 1, 4, 1),
)
CONFIGS = ENC_CONFIGS
INTERPRETER_TILE = 4096

try:  # Triton is optional: the reference runs without it
    import triton
    import triton.language as tl
    HAVE_TRITON = True
    TRITON_VERSION = triton.__version__
    # Triton's interpreter must be chosen before triton is imported (its own tl.max, tl.sum are
    # kernels too): TRITON_INTERPRET=1 in the environment of the whole process.
    INTERPRET = os.environ.get("TRITON_INTERPRET", "") == "1"
except Exception:  # pragma: no cover - exercised where Triton is missing
    import types

    triton = None
    tl = types.SimpleNamespace(constexpr="constexpr")   # lets the kernel sources below be defined
    HAVE_TRITON = False
    TRITON_VERSION = None
    INTERPRET = False


def available() -> bool:
    return HAVE_TRITON


VARIANTS = ("default", "quad", "hints", "quad+hints", "hwfp8")


def _layout(codec: Codec, variant: str = "default") -> tuple[int, int]:
    """(NW rows per 16 values, VPW values per row). Q4/Q6: 2 rows of 8 nibbles (one word each).
    Byte codecs: 2 rows of 8 bytes (a pair of words each, 16-byte loads of the input), or with
    the 'quad' variant 4 rows of 4 bytes (one word each, 8-byte loads)."""
    if codec.name in ("q4", "q6") or "quad" not in variant:
        return 2, 8
    return 4, 4


# --- kernels (plain functions, made into JIT or interpreted kernels below) ------------------

def _encode_kernel(x_ptr, codes_ptr, hi_ptr, scale_ptr, n_blocks,
                   BLOCK: tl.constexpr, ROWS: tl.constexpr, G: tl.constexpr, CODEC: tl.constexpr,
                   NW: tl.constexpr, VPW: tl.constexpr, L: tl.constexpr, FMAX: tl.constexpr,
                   SCALE_BF16: tl.constexpr, LOAD_EV: tl.constexpr = "", STORE_CM: tl.constexpr = "",
                   STAGES: tl.constexpr = 1, OCC: tl.constexpr = 0, FLAT: tl.constexpr = 0,
                   FP8_HW: tl.constexpr = 0, FNUZ: tl.constexpr = 0):
    """FLAT=1: the tile is a 2-D [ROWS, BLOCK] tensor, one row = one block. Triton gives a thread
    8 consecutive values (one 16-byte load) and puts a warp's threads on consecutive pieces of
    consecutive blocks (512 contiguous bytes per load instruction; BLOCK/8 threads per block). The
    block's absmax is a reduction over the row (in-thread, then a few shuffles across the BLOCK/8
    lanes), the scale comes back to the row as a slice of the same layout, and the code words are
    packed by reshaping the row to [BLOCK/VPW, VPW] inside each thread: no shared memory, and each
    thread stores its 1-2 consecutive words next to its neighbours'. FLAT=0 is the earlier
    [ROWS, G, NW, VPW] tile: Triton 3.6 puts a warp's 32 threads along ROWS, a block (64 bytes of
    input, 16-32 bytes of codes) apart, so every load and store instruction touches 32 sectors
    partly, and small tiles round-trip the scales through shared memory.
    FP8_HW=1 (variant 'hwfp8', either layout, GPU only): FP8 codes from the backend's float8e4nv cast
    (sm_89+: one cvt.rn.satfinite.e4m3x2.f32 per two values) of the already clamped value, in place
    of the ~12 integer operations per value. Not checkable in Triton's interpreter, whose fp8 cast
    does not round to nearest even; the GPU benchmark checks it against the reference.
    FNUZ=1 (codec 'fp8fnuz'): the FP8 codes are e4m3fnuz (bias 8, max 240, no minus zero), the format of
    MI300X's v_cvt_pk_fp8_f32; with FP8_HW=1 the cast is to Triton's float8e4b8 (that format)."""
    if FNUZ:   # e4m3fnuz: max 240, rebias 127 -> 8, smallest normal 2**-7, subnormal step 2**-10
        F8MAX: tl.constexpr = 240.0
        F8REB: tl.constexpr = 952
        F8MINN: tl.constexpr = 0x3C000000
        F8MINF: tl.constexpr = 0.0078125
        F8SUB: tl.constexpr = 1024.0
    else:      # e4m3fn (OCP): max 448, rebias 127 -> 7, smallest normal 2**-6, subnormal step 2**-9
        F8MAX: tl.constexpr = 448.0
        F8REB: tl.constexpr = 960
        F8MINN: tl.constexpr = 0x3C800000
        F8MINF: tl.constexpr = 0.015625
        F8SUB: tl.constexpr = 512.0
    if FLAT:
        c = tl.arange(0, BLOCK)
        n_tiles = tl.cdiv(n_blocks, ROWS)
        for t in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=STAGES):
            blk = t * ROWS + tl.arange(0, ROWS)
            bmask = blk < n_blocks
            x = tl.load(x_ptr + blk[:, None] * BLOCK + c[None, :], mask=bmask[:, None], other=0.0,
                        eviction_policy=LOAD_EV).to(tl.float32)
            a = tl.max(tl.abs(x), axis=1)
            if CODEC == 0:
                d32 = tl.math.div_rn(a, tl.full(a.shape, F8MAX, tl.float32))
            else:
                d32 = a * (-1.0 / L)
            d32 = tl.minimum(tl.maximum(d32, -FMAX), FMAX)
            if SCALE_BF16:
                b = d32.to(tl.int32, bitcast=True)
                b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
                d = b.to(tl.int16).to(tl.bfloat16, bitcast=True)
            else:
                d = d32.to(scale_ptr.dtype.element_ty)
            # stored in the row's own layout (by the first of its BLOCK/8 lanes), not through shared
            # memory. Triton's coalescer orders the dims of a store by the contiguity of its addresses,
            # ties in dim order: with every dim marked non-contiguous, a [lanes, ROWS] tensor gets
            # threads along the lanes first, as the transposed row layout has them.
            lane = tl.arange(0, BLOCK // 8)
            soffs = tl.max_contiguous(blk, 1)[None, :] + 0 * lane[:, None]
            tl.store(scale_ptr + soffs, tl.trans(tl.broadcast_to(d[:, None], [ROWS, BLOCK // 8])),
                     mask=bmask[None, :] & (lane == 0)[:, None])
            ds = d.to(tl.float32)
            ok = tl.abs(ds) >= 1.1754943508222875e-38
            r = tl.where(ok, tl.math.div_rn(tl.full(ds.shape, 1.0, tl.float32), tl.where(ok, ds, 1.0)), 0.0)
            v = x * r[:, None]
            if CODEC == 0 and FP8_HW:
                v = tl.minimum(tl.maximum(v, -F8MAX), F8MAX)
                if FNUZ:
                    q = v.to(tl.float8e4b8).to(tl.int8, bitcast=True).to(tl.int32) & 255
                else:
                    q = v.to(tl.float8e4nv).to(tl.int8, bitcast=True).to(tl.int32) & 255
            elif CODEC == 0:
                v = tl.minimum(tl.maximum(v, -F8MAX), F8MAX)
                bits = v.to(tl.int32, bitcast=True)
                ab = bits & 0x7FFFFFFF
                # the same integer rounding as FLAT=0, with the rebias (F8REB << 20) folded into the add:
                # (y >> 20) - F8REB == (y - (F8REB << 20)) >> 20 for an arithmetic shift
                normal = (ab + (0x7FFFF - (F8REB << 20)) + ((ab >> 20) & 1)) >> 20
                sub = (tl.abs(v) * F8SUB + 12582912.0).to(tl.int32, bitcast=True) - 0x4B400000
                mag = tl.where(ab < F8MINN, sub, normal)   # |v| below the smallest normal
                q = ((bits >> 24) & 0x80) | mag
                if FNUZ:   # no minus zero in e4m3fnuz (0x80 is its NaN)
                    q = tl.where(mag == 0, 0, q)
            else:
                v = tl.minimum(tl.maximum(v, -L * 1.0), L - 1.0) + 12582912.0
                q = v.to(tl.int32, bitcast=True) - (0x4B400000 - L)
            kk = tl.arange(0, 8)
            if CODEC >= 2:   # 8 nibbles per word: one word per thread, stored transposed (see the scale)
                word = tl.sum(tl.reshape(q & 15, [ROWS, BLOCK // 8, 8]) << (4 * kk)[None, None, :], axis=2)
                cw = tl.arange(0, BLOCK // 8)
                woffs = tl.max_contiguous(blk * (BLOCK // 8), 1)[None, :] + tl.max_contiguous(cw, 1)[:, None]
                tl.store(codes_ptr + woffs, tl.trans(word), mask=bmask[None, :], cache_modifier=STORE_CM)
                if CODEC == 2:   # the high 2-bit plane, 16 bits per 8 values (half a word), the same way
                    h = tl.sum(tl.reshape(q >> 4, [ROWS, BLOCK // 8, 8]) << (2 * kk)[None, None, :], axis=2)
                    tl.store(hi_ptr.to(tl.pointer_type(tl.int16)) + woffs, tl.trans(h).to(tl.int16),
                             mask=bmask[None, :], cache_modifier=STORE_CM)
            else:            # 4 bytes per word: two consecutive words per thread
                kk = tl.arange(0, 4)
                word = tl.sum(tl.reshape(q, [ROWS, BLOCK // 4, 4]) << (8 * kk)[None, None, :], axis=2)
                cw = tl.max_contiguous(tl.arange(0, BLOCK // 4), 2)
                woffs = blk[:, None] * (BLOCK // 4) + cw[None, :]
                tl.store(codes_ptr + woffs, word, mask=bmask[:, None], cache_modifier=STORE_CM)
    else:
        g = tl.arange(0, G)
        w = tl.arange(0, NW)
        k = tl.arange(0, VPW)
        n_tiles = tl.cdiv(n_blocks, ROWS)
        for t in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=STAGES):
            blk = t * ROWS + tl.arange(0, ROWS)
            bmask = blk < n_blocks
            offs = (blk[:, None, None, None] * BLOCK + g[None, :, None, None] * 16
                    + w[None, None, :, None] * VPW + k[None, None, None, :])
            x = tl.load(x_ptr + offs, mask=bmask[:, None, None, None], other=0.0, eviction_policy=LOAD_EV).to(tl.float32)
            a = tl.max(tl.max(tl.max(tl.abs(x), axis=3), axis=2), axis=1)
            if CODEC == 0:
                d32 = tl.math.div_rn(a, tl.full(a.shape, F8MAX, tl.float32))
            else:
                d32 = a * (-1.0 / L)
            d32 = tl.minimum(tl.maximum(d32, -FMAX), FMAX)
            if SCALE_BF16:  # round to bfloat16 by hand: Triton's interpreter does not round half to even
                b = d32.to(tl.int32, bitcast=True)
                b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
                d = b.to(tl.int16).to(tl.bfloat16, bitcast=True)
            else:
                d = d32.to(scale_ptr.dtype.element_ty)
            tl.store(scale_ptr + blk, d, mask=bmask)
            ds = d.to(tl.float32)
            ok = tl.abs(ds) >= 1.1754943508222875e-38
            r = tl.where(ok, tl.math.div_rn(tl.full(ds.shape, 1.0, tl.float32), tl.where(ok, ds, 1.0)), 0.0)
            v = x * r[:, None, None, None]
            if CODEC == 0 and FP8_HW:
                v = tl.minimum(tl.maximum(v, -F8MAX), F8MAX)
                if FNUZ:
                    q = v.to(tl.float8e4b8).to(tl.int8, bitcast=True).to(tl.int32) & 255
                else:
                    q = v.to(tl.float8e4nv).to(tl.int8, bitcast=True).to(tl.int32) & 255
            elif CODEC == 0:
                v = tl.minimum(tl.maximum(v, -F8MAX), F8MAX)
                bits = v.to(tl.int32, bitcast=True)
                sign = (bits >> 24) & 0x80
                ab = bits & 0x7FFFFFFF
                normal = ((ab + 0x7FFFF + ((ab >> 20) & 1)) >> 20) - F8REB
                av = tl.abs(v)
                sub = (av * F8SUB + 12582912.0).to(tl.int32, bitcast=True) - 0x4B400000
                mag = tl.where(av < F8MINF, sub, normal)
                q = sign | mag
                if FNUZ:
                    q = tl.where(mag == 0, 0, q)
            else:
                v = tl.minimum(tl.maximum(v, -L * 1.0), L - 1.0) + 12582912.0
                q = v.to(tl.int32, bitcast=True) - (0x4B400000 - L)
            wmask = bmask[:, None, None]
            woffs = blk[:, None, None] * (G * NW) + g[None, :, None] * NW + w[None, None, :]
            if CODEC == 3:
                word = tl.sum(q << (4 * k)[None, None, None, :], axis=3)
                tl.store(codes_ptr + woffs, word, mask=wmask, cache_modifier=STORE_CM)
            elif CODEC == 2:
                lo = tl.sum((q & 15) << (4 * k)[None, None, None, :], axis=3)
                tl.store(codes_ptr + woffs, lo, mask=wmask, cache_modifier=STORE_CM)
                sh = 2 * (8 * w[:, None] + k[None, :])
                hi = tl.sum(tl.sum((q >> 4) << sh[None, None, :, :], axis=3), axis=2)
                tl.store(hi_ptr + blk[:, None] * G + g[None, :], hi, mask=bmask[:, None], cache_modifier=STORE_CM)
            elif VPW == 8:  # byte codecs on 8-value rows: two words per row, stored as one pair
                k4 = (8 * (k % 4))[None, None, None, :]
                lo = tl.sum(tl.where((k < 4)[None, None, None, :], q << k4, 0), axis=3)
                hi = tl.sum(tl.where((k >= 4)[None, None, None, :], q << k4, 0), axis=3)
                pair = tl.join(lo, hi)
                poffs = woffs[:, :, :, None] * 2 + tl.arange(0, 2)[None, None, None, :]
                tl.store(codes_ptr + poffs, pair, mask=wmask[:, :, :, None], cache_modifier=STORE_CM)
            else:
                word = tl.sum(q << (8 * k)[None, None, None, :], axis=3)
                tl.store(codes_ptr + woffs, word, mask=wmask, cache_modifier=STORE_CM)


def _decode_kernel(codes_ptr, hi_ptr, scale_ptr, y_ptr, n_blocks,
                   BLOCK: tl.constexpr, ROWS: tl.constexpr, G: tl.constexpr, CODEC: tl.constexpr,
                   NW: tl.constexpr, VPW: tl.constexpr, L: tl.constexpr,
                   OUT_BF16: tl.constexpr, LOAD_EV: tl.constexpr = "", STORE_CM: tl.constexpr = "",
                   STAGES: tl.constexpr = 1, OCC: tl.constexpr = 0, FLAT: tl.constexpr = 0,
                   FNUZ: tl.constexpr = 0):
    """FLAT=1: the tile is a 2-D [rows, VPW] tensor, one row = VPW consecutive outputs = one
    code word (Q4/Q6) or pair of words (Q8/FP8). Every load is made in the stores' own layout (one
    row per thread and repetition): no layout conversion, and consecutive threads write consecutive
    16-byte pieces. FLAT=0 is the earlier [ROWS, G, NW, VPW] tile: Triton 3.6 lays its stores out
    with a warp's 32 threads along the ROWS axis, 2 * BLOCK bytes apart (4 partial 32-byte sectors
    per 16-byte store), and round-trips the scales through shared memory for Q4/Q6.
    FNUZ=1: the FP8 codes are e4m3fnuz (exponent bias 8) rather than e4m3fn (bias 7)."""
    if FNUZ:
        F8UNB: tl.constexpr = 128.0
        F8DB: tl.constexpr = 119
        F8STEP: tl.constexpr = 0.0009765625
    else:
        F8UNB: tl.constexpr = 256.0
        F8DB: tl.constexpr = 120
        F8STEP: tl.constexpr = 0.001953125
    g = tl.arange(0, G)
    w = tl.arange(0, NW)
    k = tl.arange(0, VPW)
    n_tiles = tl.cdiv(n_blocks, ROWS)
    RW: tl.constexpr = ROWS * G * NW            # rows of VPW values in a tile
    n_rows = n_blocks * (G * NW)
    for t in tl.range(tl.program_id(0), n_tiles, tl.num_programs(0), num_stages=STAGES):
        if FLAT:
            r = t * RW + tl.arange(0, RW)
            rmask = r < n_rows
            # declared non-contiguous: the coalescer must not widen the word loads to 8 or 16 bytes
            # (a layout the stores would then have to reshuffle through shared memory)
            rr = tl.max_contiguous(r, 1)
            ds = tl.load(scale_ptr + rr // (G * NW), mask=rmask, other=0.0).to(tl.float32)[:, None]
            if CODEC >= 2:
                word = tl.load(codes_ptr + rr, mask=rmask, other=0, eviction_policy=LOAD_EV)
                q = (word[:, None] >> (4 * k)[None, :]) & 15
                if CODEC == 2:
                    hi = tl.load(hi_ptr + rr // NW, mask=rmask, other=0, eviction_policy=LOAD_EV)
                    sh = 2 * (8 * (r % NW)[:, None] + k[None, :])
                    q = q | (((hi[:, None] >> sh) & 3) << 4)
            elif VPW == 8:
                poffs = r[:, None] * 2 + tl.arange(0, 2)[None, :]
                pair = tl.load(codes_ptr + poffs, mask=rmask[:, None], other=0, eviction_policy=LOAD_EV)
                lo, hi = tl.split(pair)
                k4 = (8 * (k % 4))[None, :]
                q = tl.where((k < 4)[None, :], lo[:, None] >> k4, hi[:, None] >> k4) & 255
            else:
                word = tl.load(codes_ptr + rr, mask=rmask, other=0, eviction_policy=LOAD_EV)
                q = (word[:, None] >> (8 * k)[None, :]) & 255
            if CODEC == 0:   # e4m3's 7 magnitude bits are a float16 (subnormals included) / 2**(15 - bias): exact
                mag = ((q & 0x7F) << 7).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32) * F8UNB
                v = tl.where((q & 0x80) != 0, 0.0 - mag, mag)
            else:
                v = (q - L).to(tl.float32)
            y = v * ds
            offs = r[:, None] * VPW + k[None, :]
            if OUT_BF16:
                b = y.to(tl.int32, bitcast=True)
                b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
                yo = b.to(tl.int16).to(tl.bfloat16, bitcast=True)
            else:
                yo = y.to(y_ptr.dtype.element_ty)
            tl.store(y_ptr + offs, yo, mask=rmask[:, None], cache_modifier=STORE_CM)
        else:
            blk = t * ROWS + tl.arange(0, ROWS)
            bmask = blk < n_blocks
            ds = tl.load(scale_ptr + blk, mask=bmask, other=0.0).to(tl.float32)
            woffs = blk[:, None, None] * (G * NW) + g[None, :, None] * NW + w[None, None, :]
            wmask = bmask[:, None, None]
            if CODEC >= 2:
                word = tl.load(codes_ptr + woffs, mask=wmask, other=0, eviction_policy=LOAD_EV)
                q = (word[:, :, :, None] >> (4 * k)[None, None, None, :]) & 15
                if CODEC == 2:
                    hi = tl.load(hi_ptr + blk[:, None] * G + g[None, :], mask=bmask[:, None], other=0,
                                 eviction_policy=LOAD_EV)
                    sh = 2 * (8 * w[:, None] + k[None, :])
                    q = q | (((hi[:, :, None, None] >> sh[None, None, :, :]) & 3) << 4)
            elif VPW == 8:  # byte codecs on 8-value rows: a pair of words per row
                poffs = woffs[:, :, :, None] * 2 + tl.arange(0, 2)[None, None, None, :]
                pair = tl.load(codes_ptr + poffs, mask=wmask[:, :, :, None], other=0, eviction_policy=LOAD_EV)
                lo, hi = tl.split(pair)
                k4 = (8 * (k % 4))[None, None, None, :]
                q = tl.where((k < 4)[None, None, None, :], lo[:, :, :, None] >> k4, hi[:, :, :, None] >> k4) & 255
            else:
                word = tl.load(codes_ptr + woffs, mask=wmask, other=0, eviction_policy=LOAD_EV)
                q = (word[:, :, :, None] >> (8 * k)[None, None, None, :]) & 255
            if CODEC == 0:
                e = (q >> 3) & 15
                m = q & 7
                normal = (((e + F8DB) << 23) | (m << 20)).to(tl.float32, bitcast=True)
                mag = tl.where(e == 0, m.to(tl.float32) * F8STEP, normal)
                v = tl.where((q & 0x80) != 0, 0.0 - mag, mag)
            else:
                v = (q - L).to(tl.float32)
            y = v * ds[:, None, None, None]
            offs = (blk[:, None, None, None] * BLOCK + g[None, :, None, None] * 16
                    + w[None, None, :, None] * VPW + k[None, None, None, :])
            if OUT_BF16:
                b = y.to(tl.int32, bitcast=True)
                b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
                yo = b.to(tl.int16).to(tl.bfloat16, bitcast=True)
            else:
                yo = y.to(y_ptr.dtype.element_ty)
            tl.store(y_ptr + offs, yo, mask=bmask[:, None, None, None], cache_modifier=STORE_CM)


@functools.cache
def _kernels(kind: str, block_size: int = 32):
    """('jit' | 'interp') -> (encode, decode) kernels; 'jit' ones are autotuned per size."""
    if not HAVE_TRITON:
        raise CodecError("Triton is not installed: pip install triton (or use impl='torch', the reference)")
    if kind == "interp":
        if not INTERPRET:
            raise CodecError("on a CPU tensor, Triton kernels run only in Triton's interpreter: start Python "
                             "with TRITON_INTERPRET=1 in the environment (the tests do), or use impl='torch'")
        return triton.jit(_encode_kernel), triton.jit(_decode_kernel)
    def cfgs(table):
        out = []
        for c in table:
            t, nw, st, occ, flat = _fixed(c)
            kw = {"ROWS": max(1, t // block_size), "STAGES": st, "OCC": occ}
            if len(c) == 5:
                kw["FLAT"] = flat
            out.append(triton.Config(kw, num_warps=nw))
        return out
    key = ["n_blocks", "BLOCK", "CODEC"]
    ekey = key + ["FP8_HW", "FNUZ"]   # variant 'hwfp8' and each FP8 format are tuned on their own
    key = key + ["FNUZ"]
    try:
        tune = functools.partial(triton.autotune, do_bench=graph_bench)
        enc = tune(configs=cfgs(ENC_CONFIGS), key=ekey)(triton.jit(_encode_kernel))
    except TypeError:   # an older Triton without autotune(do_bench=...)
        tune = triton.autotune
        enc = tune(configs=cfgs(ENC_CONFIGS), key=ekey)(triton.jit(_encode_kernel))
    dec = tune(configs=cfgs(DEC_CONFIGS), key=key)(triton.jit(_decode_kernel))
    _made[(kind, block_size)] = (enc, dec)
    return enc, dec


@functools.cache
def _jit_plain():
    return triton.jit(_encode_kernel), triton.jit(_decode_kernel)


@functools.cache
def _sm_count(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def _grid(nb: int, rows: int, occ: int, device: torch.device) -> tuple[int]:
    tiles = -(-nb // rows)
    if occ <= 0:
        return (tiles,)
    per = _sm_count(device.index or 0) if device.type == "cuda" else 1   # on the CPU: occ programs in all
    return (max(1, min(tiles, occ * per)),)


def _fixed(config) -> LaunchConfig:
    """A :class:`LaunchConfig`, or a tuple (tile, num_warps[, stages, occ[, flat]]), as a LaunchConfig."""
    c = tuple(config)
    if not 2 <= len(c) <= 5 or not all(isinstance(v, int) for v in c):
        raise CodecError(f"config must be LaunchConfig(tile, num_warps[, stages, occ[, flat]]) of integers, "
                         f"not {config!r}")
    return LaunchConfig(*c)


def resolve_impl(impl: str, device: torch.device) -> str:
    if impl not in ("auto", "torch", "triton"):
        raise CodecError(f"impl must be 'auto', 'torch' or 'triton', not {impl!r}")
    if impl == "auto":
        return "triton" if (HAVE_TRITON and device.type == "cuda" and not INTERPRET) else "torch"
    if impl == "triton" and not HAVE_TRITON:
        raise CodecError("impl='triton' needs Triton: pip install triton (on ROCm torch's image ships it)")
    return impl


def _views(payload: torch.Tensor, codec: Codec, n: int):
    nc = codec.codes_bytes(n)
    codes = payload[: (n // 2 if codec.name == "q6" else nc)].view(torch.int32)
    hi = payload[n // 2: nc].view(torch.int32) if codec.name == "q6" else codes
    scales = payload[nc:].view(codec.scale_dtype)
    return codes, hi, scales


def _launch_args(codec: Codec, n: int, variant: str = "default"):
    if variant not in VARIANTS:
        raise CodecError(f"variant must be one of {VARIANTS}, not {variant!r}")
    nw, vpw = _layout(codec, variant)
    meta = dict(BLOCK=codec.block_size, G=codec.block_size // 16, CODEC=CODEC_ID[codec.name], NW=nw, VPW=vpw,
                L=codec.levels, FP8_HW=0, FNUZ=int(codec.name == "fp8fnuz"))
    if "hints" in variant:   # stream through the caches: the data is touched once
        meta.update(LOAD_EV="evict_first", STORE_CM=".cs")
    if variant == "hwfp8":   # encode only: FP8 codes from the backend's own e4m3 cast (see _encode_kernel)
        if not codec.is_fp8:
            raise CodecError(f"variant 'hwfp8' is for the fp8 codecs (fp8, fp8fnuz), not {codec.name!r}")
        meta["FP8_HW"] = 1
    return meta, n // codec.block_size


def default_encode_variant(codec: Codec, device: torch.device) -> str:
    """'hwfp8' for OCP FP8 on NVIDIA GPUs with an e4m3 cast (compute capability 8.9+), else 'default'.

    Measured on an H200 (benchmarks/results/codec_bandwidth_h200_run6.log): the bit-level FP8 encode is
    instruction-bound at 69-88% of copy bandwidth; the hardware cast reaches 91-102% from 64 MB and was
    bit-exact with the reference at every size. AMD's gfx942 has no cast for this (OCP e4m3fn) format,
    and Triton's interpreter rounds its cast differently, so everywhere else the bit-level code stays.
    gfx942's own format (codec 'fp8fnuz') does have a hardware cast, v_cvt_pk_fp8_f32 (see
    :func:`fp8_conversion_report`), but no ROCm GPU has checked it against the reference here yet, so
    it is not the default there: ask for it with variant='hwfp8'."""
    if codec.name != "fp8" or device.type != "cuda" or not torch.version.cuda:
        return "default"
    return "hwfp8" if torch.cuda.get_device_capability(device) >= (8, 9) else "default"


def encode(x: torch.Tensor, codec, impl: str = "auto", config: tuple[int, int] | None = None,
           variant: str = "auto") -> Encoded:
    """Encode ``x`` (float16/bfloat16) with one fused pass. ``config=(TILE, num_warps)`` skips the autotuner.
    ``variant='auto'`` picks :func:`default_encode_variant`."""
    codec = get_codec(codec)
    check_input(x, codec)
    if variant == "auto":
        variant = default_encode_variant(codec, x.device)
    impl = resolve_impl(impl, x.device)
    if impl == "torch" or not codec.quantized:
        return encode_reference(x, codec)
    x = x.contiguous().view(-1)
    n = x.numel()
    payload = torch.empty(codec.wire_bytes(n), dtype=torch.uint8, device=x.device)
    codes, hi, scales = _views(payload, codec, n)
    meta, nb = _launch_args(codec, n, variant)
    fmax = float(torch.finfo(codec.scale_dtype).max)
    meta["SCALE_BF16"] = codec.scale_dtype == torch.bfloat16
    if meta["FP8_HW"] and x.device.type == "cpu":
        raise CodecError("variant 'hwfp8' runs on a GPU only: Triton's interpreter does not round its fp8 "
                         "cast to nearest even; use variant='default' (bit-level e4m3, exact everywhere)")
    if x.device.type == "cpu":
        enc, _ = _kernels("interp")
        tile, _w, stages, occ, flat = _fixed(config or (INTERPRETER_TILE, 4))
        rows = max(1, tile // codec.block_size)
        enc[_grid(nb, rows, occ, x.device)](x, codes, hi, scales, nb, ROWS=rows, FMAX=fmax, STAGES=stages,
                                            OCC=occ, FLAT=flat, **meta)
    elif config is not None:
        tile, warps, stages, occ, flat = _fixed(config)
        rows = max(1, tile // codec.block_size)
        enc, _ = _jit_plain()
        enc[_grid(nb, rows, occ, x.device)](x, codes, hi, scales, nb, ROWS=rows, FMAX=fmax, num_warps=warps,
                                            STAGES=stages, OCC=occ, FLAT=flat, **meta)
    else:
        enc, _ = _kernels("jit", codec.block_size)
        dev = x.device
        enc[lambda m: _grid(nb, m["ROWS"], m["OCC"], dev)](x, codes, hi, scales, nb, FMAX=fmax, **meta)
    return Encoded(payload, codec, n, x.dtype)


def decode(enc: Encoded, out_dtype: torch.dtype | None = None, impl: str = "auto",
           config: tuple[int, int] | None = None, out: torch.Tensor | None = None,
           variant: str = "default") -> torch.Tensor:
    """Decode a payload with one fused pass (flat tensor, default dtype: the input's)."""
    codec, n = enc.codec, enc.numel
    out_dtype = out_dtype or enc.dtype
    impl = resolve_impl(impl, enc.payload.device)
    if impl == "torch" or not codec.quantized:
        y = decode_reference(enc, out_dtype)
        if out is not None:
            out.copy_(y)
            return out
        return y
    if enc.payload.numel() != codec.wire_bytes(n):
        raise CodecError(f"payload has {enc.payload.numel()} bytes, {codec.label()} of {n} values needs "
                         f"{codec.wire_bytes(n)}: it was cut or made by another codec")
    y = out if out is not None else torch.empty(n, dtype=out_dtype, device=enc.payload.device)
    codes, hi, scales = _views(enc.payload, codec, n)
    meta, nb = _launch_args(codec, n, variant)
    meta.pop("FP8_HW", None)             # an encode-only switch
    meta["OUT_BF16"] = y.dtype == torch.bfloat16
    if enc.payload.device.type == "cpu":
        _, dec = _kernels("interp")
        tile, _w, stages, occ, flat = _fixed(config or (INTERPRETER_TILE, 4))
        rows = max(1, tile // codec.block_size)
        dec[_grid(nb, rows, occ, y.device)](codes, hi, scales, y, nb, ROWS=rows, STAGES=stages, OCC=occ,
                                            FLAT=flat, **meta)
    elif config is not None:
        tile, warps, stages, occ, flat = _fixed(config)
        rows = max(1, tile // codec.block_size)
        _, dec = _jit_plain()
        dec[_grid(nb, rows, occ, y.device)](codes, hi, scales, y, nb, ROWS=rows, num_warps=warps,
                                            STAGES=stages, OCC=occ, FLAT=flat, **meta)
    else:
        _, dec = _kernels("jit", codec.block_size)
        dev = y.device
        dec[lambda m: _grid(nb, m["ROWS"], m["OCC"], dev)](codes, hi, scales, y, nb, **meta)
    return y


def best_configs() -> dict:
    """What the autotuner chose so far: {('encode'|'decode', key...): 'TILE=..., num_warps=...'}."""
    if not HAVE_TRITON:
        return {}
    out = {}
    for (kind, bs), (enc, dec) in list(_kernels_cache_items()):
        if kind != "jit":
            continue
        for name, k in (("encode", enc), ("decode", dec)):
            for key, cfg in getattr(k, "cache", {}).items():
                kw = cfg.kwargs
                out[(name,) + tuple(key)] = (f"TILE={kw.get('ROWS') * bs} warps={cfg.num_warps} "
                                             f"stages={kw.get('STAGES')} occ={kw.get('OCC')}"
                                             + (f" flat={kw['FLAT']}" if "FLAT" in kw else ""))
    return out


_made: dict = {}


def _kernels_cache_items():
    return _made.items()


__all__ = ["encode", "decode", "available", "resolve_impl", "best_configs", "FP8_MAX"]


def compile_report(codec="q6", direction: str = "encode", target: str = settings.DEFAULT_TARGET, tile: int = 4096,
                   num_warps: int = 4, flat: int = 1, variant: str = "default") -> dict:
    """Compile a codec kernel ahead of time for ``target`` (``gfx942`` = MI300X, ``gfx950`` = MI355X,
    ``sm_90`` = H100/H200) without a GPU, and read what the hardware would run: wavefront size,
    registers, LDS, how many 16-byte global loads and stores the kernel issues per thread, and (AMD)
    how many hardware FP8 conversions (``v_cvt_pk_fp8_f32`` on gfx942, ``v_cvt_scalef32_pk_fp8_f32`` on gfx950) it has."""

    if not HAVE_TRITON:
        raise CodecError("compile_report needs Triton: pip install triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    codec = get_codec(codec)
    meta, _ = _launch_args(codec, codec.block_size * 64, variant)
    rows = max(1, tile // codec.block_size)
    consts = dict(meta, ROWS=rows, STAGES=1, OCC=0)
    consts.setdefault("LOAD_EV", "")
    consts.setdefault("STORE_CM", "")
    if direction == "encode":
        fn, sig = _encode_kernel, {"x_ptr": "*fp16", "codes_ptr": "*i32", "hi_ptr": "*i32", "scale_ptr": "*fp16"}
        consts.update(FMAX=65504.0, SCALE_BF16=False, FLAT=flat)
    else:
        fn, sig = _decode_kernel, {"codes_ptr": "*i32", "hi_ptr": "*i32", "scale_ptr": "*fp16", "y_ptr": "*fp16"}
        consts.pop("FP8_HW")
        consts.update(OUT_BF16=False, FLAT=flat)
    sig["n_blocks"] = "i32"
    sig.update({k: "constexpr" for k in consts})
    gpu = GPUTarget("hip", target, 64) if target.startswith("gfx") else GPUTarget("cuda", int(target[3:]), 32)
    src = ASTSource(fn=triton.jit(fn), signature=sig, constexprs=consts,
                    attrs={(i,): [["tt.divisibility", 16]] for i in range(5)})
    ck = triton.compile(src, target=gpu, options={"num_warps": num_warps})
    rep = dict(target=target, codec=codec.name, direction=direction, variant=variant, tile=tile,
               num_warps=num_warps, shared_bytes=ck.metadata.shared)
    if gpu.backend == "hip":
        a = ck.asm["amdgcn"]
        for key in ("wavefront_size", "vgpr_count", "sgpr_count", "group_segment_fixed_size"):
            m = re.search(rf"\.{key}:\s+(\d+)", a)
            rep[key] = int(m.group(1)) if m else None
        rep["loads_16B"] = len(re.findall(r"(global|buffer)_load_dwordx4", a))
        rep["stores_16B"] = len(re.findall(r"(global|buffer)_store_dwordx4", a))
        # gfx942: v_cvt_pk_fp8_f32 (e4m3fnuz); gfx950: v_cvt_scalef32_pk_fp8_f32 (OCP e4m3fn)
        rep["cvt_to_fp8"] = len(re.findall(r"\bv_cvt_(scalef32_)?(pk|sr)_fp8_f32", a))
        rep["cvt_from_fp8"] = len(re.findall(r"\bv_cvt_(scalef32_)?(pk_)?f32_fp8", a))
    else:
        p = ck.asm["ptx"]
        rep["wavefront_size"] = 32
        rep["loads_16B"] = len(re.findall(r"ld\.global(\.[a-zA-Z0-9:_]+)*\.v4\.b32", p))
        rep["stores_16B"] = len(re.findall(r"st\.global(\.[a-zA-Z0-9:_]+)*\.v4\.b32", p))
        rep["cvt_to_fp8"] = len(re.findall(r"cvt\.rn\.satfinite\.e4m3x2\.f32", p))
        rep["cvt_from_fp8"] = len(re.findall(r"cvt\.rn\.f16x2\.e4m3x2", p))
    return rep


def fp8_conversion_report(target: str | None = None) -> list[dict]:
    """Does the fused FP8 encode use the target's hardware FP8 conversion? One row per variant of the
    target's own FP8 codec (:func:`rocmlab.comm.torch_codec.fp8_codec_for`), compiled offline."""

    target = target or settings.DEFAULT_TARGET
    name = fp8_codec_for(target)
    return [compile_report(name, "encode", target, variant=v) for v in ("default", "hwfp8")]
