"""Lab 10's speed ladder: from the FP8 GEMM puzzle's plain kernel to a fast one, one step at a time.

A step is a set of switches of :mod:`rocmlab.course.labs.lab10_fp8_gemm.ladder_kernels` plus a tile.
:func:`check_steps` proves every step computes the same answer (float64 reference, the lab's bound) wherever it
runs, Triton's CPU interpreter included; :func:`isa_fp8_steps` compiles each step offline for an AMD target in its
own FP8 format (FP8 MFMAs, the promotion's multiplies per MFMA, registers, the compiler's occupancy);
:func:`time_fp8_steps` times every step on the GPU here beside ``torch._scaled_mm`` and the bf16 GEMM, in one run.
On a CPU the timing says why it is not run.

Import after :func:`rocmlab.course.puzzles.setup` (the interpreter is chosen before triton is imported).
"""

from __future__ import annotations

import torch

from rocmlab import triton_amd as TA
from rocmlab.course import puzzles as P
from rocmlab.course.ladder import descriptor_memory, zeroed
from rocmlab.course.labs.lab10_fp8_gemm import ladder_kernels as LK
from rocmlab.course.labs.lab10_fp8_gemm import puzzles as F

FAST_FP8 = dict(GROUP_M=8, EVEN=True, SCALAR_SB=True, DESC=True)
#: the steps after round one's tuned kernel, each on top of the one before
COALESCED = dict(FAST_FP8, SA_MMAJOR=True)
UNROLLED = dict(COALESCED, UNROLL=2)
SPLIT = dict(COALESCED, SPLIT_K=2)
IN_PLACE = dict(COALESCED, RESCALE=True)
AHEAD = dict(COALESCED, SCALES_AHEAD=True)
#: ``STREAM_K``: programs per compute unit of the stream-K kernel (the launcher's switch, not a kernel constexpr)
STREAM = dict(AHEAD, STREAM_K=1)

#: (name, what it changes, switches, (BM, BN, num_warps, num_stages) or None for "tuned")
FP8_STEPS = (
    ("v0 plain", "the puzzle's solution: row-major program order, masks", dict(GROUP_M=1, EVEN=False),
     (128, 128, 8, 2)),
    ("v1 grouped", "programs in groups of 8 row tiles share B's tiles in L2", dict(GROUP_M=8, EVEN=False),
     (128, 128, 8, 2)),
    ("v2 even", "no bounds masks (M, N multiples of the tiles)", dict(GROUP_M=8, EVEN=True), (128, 128, 8, 2)),
    ("v3 one weight scale per tile", "BN = 128: the promotion is one multiply-add per element",
     dict(GROUP_M=8, EVEN=True, SCALAR_SB=True), (128, 128, 8, 2)),
    ("v4 descriptors", "A and B tiles through tensor descriptors (TMA on Hopper, buffer loads on AMD)", FAST_FP8,
     (128, 128, 8, 2)),
    ("v5 tuned", "tile, warps and pipeline stages chosen on this GPU", FAST_FP8, None),
    ("v6 scales K-block-major", "activation scales stored (K/128, M): a tile's row scales are one coalesced load",
     COALESCED, (64, 128, 4, 4)),
    ("v7 two blocks per trip", "two 128-deep products issued before either is promoted: one wait per two",
     UNROLLED, (64, 128, 4, 4)),
    ("v8 split-K", "each tile's K blocks shared by 2 programs: twice the programs for the GPU's compute units",
     SPLIT, (64, 128, 4, 4)),
    ("v9 accumulate in place", "acc = tl.dot(a, b, acc * (w_prev / w)): no second accumulator, so a 256 x 128 tile "
     "fits (fewer bytes from L2 per FLOP)", IN_PLACE, (256, 128, 8, 3)),
    ("v10 tuned", "tile, warps, stages, split and in-place accumulation chosen on this GPU, per shape", COALESCED,
     None),
    ("v11 scales a block ahead", "each trip loads the next K block's scales, so their L2 round trip overlaps this "
     "block's copies and products instead of stalling the promotion", AHEAD, (64, 128, 4, 4)),
    ("v12 stream-K", "a persistent grid (one program per compute unit) shares the tiles x K/128 block products "
     "evenly; tiles split between programs are summed by float32 atomic adds, the last piece writes C", STREAM,
     (128, 128, 8, 3, 1, 1, 0, 1)),
    ("v13 tuned", "tile, warps, stages, in-place accumulation and programs per compute unit of the stream-K grid "
     "(or none) chosen on this GPU, per shape", AHEAD, None),
)

