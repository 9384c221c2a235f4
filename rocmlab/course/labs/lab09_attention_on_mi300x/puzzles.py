"""Lab 09's graded puzzles: FlashAttention forward, step by step, on Lab 06's puzzle machinery.

Seven puzzles, each checked against a **float64 reference** on fresh random inputs and sizes (never
multiples of the block), with a **stated error bound**, and with typical wrong kernels that must fail
(:mod:`rocmlab.course.labs.lab09_attention_on_mi300x.kernels`). Importing this module registers them in
:data:`rocmlab.course.puzzles.LABS` under ``09-attention-on-mi300x``; it needs torch only (not triton).

The error bound of the attention puzzles. Q, K and V are float16, so each product ``q_i k_i`` is exact in
float32 and ``Q K^T`` is as exact as a float32 sum of D terms. What rounds is the second product:
``P`` (the softmax weights, float32) meets ``V`` in ``tl.dot``, either as float16 (``p.to(tl.float16)``:
a relative error ``2^-11`` per weight) or as TF32 on an NVIDIA GPU (the same 11-bit significand for P and V).
Each output is a weighted mean of a column of V, so those roundings move it by at most
``2 * 2^-11 * max|V| = 2^-10 max|V|``; the bound allows twice that, ``2^-9 max|V|``, for the float32
sums and exp (a few ``2^-24`` each, amplified by at most the score range). A kernel that forgets a rescale,
misplaces a mask by one key or reads the wrong KV block is off by a sizeable fraction of ``|V|``.
"""

from __future__ import annotations

import math

import torch

from rocmlab.course import puzzles as P
from rocmlab.course.puzzles import Puzzle, cdiv, make_case, rand_int, randn

LAB = "09-attention-on-mi300x"
KERNELS = "rocmlab.course.labs.lab09_attention_on_mi300x.kernels"

#: The relative bound on an attention output, in units of max|V| (derived in the module docstring).
ATTN_BOUND = 2.0 ** -9
#: Softmax puzzles (float32 throughout): relative bound per value; exp and a float32 sum of T terms.
SOFTMAX_BOUND = 2.0 ** -13
#: what NaN outputs most likely mean in an attention puzzle
SOFTMAX_NAN = ("most likely 0/0 or inf - inf: a row whose every score is -inf (a fully masked row, or padding loaded as "
               "-inf with a running max still -inf: exp(-inf - (-inf)) is NaN), or exp of an unscaled large score. "
               "Else: a value never written (a missing store) or an unmasked load past the end")

ATTN_BOUND_TEXT = ("|yours - float64 reference| <= 2^-9 * max|V| per output: float16 (or TF32) rounding of P and V "
                   "in the second product costs at most 2^-10 * max|V|; the rest is float32")


def _f64(case, name: str) -> torch.Tensor:
    return case.inputs[name].detach().cpu().double()


