"""Lab 09's speed ladder: one FlashAttention kernel whose ``tl.constexpr`` switches turn on one step at a time.

Each switch is one step from the puzzle's plain solution towards a vendor-speed kernel, so that a step's gain is
measured by changing one flag (:mod:`rocmlab.course.labs.lab09_attention_on_mi300x.ladder`), and its effect read in
the offline gfx942/gfx950 ISA.

FlashAttention forward (:func:`flash_ladder`; float16 Q, K, V of shape (B*H, N, D), float32 out):

- ``EXP2``: ``exp2`` with the softmax scale and log2(e) folded into one multiply-add per score, where the plain
  kernel scales the scores, subtracts the max, then calls ``exp`` (which is ``exp2`` of ``x * log2 e`` inside);
- ``SPLIT`` (causal): the key blocks wholly below the diagonal run without the causal mask, only the diagonal band
  masks (``BM`` must be a multiple of ``BN``);
- ``EVEN``: no bounds masks, for ``N`` a multiple of both tiles (the launcher checks);
- ``LONGEST_FIRST`` (causal): programs with the most key blocks start first, so the short ones fill the tail;
- ``DESC``: Q, K, V and O move through tensor descriptors (``tl.make_tensor_descriptor``): on Hopper the bulk
  tensor copy engine (TMA) fetches whole tiles into shared memory, with no per-thread address arithmetic; on AMD
  Triton lowers them to buffer loads. Needs ``EVEN`` (the descriptor spans all heads: a tile past ``N`` would read
  the next head's rows).
- ``ACC_DOT``: ``P V`` accumulates in place, ``acc = tl.dot(p, v, acc * alpha)``: the matrix instruction adds into
  the rescaled accumulator (wgmma's and MFMA's C operand), where ``acc * alpha + tl.dot(p, v)`` keeps a second
  ``BM x D`` float32 tile of registers for the product and adds it with vector instructions.

- ``HEADS_FIRST``: the grid is (heads, query blocks) instead of (query blocks, heads). GPUs start programs in
  grid order, first axis fastest, so with ``LONGEST_FIRST`` every head's longest block starts before any head's
  second longest: the longest-first order holds over the whole launch, not within each head (a sawtooth of long and
  short programs). On an MI300X consecutive workgroups go round-robin to the 8 XCDs, so the first axis being the
  head also keeps each head's K and V in one XCD's L2 (heads h, h + 8, ... on XCD h mod 8);
- ``ONE_LOOP`` (causal): one loop over all of a program's key blocks, the mask applied in the trips of the
  diagonal band only (a branch that is the same for the whole program), where ``SPLIT`` runs two loops. Triton
  pipelines each loop on its own: with two, the band's first tiles are fetched only after the last trip below it,
  a full wait per program that short sequences (few trips per program) feel most. Needs ``EVEN``;
- ``SPLIT_KV``: each query block's key range split in ``SPLIT_KV`` parts, one program each (grid axis 0 is heads
  times splits, the split fastest), for short sequences whose programs are few and short: each part writes its
  unnormalised float32 ``acc`` with its row max ``m`` and row sum ``l`` to a workspace and counts in on the block's
  counter (an atomic add); the last to arrive combines the parts (``o = sum_s 2^(m_s - m) acc_s / sum_s 2^(m_s - m)
  l_s``, an empty part having ``m = -inf``), writes O and sets the counter back to 0. Needs ``HEADS_FIRST``,
  ``EXP2`` and ``DESC``.

The launcher's ``OUT16`` switch stores O in float16 (SDPA's output type) in place of float32: half the bytes
written.

Tiles, ``num_warps`` and ``num_stages`` are the last step, chosen per GPU by the ladder's ``time_steps``.
The kernel is self-contained (no helper ``@triton.jit`` calls) so that it compiles offline for AMD targets.
"""

