"""Lab 09's speed ladder: from the attention puzzle's plain kernel to a fast one, one step at a time.

A step is a set of switches of :mod:`rocmlab.course.labs.lab09_attention_on_mi300x.ladder_kernels` plus a tile.
:func:`check_steps` proves every step computes the same answer (float64 reference, the lab's bound) wherever it
runs, Triton's CPU interpreter included; :func:`isa_steps` compiles each step offline for an AMD target and counts
what the step changes in the code (``v_exp_f32``, ``v_mul_f32``/FMAs, masks as ``v_cndmask``, MFMAs, registers, the
compiler's occupancy); :func:`time_steps` times every step on the GPU here beside torch's SDPA, in one run, each
step's gain over the one before and its ratio to the vendor. On a CPU the timing says why it is not run.

Import after :func:`rocmlab.course.puzzles.setup` (the interpreter is chosen before triton is imported).
"""

from __future__ import annotations

import math

import torch

from rocmlab import settings
from rocmlab import triton_amd as TA
from rocmlab.course import puzzles as P
from rocmlab.course.ladder import descriptor_memory, zeroed
from rocmlab.course.labs.lab09_attention_on_mi300x import ladder_kernels as LK

OFF = dict(EXP2=False, SPLIT=False, EVEN=False, LONGEST_FIRST=False)
FAST_ATTENTION = dict(EXP2=True, SPLIT=True, EVEN=True, LONGEST_FIRST=True, OUT16=True, DESC=True)
HEADS_FIRST = dict(FAST_ATTENTION, ACC_DOT=True, HEADS_FIRST=True)
ONE_LOOP = dict(HEADS_FIRST, ONE_LOOP=True)

#: (name, what it changes, switches, (BM, BN, num_warps, num_stages) or a tuned step's tile set: None for
#: ATTENTION_TILES, "split" for SPLIT_TILES, "last" for LAST_TILES)
ATTENTION_STEPS = (
    ("v0 plain", "the puzzle's solution: masks on every block, scale then exp", OFF, (128, 64, 4, 2)),
    ("v1 exp2", "exp2 with the scale and log2 e folded into one multiply-add", dict(OFF, EXP2=True), (128, 64, 4, 2)),
    ("v2 split", "no causal mask below the diagonal band", dict(OFF, EXP2=True, SPLIT=True), (128, 64, 4, 2)),
    ("v3 even", "no bounds masks (N a multiple of the tiles)", dict(OFF, EXP2=True, SPLIT=True, EVEN=True),
     (128, 64, 4, 2)),
    ("v4 longest first", "causal programs with the most blocks start first",
     dict(EXP2=True, SPLIT=True, EVEN=True, LONGEST_FIRST=True), (128, 64, 4, 2)),
    ("v5 fp16 out", "O stored in float16, as SDPA's: half the bytes written",
     dict(EXP2=True, SPLIT=True, EVEN=True, LONGEST_FIRST=True, OUT16=True), (128, 64, 4, 2)),
    ("v6 descriptors", "Q, K, V, O through tensor descriptors (TMA on Hopper, buffer loads on AMD)",
     FAST_ATTENTION, (128, 64, 4, 2)),
    ("v7 tuned", "tile, warps and pipeline stages chosen on this GPU", FAST_ATTENTION, None),
    ("v8 P V in place", "tl.dot(p, v, acc): the matrix instruction adds into the accumulator",
     dict(FAST_ATTENTION, ACC_DOT=True), (128, 64, 4, 2)),
    ("v9 tuned", "tile, warps and stages chosen on this GPU, per head dim and length", dict(FAST_ATTENTION, ACC_DOT=True),
     None),
    ("v10 all heads' longest first", "grid (heads, query blocks): every head's longest block starts before any "
     "head's shorter ones (tile chosen again)", HEADS_FIRST, None),
    ("v11 one loop", "causal: one key loop, masking only in the diagonal band's trips, so the pipeline fetches the "
     "band's tiles during the trips before it (tile chosen again)", ONE_LOOP, None),
    ("v12 split keys", "each query block's keys in 2 parts, one program each; the last part to finish combines "
     "them: twice the programs for short sequences (tile chosen again)", dict(ONE_LOOP, SPLIT_KV=2), "split"),
    ("v13 tuned", "tile, warps, stages, key parts (1, 2 or 4) and grid and loops (v10-v11's or v9's) chosen on this "
     "GPU, per head dim and length", ONE_LOOP, "last"),
    ("v14 warp-specialized", "v13's choices plus tiles whose key loop Triton warp-specializes (one warp group issues "
     "the copies, the others compute): NVIDIA Hopper and later only; Triton's AMD backend ignores the flag (the "
     "offline gfx942 code is the same), so on MI300X this step is v13", ONE_LOOP, "ws"),
)