#: tiles tried by v5: (BM, BN, num_warps, num_stages)
FP8_TILES = ((128, 128, 8, 2), (128, 128, 8, 3), (128, 128, 4, 3), (128, 128, 4, 4), (128, 128, 8, 4),
             (64, 128, 4, 4), (64, 128, 4, 5), (256, 128, 8, 3))
#: tiles tried by the last step: (BM, BN, num_warps, num_stages, SPLIT_K, UNROLL, RESCALE)
FP8_LAST_TILES = (
    (256, 128, 8, 3, 1, 1, 1), (256, 128, 8, 3, 2, 1, 1), (256, 128, 8, 3, 3, 1, 1), (256, 128, 8, 4, 1, 1, 1),
    (256, 128, 8, 4, 2, 1, 1), (128, 128, 8, 3, 1, 1, 1), (128, 128, 8, 3, 2, 1, 1), (128, 128, 8, 4, 1, 1, 1),
    (128, 128, 4, 3, 1, 1, 1), (128, 128, 4, 4, 1, 1, 1), (64, 128, 4, 3, 1, 1, 1), (64, 128, 4, 3, 2, 1, 1),
    (64, 128, 4, 3, 1, 1, 0), (64, 128, 4, 4, 1, 1, 0), (64, 128, 4, 3, 2, 1, 0), (128, 128, 8, 4, 1, 1, 0),
    (128, 128, 8, 3, 2, 1, 0))
#: tiles tried by v13: (BM, BN, num_warps, num_stages, SPLIT_K, UNROLL, RESCALE, STREAM_K programs per compute unit)
#: (No stream-K tile accumulates in place: see STREAM_IN_PLACE_RACE.)
FP8_STREAM_TILES = (
    (64, 128, 4, 4, 1, 1, 0, 0), (64, 128, 4, 3, 1, 1, 0, 0), (128, 128, 8, 3, 1, 1, 1, 0),
    (128, 128, 8, 3, 1, 1, 0, 1), (128, 128, 8, 4, 1, 1, 0, 1), (64, 128, 4, 4, 1, 1, 0, 2),
    (64, 128, 4, 3, 1, 1, 0, 2), (64, 128, 4, 4, 1, 1, 0, 3), (128, 128, 8, 3, 1, 1, 0, 2),
    (128, 128, 4, 3, 1, 1, 1, 0))
#: Why the stream-K kernel is not offered with in-place accumulation: on an H100 (Triton 3.6), 128x128 w8 s3 in place
#: with 2 programs per SM gave a wrong C in 9 of 40 runs at 1024x4608x7168 (relative error 0.011-0.024: some tiles
#: miss a piece), where the same tile without in-place accumulation, and in place with 1 program per SM, were right
#: in 40 of 40. A race between a tile's pieces that this combination exposes, not yet found.
STREAM_IN_PLACE_RACE = ("STREAM_K with RESCALE (in-place accumulation) is not offered: on an H100 it gave wrong "
                        "answers in 9 of 40 runs (a race between a tile's pieces, not yet found); use STREAM_K with "
                        "RESCALE off, or RESCALE without STREAM_K")

#: a timed variant's relative error against the float32 product of the dequantised inputs above which it is wrong
#: (the right ones measure 0.002-0.003 at the lab's shapes: FP8 inputs, bf16 output)
WRONG_REL_ERR = 0.01


def tiles_for(switches: dict, tile, tiles=FP8_TILES, split_tiles=FP8_LAST_TILES,
              stream_tiles=FP8_STREAM_TILES) -> tuple:
    """The tiles a step is timed at: its own, or for a tuned step the tile set (with split-K for the steps that
    build on SA_MMAJOR, with stream-K for those that build on SCALES_AHEAD)."""
    if tile:
        return (tile,)
    if switches.get("SCALES_AHEAD"):
        return stream_tiles
    return split_tiles if switches.get("SA_MMAJOR") else tiles


def tile_label(t) -> str:
    """``64x128 w4 s4``, with `` k2`` for a split-K tile, `` u2`` for two blocks per trip, `` in place`` for
    RESCALE, `` stream-K x2`` for a stream-K grid of 2 programs per compute unit."""
    return ("{}x{} w{} s{}".format(*t[:4]) + (f" k{t[4]}" if len(t) > 4 and t[4] > 1 else "")
            + (f" u{t[5]}" if len(t) > 5 and t[5] > 1 else "") + (" in place" if len(t) > 6 and t[6] else "")
            + (f" stream-K x{t[7]}" if len(t) > 7 and t[7] else ""))