import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def flash_ladder(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, ws_ptr, lock_ptr, D: tl.constexpr, BM: tl.constexpr,
                 BN: tl.constexpr, CAUSAL: tl.constexpr, EXP2: tl.constexpr, SPLIT: tl.constexpr, EVEN: tl.constexpr,
                 LONGEST_FIRST: tl.constexpr, DESC: tl.constexpr = False, ACC_DOT: tl.constexpr = False,
                 HEADS_FIRST: tl.constexpr = False, SPLIT_KV: tl.constexpr = 1, ONE_LOOP: tl.constexpr = False,
                 ROWS=0, WARP_SPEC: tl.constexpr = False):
    if HEADS_FIRST:
        h = tl.program_id(0) // SPLIT_KV
        part = tl.program_id(0) % SPLIT_KV       # SPLIT_KV: which part of the key range
        pid = tl.program_id(1)
        blocks = tl.num_programs(1)
    else:
        h = tl.program_id(1)
        part = 0
        pid = tl.program_id(0)
        blocks = tl.num_programs(0)
    if LONGEST_FIRST:
        pid = blocks - 1 - pid
    start = pid * BM
    i = start + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    if DESC:   # ROWS = all heads' rows: the descriptors see (ROWS, D) tensors
        dq = tl.make_tensor_descriptor(q_ptr, shape=[ROWS, D], strides=[D, 1], block_shape=[BM, D])
        dk = tl.make_tensor_descriptor(k_ptr, shape=[ROWS, D], strides=[D, 1], block_shape=[BN, D])
        dv = tl.make_tensor_descriptor(v_ptr, shape=[ROWS, D], strides=[D, 1], block_shape=[BN, D])
        do = tl.make_tensor_descriptor(o_ptr, shape=[ROWS, D], strides=[D, 1], block_shape=[BM, D])
        q = dq.load([h * N + start, 0])
    elif EVEN:
        q = tl.load(q_ptr + base + i[:, None] * D + d[None, :])
    else:
        q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    if EXP2:
        scale = sm_scale * 1.4426950408889634      # scores in log2 units: exp(x) = exp2(x * log2 e)
    else:
        scale = sm_scale
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    if CAUSAL:
        hi = tl.minimum(start + BM, N)
    else:
        hi = N
    first = 0                                     # this program's key range: all of it ...
    last = hi
    if SPLIT_KV > 1:                              # ... or its part, in whole key blocks
        if CAUSAL:   # the parts share the unmasked keys below the band; the last part also takes the band
            kblocks = start // BN
        else:
            kblocks = N // BN
        first = (part * kblocks // SPLIT_KV) * BN
        last = ((part + 1) * kblocks // SPLIT_KV) * BN
        if CAUSAL:
            last = tl.where(part == SPLIT_KV - 1, hi, last)
    lo = first
    if CAUSAL and SPLIT and not ONE_LOOP:
        # keys wholly below the diagonal band: every j < start <= i, and j < N, so no mask at all
        lo = tl.maximum(first, start)
        for n0 in tl.range(first, tl.minimum(start, last), BN, warp_specialize=WARP_SPEC):
            j = n0 + tl.arange(0, BN)
            if DESC:
                k = dk.load([h * N + n0, 0])
                v = dv.load([h * N + n0, 0])
            else:
                k = tl.load(k_ptr + base + j[:, None] * D + d[None, :])
                v = tl.load(v_ptr + base + j[:, None] * D + d[None, :])
            qk = tl.dot(q, tl.trans(k))
            if EXP2:
                m_new = tl.maximum(m, tl.max(qk, axis=1) * scale)
                p = tl.exp2(qk * scale - m_new[:, None])
                alpha = tl.exp2(m - m_new)
            else:
                s = qk * scale
                m_new = tl.maximum(m, tl.max(s, axis=1))
                p = tl.exp(s - m_new[:, None])
                alpha = tl.exp(m - m_new)
            s_sum = s_sum * alpha + tl.sum(p, axis=1)
            if ACC_DOT:
                acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
            else:
                acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
            m = m_new
    for n0 in tl.range(lo, last, BN, warp_specialize=WARP_SPEC):
        j = n0 + tl.arange(0, BN)
        if DESC:
            k = dk.load([h * N + n0, 0])
            v = dv.load([h * N + n0, 0])
        elif EVEN:
            k = tl.load(k_ptr + base + j[:, None] * D + d[None, :])
            v = tl.load(v_ptr + base + j[:, None] * D + d[None, :])
        else:
            k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
            v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        qk = tl.dot(q, tl.trans(k))
        if CAUSAL and ONE_LOOP:
            if n0 + BN > start:   # a block of the diagonal band: the only trips that mask
                qk = tl.where(j[None, :] <= i[:, None], qk, -float("inf"))
        elif CAUSAL:
            qk = tl.where((j[None, :] <= i[:, None]) & (j < N)[None, :], qk, -float("inf"))
        elif not EVEN:
            qk = tl.where((j < N)[None, :], qk, -float("inf"))
        if EXP2:
            m_new = tl.maximum(m, tl.max(qk, axis=1) * scale)
            p = tl.exp2(qk * scale - m_new[:, None])
            alpha = tl.exp2(m - m_new)
        else:
            s = qk * scale
            m_new = tl.maximum(m, tl.max(s, axis=1))
            p = tl.exp(s - m_new[:, None])
            alpha = tl.exp(m - m_new)
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        if ACC_DOT:   # P V added by the matrix instruction itself, into the rescaled accumulator
            acc = tl.dot(p.to(tl.float16), v, acc * alpha[:, None])
        else:
            acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    if SPLIT_KV > 1:
        # this part's unnormalised acc, max and sum to the workspace (part-major: (SPLIT_KV, ROWS, D), then
        # (SPLIT_KV, ROWS) of m, then of l); the last part to count in on the block combines them
        row = h * N + i
        ws_acc = ws_ptr + row[:, None] * D + d[None, :]
        ws_m = ws_ptr + SPLIT_KV * ROWS * D + row
        ws_l = ws_m + SPLIT_KV * ROWS
        tl.store(ws_acc + part * ROWS * D, acc)
        tl.store(ws_m + part * ROWS, m)
        tl.store(ws_l + part * ROWS, s_sum)
        tl.debug_barrier()                                   # all of this part is written ...
        counter = lock_ptr + h * blocks + pid
        arrived = tl.atomic_add(counter, 1, sem="acq_rel")   # ... before it counts in
        if arrived == SPLIT_KV - 1:
            tl.debug_barrier()
            m_all = m
            for t in tl.static_range(SPLIT_KV):
                m_all = tl.maximum(m_all, tl.load(ws_m + t * ROWS, cache_modifier=".cg"))
            alpha = tl.exp2(m - m_all)
            acc = acc * alpha[:, None]
            s_sum = s_sum * alpha
            for t in tl.static_range(SPLIT_KV):
                # the other parts' terms, each rescaled to the common max (this part's own is already in acc)
                w = tl.where(part == t, 0.0, tl.exp2(tl.load(ws_m + t * ROWS, cache_modifier=".cg") - m_all))
                acc += tl.load(ws_acc + t * ROWS * D, cache_modifier=".cg") * w[:, None]
                s_sum += tl.load(ws_l + t * ROWS, cache_modifier=".cg") * w
            do.store([h * N + start, 0], (acc / s_sum[:, None]).to(o_ptr.dtype.element_ty))
            tl.atomic_xchg(counter, 0)                                            # ready for the next launch
    else:
        out = (acc / s_sum[:, None]).to(o_ptr.dtype.element_ty)
        if DESC:
            do.store([h * N + start, 0], out)
        elif EVEN:
            tl.store(o_ptr + base + i[:, None] * D + d[None, :], out)
        else:
            tl.store(o_ptr + base + i[:, None] * D + d[None, :], out, mask=(i < N)[:, None])