#: tiles tried by the last step: (BM, BN, num_warps, num_stages)
ATTENTION_TILES = ((128, 64, 4, 2), (128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 2), (128, 128, 8, 3),
                   (128, 128, 4, 3), (64, 64, 4, 3), (128, 32, 4, 4), (128, 64, 4, 4), (64, 64, 4, 4), (64, 128, 4, 3),
                   (64, 32, 4, 3))
#: tiles tried by v11 (two key parts each) and v12 (BM, BN, num_warps, num_stages, key parts)
#: (128 x 64 with 4 warps and 2 key parts spills registers at head dim 128 in Triton's sm_90 code: 8 warps there)
SPLIT_TILES = ((64, 64, 4, 3, 2), (64, 128, 4, 3, 2), (128, 64, 8, 3, 2), (128, 128, 8, 3, 2))
#: a tile's flag (after its key parts) that turns v10's heads-first grid and v11's one loop off: round 10's v9 setup
#: (grid (query blocks, heads), two key loops when causal)
V9_SETUP = "v9 setup"
#: tiles tried by v13: v9's, v11's and v12's tiles with v13's switches, and every v9 tile with v9's setup, so that
#: v13's set holds v9's and the fastest it measures is never v9's loss
LAST_TILES = ATTENTION_TILES + ((64, 64, 4, 3, 2), (64, 128, 4, 3, 2), (128, 64, 8, 3, 2), (64, 64, 4, 3, 4),
                                (128, 64, 8, 2)) + tuple(t + (1, V9_SETUP) for t in ATTENTION_TILES)
#: a tile's flag (after its key parts, with or without V9_SETUP): the key loop is warp-specialized
#: (``tl.range(..., warp_specialize=True)``, the kernel's WARP_SPEC switch)
WARP_SPECIALIZED = "warp-specialized"
#: tiles tried by v14: v13's, and these with the key loop warp-specialized, in either setup. (Triton 3.6 on an H100
#: refused some other tiles so, and gave NaN at head dim 64 with 128 x 128 at 4 warps: a variant is timed only
#: after its answer passed, see time_steps)
WS_TILES = tuple(t + (1, WARP_SPECIALIZED) for t in ((128, 64, 4, 2), (128, 64, 8, 3), (128, 128, 8, 3))) + tuple(
    t + (1, V9_SETUP, WARP_SPECIALIZED) for t in ((128, 64, 8, 3), (128, 128, 8, 3), (128, 128, 8, 2)))


def tiles_for(switches: dict, tile) -> tuple:
    """The tiles a step is timed at: its own, or a tuned step's tile set."""
    if isinstance(tile, tuple):
        return (tile,)
    return {None: ATTENTION_TILES, "split": SPLIT_TILES, "last": LAST_TILES, "ws": LAST_TILES + WS_TILES}[tile]


def has_v9_setup(tile) -> bool:
    """The tile is flagged with :data:`V9_SETUP` (after its key parts)."""
    return V9_SETUP in tile[5:]


def tile_label(t) -> str:
    """``128x64 w4 s2``, with `` keys/2`` for a tile whose key range is split in 2 parts, then its flags
    (`` v9 setup``, `` warp-specialized``)."""
    return ("{}x{} w{} s{}".format(*t[:4]) + (f" keys/{t[4]}" if len(t) > 4 and t[4] > 1 else "")
            + "".join(f" {flag}" for flag in t[5:]))


def flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool, switches: dict,
          tile=(128, 64, 4, 2)) -> torch.Tensor:
    """FlashAttention forward on (B, H, N, D) float16 tensors with one ladder step's switches (``OUT16``: a float16
    O, else float32). ``tile``: (BM, BN, num_warps, num_stages), optionally with the key parts (SPLIT_KV) after them
    and then flags: :data:`V9_SETUP`, which turns HEADS_FIRST and ONE_LOOP off (v13's tiles with round 10's v9 setup),
    and :data:`WARP_SPECIALIZED`, which turns WARP_SPEC on (v14's)."""
    import triton

    bm, bn, warps, stages = tile[:4]
    b, h, n, d = q.shape
    sw = dict(switches)
    if len(tile) > 4:
        sw["SPLIT_KV"] = tile[4]
    if has_v9_setup(tile):
        sw.update(HEADS_FIRST=False, ONE_LOOP=False)
    if WARP_SPECIALIZED in tile[5:]:
        sw["WARP_SPEC"] = True
    out16 = sw.pop("OUT16", False)
    parts = sw.get("SPLIT_KV", 1)
    if sw.get("ONE_LOOP") and not sw.get("EVEN"):
        raise ValueError("the ONE_LOOP step needs EVEN (its band trips mask only the causal part)")
    if parts > 1 and not (sw.get("HEADS_FIRST") and sw.get("EXP2") and sw.get("DESC")):
        raise ValueError("the SPLIT_KV step builds on HEADS_FIRST, EXP2 and DESC: turn those on")
    if sw.get("EVEN") and (n % bm or n % bn):
        raise ValueError(f"the EVEN step needs N a multiple of both tiles: N={n}, tiles {bm}x{bn}")
    if sw.get("SPLIT") and bm % bn:
        raise ValueError(f"the SPLIT step needs BM a multiple of BN: {bm}x{bn}")
    if sw.get("DESC") and not sw.get("EVEN"):
        raise ValueError("the DESC step needs EVEN (its descriptors span all heads' rows)")
    if sw.get("DESC"):
        descriptor_memory()
    qf, kf, vf = (t.reshape(b * h, n, d).contiguous() for t in (q, k, v))
    o = torch.empty(b * h, n, d, device=q.device, dtype=torch.float16 if out16 else torch.float32)
    blocks = triton.cdiv(n, bm)
    if parts > 1:   # the parts' acc, m and l, and one counter per (head, query block)
        ws = torch.empty(parts * b * h * n * (d + 2), device=q.device, dtype=torch.float32)
        locks = zeroed(q.device, b * h * blocks)
    else:
        ws, locks = o, o                   # not read
    grid = (b * h * parts, blocks) if sw.get("HEADS_FIRST") else (blocks, b * h)
    LK.flash_ladder[grid](qf, kf, vf, o, n, 1.0 / math.sqrt(d), ws, locks, D=d, BM=bm, BN=bn, CAUSAL=causal,
                          num_warps=warps, num_stages=stages, ROWS=b * h * n, **sw)
    return o.reshape(b, h, n, d)