def fp8_gemm(a, b, a_scale, b_scale, switches: dict, tile=(128, 128, 8, 2), units: int | None = None) -> torch.Tensor:
    """The block-scaled FP8 GEMM (layouts of :mod:`rocmlab.course.labs.lab10_fp8_gemm.kernels`) with one ladder
    step's switches. ``tile``: (BM, BN, num_warps, num_stages), optionally with SPLIT_K and UNROLL after them
    (these override the switches'), RESCALE and STREAM_K (programs per compute unit; 0: no stream-K). ``units``:
    the compute units the stream-K grid is sized for (default: the GPU's multiprocessors; 3 on a CPU, so that the
    interpreter's check splits tiles between programs). With ``SA_MMAJOR`` the activation scales should already be K-block-major (``a_scale.stride(0) == 1``,
    as a quantiser that knows the GEMM writes them); row-major ones are copied into that layout first."""
    import triton

    bm, bn, warps, stages = tile[:4]
    sw = dict(switches)
    if len(tile) > 4:
        sw["SPLIT_K"] = tile[4]
    if len(tile) > 5:
        sw["UNROLL"] = tile[5]
    if len(tile) > 6:
        sw["RESCALE"] = bool(tile[6])
    if len(tile) > 7:
        sw["STREAM_K"] = tile[7]
    stream = sw.pop("STREAM_K", 0)
    m, k = a.shape
    n = b.shape[0]
    if sw.get("EVEN") and (m % bm or n % bn):
        raise ValueError(f"the EVEN step needs M, N multiples of the tile: {m}x{n}, tile {bm}x{bn}")
    if sw.get("SCALAR_SB") and (bn != 128 or not sw.get("EVEN")):
        raise ValueError(f"the SCALAR_SB step needs BN = 128 (one weight-scale block per tile) and EVEN: BN={bn}")
    if sw.get("DESC") and not sw.get("EVEN"):
        raise ValueError("the DESC step needs EVEN")
    if (sw.get("SA_MMAJOR") or sw.get("UNROLL", 1) > 1 or sw.get("SPLIT_K", 1) > 1 or sw.get("RESCALE")) and not (
            sw.get("DESC") and sw.get("SCALAR_SB")):
        raise ValueError("the SA_MMAJOR, UNROLL, SPLIT_K and RESCALE steps build on DESC and SCALAR_SB: turn those on")
    if sw.get("RESCALE") and sw.get("UNROLL", 1) > 1:
        raise ValueError("RESCALE and UNROLL = 2 are two ways to promote: choose one")
    if (sw.get("SCALES_AHEAD") or stream) and not (sw.get("SA_MMAJOR") and sw.get("UNROLL", 1) == 1):
        raise ValueError("the SCALES_AHEAD and STREAM_K steps build on SA_MMAJOR with one block per trip (UNROLL = 1)")
    if stream and (sw.get("SPLIT_K", 1) > 1 or not sw.get("SCALES_AHEAD")):
        raise ValueError("STREAM_K shares K blocks its own way and loads scales ahead: SPLIT_K = 1, SCALES_AHEAD on")
    if stream and sw.get("RESCALE"):
        raise ValueError(STREAM_IN_PLACE_RACE)
    split, unroll = sw.get("SPLIT_K", 1), sw.get("UNROLL", 1)
    if (k // 128) % unroll or (k // 128) // unroll < split:
        raise ValueError(f"K/128 = {k // 128} blocks must split into UNROLL = {unroll} blocks per trip, at least "
                         f"one trip for each of SPLIT_K = {split} programs")
    if sw.get("DESC"):
        descriptor_memory()
    if sw.get("SA_MMAJOR") and a_scale.stride(0) != 1:
        a_scale = a_scale.t().contiguous().t()          # (M, K/128) viewed over a (K/128, M) buffer
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    if stream:
        if units is None:
            units = (torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == "cuda"
                     else 3)
        programs = min(tiles * (k // 128), units * stream)
        ws = zeroed(a.device, tiles * bm * bn, torch.float32)
        locks = zeroed(a.device, tiles)
        LK.fp8_gemm_stream_k[(programs,)](a, b, a_scale, b_scale, c, m, n, k, ws, locks, BM=bm, BN=bn, BK=128,
                                          GROUP_M=sw.get("GROUP_M", 8), RESCALE=bool(sw.get("RESCALE")),
                                          WARP_SPEC=bool(sw.get("WARP_SPEC")), num_warps=warps, num_stages=stages)
        return c
    if split > 1:
        ws = torch.empty(split, m, n, device=a.device, dtype=torch.float32)
        locks = zeroed(a.device, tiles)
    else:
        ws, locks = c, c                                  # not read: no split
    LK.fp8_gemm_ladder[(tiles, split)](a, b, a_scale, b_scale, c, m, n, k, ws, locks, BM=bm, BN=bn, BK=128,
                                       num_warps=warps, num_stages=stages, **sw)
    return c


def check_steps(device: str | None = None, seed: int | None = None) -> list[dict]:
    """Every FP8 GEMM step against a float64 reference on fresh inputs, in this machine's FP8 format:
    [{ladder, step, causal, max_err, bound, ok}]. Small tiles so Triton's CPU interpreter finishes quickly; ``device``
    defaults to the GPU where torch sees one (the same code runs there)."""
    device = device or P.device()       # the GPU where torch sees one (Triton compiles for it), else the CPU
    g = torch.Generator().manual_seed(seed if seed is not None else torch.seed())
    rows = []
    fmt = F.machine_format()
    dt = F.TORCH_DTYPES[fmt]
    m, nn, kk = 96, 256, 512          # 3 x 2 tiles of 32 x 128 (a group of 8 row tiles cut short), 4 K blocks
    a = (torch.randn(m, kk, generator=g) * 4).to(dt)
    b = (torch.randn(nn, kk, generator=g) * 4).to(dt)
    sa = torch.rand(m, kk // 128, generator=g) + 0.5
    sb = torch.rand(nn // 128, kk // 128, generator=g) + 0.5
    ad = a.double() * sa.double().repeat_interleave(128, 1)
    bd = b.double() * sb.double().repeat_interleave(128, 0).repeat_interleave(128, 1)
    ref = ad @ bd.T
    gbound = F.gemm_bound(ad, bd, ref, F.acc_unit())
    a, b, sa, sb = (t.to(device) for t in (a, b, sa, sb))
    # every step at a small tile, and the combinations the tuned steps' tiles mix. The stream-K grid is sized for
    # 5 compute units: 24 block products over 5 (or 10) programs, so tiles are split between programs
    cases = [(name, sw, (32, 128, 4, 1)) for name, _, sw, _tile in FP8_STEPS]
    cases += [("v10 tuned (split 2, in place)", COALESCED, (32, 128, 4, 1, 2, 1, 1)),
              ("v13 tuned (split 2, scales ahead)", AHEAD, (32, 128, 4, 1, 2, 1, 0)),
              ("v13 tuned (stream-K x2)", AHEAD, (32, 128, 4, 1, 1, 1, 0, 2))]
    for name, sw, tile in cases:
        out = fp8_gemm(a, b, sa, sb, sw, tile, units=5).double().cpu()
        ok = bool(((out - ref).abs() <= gbound).all())
        rows.append(dict(ladder="fp8 gemm", step=name, causal=None, max_err=float((out - ref).abs().max()),
                         bound=float(gbound.max()) if hasattr(gbound, "max") else float(gbound), ok=ok))
    return rows


def isa_fp8_steps(target: str = F.settings.DEFAULT_TARGET, steps=None) -> list[dict]:
    """FP8 GEMM steps compiled offline for ``target`` in its own FP8 format (v5 at v4's tile): FP8 MFMAs, the
    promotion's multiplies per MFMA, registers and the compiler's occupancy. A compile figure, not a measurement."""
    ty = "*" + F.TRITON_TYPES[F.settings.FP8_FORMATS[target]]
    sig = {"a_ptr": ty, "b_ptr": ty, "a_scale_ptr": "*fp32", "b_scale_ptr": "*fp32", "c_ptr": "*bf16", "M": "i32",
           "N": "i32", "K": "i32", "ws_ptr": "*fp32", "lock_ptr": "*i32"}
    rows = []
    for name, what, sw, tile in FP8_STEPS:
        if steps is not None and name not in steps:
            continue
        bm, bn, warps, stages = (tile or (128, 128, 8, 2))[:4]
        sw = dict(sw)
        stream = sw.pop("STREAM_K", 0)
        off = dict(SCALAR_SB=False, DESC=False, SA_MMAJOR=False, UNROLL=1, SPLIT_K=1, RESCALE=False,
                   SCALES_AHEAD=False, WARP_SPEC=False)
        kernel, consts = LK.fp8_gemm_ladder, dict(off, BM=bm, BN=bn, BK=128, **sw)
        if stream:   # its own kernel: the tile's K loop inside a loop over this program's pieces
            kernel = LK.fp8_gemm_stream_k
            consts = dict(BM=bm, BN=bn, BK=128, GROUP_M=sw.get("GROUP_M", 8), RESCALE=bool(sw.get("RESCALE")), WARP_SPEC=False)
        try:
            r = TA.compile_amd(kernel, sig, consts, target, num_warps=warps, num_stages=stages,
                               divisible=tuple(sig))
        except TA.TritonAmdError as exc:     # said, not hidden: Triton's AMD backend refused this step here
            rows.append({"step": name, "what": what, "target": target,
                         "compile": f"failed at {bm}x{bn} w{warps} s{stages}: {str(exc)[-120:]}"})
            continue
        mfma = r.mfma()
        fp8 = sum(n for k, n in mfma.items() if "fp8" in k or "f8" in k)
        rows.append({"step": name, "what": what, "target": target, "FP8 MFMA": fp8,
                     "multiplies / MFMA": round(r.count(r"v_(pk_)?mul_f32\w*") / fp8, 2) if fp8 else None,
                     "FMAs / MFMA": round(r.count(r"v_(pk_)?fma_f32\w*|v_fmac_f32\w*") / fp8, 2) if fp8 else None,
                     "atomics": r.count(r"(global|buffer)_atomic\w*"),
                     "VGPRs": r.vgprs, "AGPRs": r.agprs, "compiler's waves/SIMD": r.compiler_occupancy})
    return rows


def time_fp8_steps(shape=(1024, 1536, 7168), tiles=FP8_TILES, steps=None,
                   split_tiles=FP8_LAST_TILES) -> list[dict] | str:
    """Every FP8 GEMM step (or those named in ``steps``) on the GPU here, then per-tensor ``torch._scaled_mm`` and
    the bf16 GEMM, in one run; each step's relative error against a float32 product of the dequantised inputs."""
    if not torch.cuda.is_available():
        return ("not timed: no GPU here; on a GPU this cell times every step against torch._scaled_mm and bf16")
    from rocmlab.profile.timing import graph_bench

    m, n, k = shape
    dt = F.TORCH_DTYPES[F.machine_format()]
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt)
    sa = torch.rand(m, k // 128, device="cuda", generator=g) + 0.5
    sb = torch.rand(n // 128, k // 128, device="cuda", generator=g) + 0.5
    flops = 2.0 * m * n * k
    ref = (a.float() * sa.repeat_interleave(128, 1)) @ (b.float() * sb.repeat_interleave(128, 0)
                                                        .repeat_interleave(128, 1)).T
    sa_mmajor = sa.t().contiguous().t()    # the layout a quantiser writing for the SA_MMAJOR steps produces
    rows, prev = [], None
    for name, what, sw, tile in FP8_STEPS:
        if steps is not None and name not in steps:
            continue
        scales = sa_mmajor if sw.get("SA_MMAJOR") else sa
        best, wrong = None, []
        for t in tiles_for(sw, tile, tiles, split_tiles):
            try:
                err = float((fp8_gemm(a, b, scales, sb, sw, t).float() - ref).norm() / ref.norm())
                if not err <= WRONG_REL_ERR:          # NaN too: a miscompiled variant is never timed or chosen
                    wrong.append(tile_label(t))
                    continue
                ms = graph_bench(lambda t=t, sw=sw, scales=scales: fp8_gemm(a, b, scales, sb, sw, t))
            except Exception:   # noqa: BLE001,S112 - a tile this GPU cannot run
                continue
            if best is None or ms < best[1]:
                best = (t, ms, err)
        note = f"wrong answer, not timed: {', '.join(wrong)}" if wrong else ""
        if best is None:
            if wrong:
                rows.append(dict(step=name, what=what, ms=None, note=note))
            continue
        t, ms, err = best
        rows.append(dict(step=name, what=what, tile=tile_label(t), ms=ms, TFLOPs=flops / ms / 1e9,
                         gain=(prev / ms) if prev else None, rel_err=err, note=note))
        prev = ms
    one = torch.ones((), device="cuda")
    vendor = {}
    for label, fn in (("torch._scaled_mm per-tensor",
                       lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)),
                      ("bf16 torch.matmul", lambda a16=a.to(torch.bfloat16), b16=b.to(torch.bfloat16): a16 @ b16.T)):
        try:
            vendor[label] = graph_bench(fn)
            rows.append(dict(step=f"vendor: {label}", what="", ms=vendor[label], TFLOPs=flops / vendor[label] / 1e9))
        except Exception:   # noqa: BLE001,S112 - a recipe this torch/GPU lacks
            continue
    for r in rows:
        for label, ms in vendor.items():
            if r.get("ms"):
                r[f"vs {label}"] = ms / r["ms"]
        r["shape"] = shape
    return rows