def _attention_ref(q, k, v, causal: bool = False) -> torch.Tensor:
    """softmax(q k^T / sqrt(D)) v in float64; q (H, M, D), k and v (H, N, D)."""
    s = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        m, n = s.shape[-2:]
        s = s.masked_fill(torch.ones(m, n, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v


def _attn_bound(case, expected):
    return torch.full_like(expected, ATTN_BOUND * float(case.inputs["v"].detach().abs().max()))


def _softmax_bound(case, expected):
    return SOFTMAX_BOUND * expected.abs() + 2.0 ** -24


def _weighted_bound(case, expected):
    return torch.full_like(expected, SOFTMAX_BOUND * float(case.inputs["v"].detach().abs().max()))


def _ramp(g, n0: int, t: int) -> torch.Tensor:
    """Scores that grow along the row (noise of 30 around a ramp from 60 to 210): a later block's max is
    far above the first block's, so a max taken too early overflows exp."""
    return randn(g, n0, t, scale=30.0, shift=60.0) + torch.linspace(0, 150, t)[None, :]


def _half(g, *shape, scale=1.0) -> torch.Tensor:
    return (torch.randn(*shape, generator=g) * scale).half()


def _n_not_multiple(g, lo: int, hi: int, block: int, min_pad: int = 4) -> int:
    """A length in [lo, hi] whose last block of ``block`` has at least ``min_pad`` padding lanes."""
    n = rand_int(g, lo, hi)
    while n % block == 0 or block - n % block < min_pad:
        n -= 1
    return n


def _flash_case(s, g, kv_heads=None):
    h, n, d = s["H"], s["N"], 32
    hkv = kv_heads or h
    ins = dict(q=_half(g, h, n, d, scale=1.5), k=_half(g, hkv, n, d, scale=1.5), v=_half(g, hkv, n, d), N=n)
    order = ["q", "k", "v", "z", "N"]
    if kv_heads:
        ins.update(H=h, HKV=hkv)
        order += ["H", "HKV"]
    ins["sm_scale"] = 1.0 / math.sqrt(d)
    order.append("sm_scale")
    return make_case(ins, (h, n, d), (cdiv(n, 16), h), order, dict(D=d, BM=16, BN=16))


def _flash_ref(case, causal=False):
    return _attention_ref(_f64(case, "q"), _f64(case, "k"), _f64(case, "v"), causal).float()


def _gqa_ref(case):
    q, k, v = _f64(case, "q"), _f64(case, "k"), _f64(case, "v")
    group = q.shape[0] // k.shape[0]
    return _attention_ref(q, k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)).float()


def _paged_case(s, g):
    b, h, hkv, d, bs, maxb = s["B"], 4, 2, 32, 16, s["MAXB"]
    nblocks = b * maxb + 3
    lens = torch.randint(bs + 1, maxb * bs, (b,), generator=g)
    lens = torch.where(lens % bs == 0, lens - 1, lens).to(torch.int32)
    table = torch.randperm(nblocks, generator=g)[: b * maxb].reshape(b, maxb).to(torch.int32)
    ins = dict(q=_half(g, b, h, d, scale=1.5), k_cache=_half(g, nblocks, bs, hkv, d, scale=1.5),
               v=_half(g, nblocks, bs, hkv, d), block_table=table, seq_lens=lens, H=h, HKV=hkv, MAXB=maxb,
               sm_scale=1.0 / math.sqrt(d))
    return make_case(ins, (b, h, d), (b, h),
                 ["q", "k_cache", "v", "block_table", "seq_lens", "z", "H", "HKV", "MAXB", "sm_scale"],
                 dict(D=d, BS=bs))


def _paged_ref(case):
    q, kc, vc = _f64(case, "q"), _f64(case, "k_cache"), _f64(case, "v")
    table = case.inputs["block_table"].detach().cpu().long()
    lens = case.inputs["seq_lens"].detach().cpu().long()
    b, h, d = q.shape
    bs, hkv = kc.shape[1], kc.shape[2]
    out = torch.empty(b, h, d, dtype=torch.float64)
    for i in range(b):
        n = int(lens[i])
        blocks = table[i, : cdiv(n, bs)]
        k = kc[blocks].reshape(-1, hkv, d)[:n].transpose(0, 1)     # (HKV, n, D)
        v = vc[blocks].reshape(-1, hkv, d)[:n].transpose(0, 1)
        group = h // hkv
        out[i] = _attention_ref(q[i][:, None, :], k.repeat_interleave(group, 0),
                                v.repeat_interleave(group, 0))[:, 0, :]
    return out.float()


def _register() -> None:
    if "row-softmax" in P.LABS.get(LAB, {}):
        return
    P.register(Puzzle(
        "row-softmax", "Row softmax, longer than a block",
        "`z[i, :] = softmax(x[i, :])` for x `(N0, T)` float32, one program per row. `T` is up to 6 blocks of `B1`, "
        "so loop: one pass for the row's max, one for the sum of `exp(x - max)`, one to write. Inputs grow along "
        "the row to about 300, and `exp` overflows float32 above 88.",
        "def softmax_rows_kernel(x_ptr, z_ptr, N0, T, B1: tl.constexpr):",
        lambda g: dict(N0=rand_int(g, 4, 12), T=rand_int(g, 150, 380)),
        lambda s, g: make_case(dict(x=_ramp(g, s["N0"], s["T"]), N0=s["N0"], T=s["T"]),
                           (s["N0"], s["T"]), (s["N0"],), ["x", "z", "N0", "T"], dict(B1=64)),
        lambda c: torch.softmax(_f64(c, "x"), 1).float(),
        ("Pass 1: `m = tl.maximum(m, tl.max(tile, axis=0))` over every block; only the max of the whole row is safe.",
         "Load the padding as `-inf` in every pass (`other=-float('inf')`): exp(-inf) = 0 adds nothing to the sum."),
        solution="softmax_rows", lab=LAB, nan_text=SOFTMAX_NAN, points=1, module=KERNELS,
        wrongs=("softmax_rows_wrong_first_block_max", "softmax_rows_wrong_block_sum"),
        bound=_softmax_bound, bound_text="|yours - float64 softmax| <= 2^-13 |softmax| + 2^-24 per value"))

    P.register(Puzzle(
        "online-softmax", "Online softmax: a running max and sum",
        "`z[i] = sum_j softmax(x[i, :])_j * v[j]`, x `(N0, T)`, v `(T,)`, in **one pass** over the blocks of `B1`: "
        "keep a running max `m`, sum `l` and weighted sum `acc`; when a block raises the max, **rescale** `l` and "
        "`acc` by `exp(m_old - m_new)` (Milakov & Gimelshein, 2018). This is FlashAttention's inner loop in 1-D.",
        "def online_softmax_kernel(x_ptr, v_ptr, z_ptr, N0, T, B1: tl.constexpr):",
        lambda g: dict(N0=rand_int(g, 4, 12), T=rand_int(g, 150, 380)),
        lambda s, g: make_case(dict(x=_ramp(g, s["N0"], s["T"]), v=randn(g, s["T"]),
                                N0=s["N0"], T=s["T"]), (s["N0"],), (s["N0"],), ["x", "v", "z", "N0", "T"], dict(B1=64)),
        lambda c: (torch.softmax(_f64(c, "x"), 1) @ _f64(c, "v")).float(),
        ("Start with `m = -float('inf')`, `l = 0.0`, `acc = 0.0`; per block `m_new = tl.maximum(m, tl.max(x, axis=0))`.",
         "`alpha = tl.exp(m - m_new)`; `l = l * alpha + tl.sum(p)`, `acc = acc * alpha + tl.sum(p * v)` with "
         "`p = tl.exp(x - m_new)`; at the end `acc / l`."),
        solution="online_softmax", lab=LAB, nan_text=SOFTMAX_NAN, points=2, module=KERNELS,
        wrongs=("online_softmax_wrong_no_rescale", "online_softmax_wrong_sum_only"),
        bound=_weighted_bound, bound_text="|yours - float64 reference| <= 2^-13 max|v| per row"))

    P.register(Puzzle(
        "attention-tile", "One tile of attention: softmax(Q K^T) V",
        "One program: `o = softmax(q @ k.T * sm_scale) @ v` for q `(M, D)`, k and v `(N, D)` float16, `M <= BM`, "
        "`N <= BN`, `sm_scale = 1/sqrt(D)`; o float32. Keys past `N` are padding: they must get no weight.",
        "def attn_tile_kernel(q_ptr, k_ptr, v_ptr, o_ptr, M, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, "
        "BN: tl.constexpr):",
        lambda g: dict(M=rand_int(g, 9, 31), N=rand_int(g, 20, 50)),
        lambda s, g: make_case(dict(q=_half(g, s["M"], 32, scale=1.5), k=_half(g, s["N"], 32, scale=1.5),
                                v=_half(g, s["N"], 32), M=s["M"], N=s["N"], sm_scale=1 / math.sqrt(32)),
                           (s["M"], 32), (1,), ["q", "k", "v", "z", "M", "N", "sm_scale"], dict(D=32, BM=32, BN=64)),
        lambda c: _attention_ref(_f64(c, "q")[None], _f64(c, "k")[None], _f64(c, "v")[None])[0].float(),
        ("`s = tl.dot(q, tl.trans(k)) * sm_scale` is `BM x BN`; then a row softmax (`axis=1`) and `tl.dot(p, v)`.",
         "Padding keys score 0 after a masked load, not -inf: `s = tl.where((j < N)[None, :], s, -float('inf'))`. "
         "`tl.dot` wants both operands of one type: `p.to(tl.float16)`."),
        solution="attn_tile", lab=LAB, nan_text=SOFTMAX_NAN, points=2, module=KERNELS,
        wrongs=("attn_tile_wrong_no_scale", "attn_tile_wrong_pad_keys"),
        bound=_attn_bound, bound_text=ATTN_BOUND_TEXT))

    P.register(Puzzle(
        "flash-forward", "FlashAttention forward, tiled",
        "q, k, v `(H, N, D)` float16, o `(H, N, D)` float32; grid `(cdiv(N, BM), H)`: a program takes `BM` queries "
        "of head `program_id(1)` and loops over the keys in tiles of `BN`, with the online softmax of puzzle 2 "
        "on each row (`m`, `l` of shape `[BM]`, `acc` `[BM, D]`). The whole `N x N` score matrix never exists.",
        "def flash_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, "
        "BN: tl.constexpr):",
        lambda g: dict(H=2, N=_n_not_multiple(g, 40, 90, 16)),
        lambda s, g: _flash_case(s, g),
        lambda c: _flash_ref(c),
        ("Head h starts at `h * N * D`; row i of it at `+ i * D`. Per key tile: `s`, `m_new`, `alpha`, `p` as in "
         "puzzle 2, now with a row dimension (`axis=1`, `[:, None]`).",
         "`acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)`; mask keys `j >= N` to -inf in the last tile."),
        solution="flash_fwd", lab=LAB, nan_text=SOFTMAX_NAN, points=3, module=KERNELS,
        wrongs=("flash_fwd_wrong_no_rescale", "flash_fwd_wrong_pad_keys"),
        bound=_attn_bound, bound_text=ATTN_BOUND_TEXT))

    P.register(Puzzle(
        "causal", "The causal mask",
        "Puzzle 4 with a causal mask: query `i` sees keys `j <= i` only. Tiles entirely above the diagonal are "
        "all masked: skip them (loop to `min(start + BM, N)`), which halves the work.",
        "def flash_causal_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, "
        "BN: tl.constexpr):",
        lambda g: dict(H=2, N=_n_not_multiple(g, 40, 90, 16)),
        lambda s, g: _flash_case(s, g),
        lambda c: _flash_ref(c, causal=True),
        ("`s = tl.where(j[None, :] <= i[:, None], s, -float('inf'))`: query i sees key i itself.",
         "The tile loop ends at `tl.minimum(start + BM, N)`, where `start = program_id(0) * BM`: the diagonal tile is "
         "the last one a program needs."),
        solution="flash_causal", lab=LAB, nan_text=SOFTMAX_NAN, points=2, module=KERNELS,
        wrongs=("flash_causal_wrong_off_by_one", "flash_causal_wrong_skips_diagonal"),
        bound=_attn_bound, bound_text=ATTN_BOUND_TEXT))

    P.register(Puzzle(
        "gqa", "Grouped-query attention",
        "q `(H, N, D)`, k and v `(HKV, N, D)` with `H = 4`, `HKV = 2` (Llama 3 / Mistral's GQA): query heads come in "
        "groups of `H // HKV` that share one KV head; head `h` uses KV head `h // (H // HKV)`. Non-causal.",
        "def flash_gqa_kernel(q_ptr, k_ptr, v_ptr, o_ptr, N, H, HKV, sm_scale, D: tl.constexpr, BM: tl.constexpr, "
        "BN: tl.constexpr):",
        lambda g: dict(H=4, N=_n_not_multiple(g, 30, 70, 16)),
        lambda s, g: _flash_case(s, g, kv_heads=2),
        _gqa_ref,
        ("Puzzle 4 with K and V at `kvh * N * D` instead of `h * N * D`.",
         "Heads 0 and 1 share KV head 0, heads 2 and 3 KV head 1 (`h // 2`), not `h % 2`."),
        solution="flash_gqa", lab=LAB, nan_text=SOFTMAX_NAN, points=2, module=KERNELS, wrongs=("flash_gqa_wrong_interleaved",),
        bound=_attn_bound, bound_text=ATTN_BOUND_TEXT))

    P.register(Puzzle(
        "paged-decode", "Decode over a paged KV cache (vLLM's block table)",
        "One new token per sequence: q `(B, H, D)`; the KV cache lives in blocks of `BS = 16` tokens, "
        "`k_cache, v_cache (num_blocks, BS, HKV, D)` (vLLM's layout), and sequence b's logical block `n` is physical "
        "block `block_table[b, n]`; `seq_lens[b]` tokens are valid. Grid `(B, H)`, `H = 4`, `HKV = 2`; o `(B, H, D)`.",
        "def paged_decode_kernel(q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr, seq_lens_ptr, o_ptr, H, HKV, "
        "MAXB, sm_scale, D: tl.constexpr, BS: tl.constexpr):",
        lambda g: dict(B=rand_int(g, 2, 4), MAXB=rand_int(g, 3, 5)),
        _paged_case,
        _paged_ref,
        ("`phys = tl.load(block_table_ptr + b * MAXB + n)`; token t of it, KV head kvh, is at "
         "`((phys * BS + t) * HKV + kvh) * D`.",
         "The last block is partly filled: mask `n * BS + t < seq_len` to -inf; one query row, so scores are "
         "`tl.sum(k * q[None, :], axis=1)`."),
        solution="paged_decode", lab=LAB, nan_text=SOFTMAX_NAN, points=3, module=KERNELS,
        wrongs=("paged_decode_wrong_logical_block", "paged_decode_wrong_stale_tail"),
        bound=_attn_bound, bound_text=ATTN_BOUND_TEXT))


_register()
PUZZLES = P.LABS[LAB]
POINTS = {k: p.points for k, p in PUZZLES.items()}