def attention_reference(q, k, v, causal: bool) -> torch.Tensor:
    """float64 attention on the CPU: the answer every step must give."""
    qd, kd, vd = (t.double().cpu() for t in (q, k, v))
    s = qd @ kd.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[-2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ vd


def check_steps(device: str | None = None, n: int = 128, d: int = 32, seed: int | None = None) -> list[dict]:
    """Every attention step, causal and not, against a float64 reference on fresh inputs: [{ladder, step, causal,
    max_err, bound, ok}]. Small tiles so Triton's CPU interpreter finishes quickly; ``device`` defaults to the GPU
    where torch sees one (the same code runs there)."""
    device = device or P.device()       # the GPU where torch sees one (Triton compiles for it), else the CPU
    g = torch.Generator().manual_seed(seed if seed is not None else torch.seed())
    rows = []
    q, k, v = (torch.randn(1, 2, n, d, generator=g).to(torch.float16).to(device) for _ in range(3))
    bound = 2.0 ** -9 * float(v.abs().max())     # the lab's bound (the puzzles': 2^-9 max|V|)
    for causal in (True, False):
        ref = attention_reference(q, k, v, causal)
        # every step at a small tile (v12 splits the keys in 2 parts), 3 and 4 parts as v13's tiles may, the key
        # split with the two loops of v2-v10, and v13's switches with a tile flagged with v9's setup
        cases = [(name, sw, (32, 16, 4, 1)) for name, _, sw, _tile in ATTENTION_STEPS]
        cases += [("v13 tuned (keys/3)", ONE_LOOP, (32, 16, 4, 1, 3)), ("v13 tuned (keys/4)", ONE_LOOP, (32, 16, 4, 1, 4)),
                  ("v13 tuned (keys/2, two loops)", dict(HEADS_FIRST, SPLIT_KV=2), (32, 16, 4, 1)),
                  ("v13 tuned (v9 setup)", ONE_LOOP, (32, 16, 4, 1, 1, V9_SETUP)),
                  ("v14 (warp-specialized)", ONE_LOOP, (32, 16, 4, 1, 1, WARP_SPECIALIZED)),
                  ("v14 (v9 setup, warp-specialized)", ONE_LOOP, (32, 16, 4, 1, 1, V9_SETUP, WARP_SPECIALIZED))]
        for name, sw, tile in cases:
            out = flash(q, k, v, causal, sw, tile).double().cpu()
            err = float((out - ref).abs().max())
            rows.append(dict(ladder="attention", step=name, causal=causal, max_err=err, bound=bound, ok=err <= bound))
    return rows


ATTN_SIG = {"q_ptr": "*fp16", "k_ptr": "*fp16", "v_ptr": "*fp16", "o_ptr": "*fp32", "N": "i32", "sm_scale": "fp32",
            "ws_ptr": "*fp32", "lock_ptr": "*i32", "ROWS": "i32"}


def isa_steps(target: str = settings.DEFAULT_TARGET, causal: bool = True, d: int = 128, steps=None) -> list[dict]:
    """Attention steps (each at its own tile; v5 at the lab's MI300X tile) compiled offline for ``target``: what
    each step changes in the code, per MFMA (the compiler unrolls and pipelines the loop differently per step, so
    raw counts mislead; per ``v_mfma`` they compare). ``steps``: names to compile (default all). A compile figure,
    not a measurement of a GPU."""
    rows = []
    for name, what, sw, tile in ATTENTION_STEPS:
        if steps is not None and name not in steps:
            continue
        bm, bn, warps, stages = (tile if isinstance(tile, tuple) else (128, 64, 4, 2))[:4]
        sw = dict(sw)
        sig = dict(ATTN_SIG, o_ptr="*fp16" if sw.pop("OUT16", False) else "*fp32")
        r = TA.compile_amd(LK.flash_ladder, sig, dict(dict(DESC=False, ACC_DOT=False, HEADS_FIRST=False, SPLIT_KV=1, ONE_LOOP=False, WARP_SPEC=False), D=d, BM=bm, BN=bn,
                                                        CAUSAL=causal, **sw), target,
                           num_warps=warps, num_stages=stages, divisible=("q_ptr", "k_ptr", "v_ptr", "o_ptr", "N",
                                                                          "ROWS"))
        mfma = sum(r.mfma().values())
        per = (lambda n, mfma=mfma: round(n / mfma, 2)) if mfma else (lambda n: None)
        rows.append({"step": name, "what": what, "target": target, "v_mfma": mfma,
                     "v_exp_f32 / MFMA": per(r.count(r"v_exp_f32\w*")),
                     "multiplies / MFMA": per(r.count(r"v_(pk_)?mul_f32\w*")),
                     "v_cndmask (masks) / MFMA": per(r.count(r"v_cndmask\w*")),
                     "atomics": r.count(r"(global|buffer)_atomic\w*"),
                     "VGPRs": r.vgprs, "AGPRs": r.agprs, "compiler's waves/SIMD": r.compiler_occupancy})
    return rows


def time_steps(causal: bool = True, shape=(4, 16, 4096, 128), tiles=None, steps=None) -> list[dict] | str:
    """Every attention step (or those named in ``steps``) on the GPU here, then the best SDPA backend, in one run:
    ms, TFLOP/s, gain over the step before, ratio to the best SDPA. On a CPU: why nothing is timed."""
    if not torch.cuda.is_available():
        return ("not timed: no GPU here. Triton's CPU interpreter runs each program in numpy, so a time says "
                "nothing about a GPU; on a GPU this cell times every step against torch's SDPA")
    import torch.nn.functional as Fn

    from rocmlab.course.labs.lab09_attention_on_mi300x.lab import attention_flops, sdpa_backends
    from rocmlab.profile.timing import graph_bench

    b, h, n, d = shape
    g = torch.Generator(device="cuda").manual_seed(n)
    q, k, v = (torch.randn(b, h, n, d, device="cuda", dtype=torch.float16, generator=g) for _ in range(3))
    flops = attention_flops(b, h, n, d, causal)
    ref = Fn.scaled_dot_product_attention(q, k, v, is_causal=causal).float()
    bound = 2.0 ** -9 * float(v.abs().max())      # the lab's bound: a variant past it is never timed or chosen
    rows, prev = [], None
    for name, what, sw, tile in ATTENTION_STEPS:
        if steps is not None and name not in steps:
            continue
        best, wrong = None, []
        for t in tiles_for(sw, tile) if tiles is None else ([tile] if isinstance(tile, tuple) else tiles):
            try:
                err = float((flash(q, k, v, causal, sw, t).float() - ref).abs().max())
                if not err <= bound:                  # NaN too: a miscompiled variant
                    wrong.append(tile_label(t))
                    continue
                ms = graph_bench(lambda t=t, sw=sw: flash(q, k, v, causal, sw, t))
            except Exception as exc:   # noqa: BLE001 - a tile this GPU cannot run (shared memory): next one
                if isinstance(tile, tuple):
                    rows.append(dict(step=name, what=what, ms=None, note=f"{type(exc).__name__}: {str(exc)[:80]}"))
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
                         gain=(prev / ms) if prev else None, max_err_vs_sdpa=err, note=note))
        prev = ms
    sdpa = []
    for label, ctx in sdpa_backends():
        try:
            with ctx():
                ms = graph_bench(lambda: Fn.scaled_dot_product_attention(q, k, v, is_causal=causal))
            sdpa.append((ms, label))
        except Exception:   # noqa: BLE001,S112 - a backend not built for this GPU or shape
            continue
    if sdpa:
        ms, label = min(sdpa)
        rows.append(dict(step=f"vendor: sdpa {label}", what="torch's best SDPA backend here", ms=ms,
                         TFLOPs=flops / ms / 1e9))
        for r in rows:
            if r.get("ms"):
                r["vs_vendor"] = ms / r["ms"]
    for r in rows:
        r.update(shape=shape, causal=causal)
    return rows
