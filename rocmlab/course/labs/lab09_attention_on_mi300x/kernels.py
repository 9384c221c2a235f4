"""Reference solutions and typical wrong kernels for Lab 09's attention puzzles (FlashAttention forward).

Imported only after :func:`rocmlab.course.puzzles.setup` (Triton's interpreter must be chosen before triton
is imported). Each ``*_wrong_*`` kernel holds one bug a learner makes; the tests check that every reference
passes and every wrong kernel fails on fresh inputs. Layouts (all contiguous, row-major):

- softmax puzzles: ``x (N0, T)`` float32, ``v (T,)`` float32;
- attention: ``q, k, v (H, N, D)`` float16 (GQA: ``k, v (HKV, N, D)``), ``o (H, N, D)`` float32;
- paged decode: ``q (B, H, D)``, caches ``(num_blocks, BS, HKV, D)`` as vLLM's, ``block_table (B, MAXB)``
  and ``seq_lens (B,)`` int32, ``o (B, H, D)``.

Every kernel is self-contained (no helper ``@triton.jit`` calls) so that it compiles offline for AMD
targets through :mod:`rocmlab.triton_amd`.
"""


from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
import triton  # noqa: E402 - after the guard
import triton.language as tl  # noqa: E402 - after the guard

# --- 1. row softmax, T larger than the block: three passes ---------------------------------------


@triton.jit
def softmax_rows(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        m = tl.maximum(m, tl.max(tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf")), axis=0))
    s = 0.0
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        s += tl.sum(tl.exp(tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf")) - m), axis=0)
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
        tl.store(z_ptr + row * T + j, tl.exp(x - m) / s, mask=j < T)


@triton.jit
def softmax_rows_wrong_first_block_max(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    j0 = tl.arange(0, B1)
    m = tl.max(tl.load(x_ptr + row * T + j0, mask=j0 < T, other=-float("inf")), axis=0)   # bug: max of block 0 only
    s = 0.0
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        s += tl.sum(tl.exp(tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf")) - m), axis=0)
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
        tl.store(z_ptr + row * T + j, tl.exp(x - m) / s, mask=j < T)


@triton.jit
def softmax_rows_wrong_block_sum(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        m = tl.maximum(m, tl.max(tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf")), axis=0))
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        e = tl.exp(tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf")) - m)
        tl.store(z_ptr + row * T + j, e / tl.sum(e, axis=0), mask=j < T)   # bug: each block divided by its own sum


# --- 2. online softmax: one pass with a running max and sum (a softmax-weighted sum of v) ----------


@triton.jit
def online_softmax(x_ptr, v_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    acc = 0.0
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
        v = tl.load(v_ptr + j, mask=j < T, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        alpha = tl.exp(m - m_new)                 # rescale what was summed under the old max
        p = tl.exp(x - m_new)
        s = s * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p * v, axis=0)
        m = m_new
    tl.store(z_ptr + row, acc / s)


@triton.jit
def online_softmax_wrong_no_rescale(x_ptr, v_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    acc = 0.0
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
        v = tl.load(v_ptr + j, mask=j < T, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        p = tl.exp(x - m_new)
        s = s + tl.sum(p, axis=0)                 # bug: the old sums are never rescaled to the new max
        acc = acc + tl.sum(p * v, axis=0)
        m = m_new
    tl.store(z_ptr + row, acc / s)


@triton.jit
def online_softmax_wrong_sum_only(x_ptr, v_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    acc = 0.0
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
        v = tl.load(v_ptr + j, mask=j < T, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(x - m_new)
        s = s * alpha + tl.sum(p, axis=0)
        acc = acc + tl.sum(p * v, axis=0)         # bug: the sum is rescaled, the weighted sum is not
        m = m_new
    tl.store(z_ptr + row, acc / s)


# --- 3. one tile: O = softmax(Q K^T * scale) V -----------------------------------------------------


@triton.jit
def attn_tile(q_ptr, k_ptr, v_ptr, o_ptr, M, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    i = tl.arange(0, BM)
    j = tl.arange(0, BN)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + i[:, None] * D + d[None, :], mask=(i < M)[:, None], other=0.0)
    k = tl.load(k_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    v = tl.load(v_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k)) * sm_scale
    s = tl.where((j < N)[None, :], s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    o = tl.dot(p.to(tl.float16), v) / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + i[:, None] * D + d[None, :], o, mask=(i < M)[:, None])


@triton.jit
def attn_tile_wrong_no_scale(q_ptr, k_ptr, v_ptr, o_ptr, M, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    i = tl.arange(0, BM)
    j = tl.arange(0, BN)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + i[:, None] * D + d[None, :], mask=(i < M)[:, None], other=0.0)
    k = tl.load(k_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    v = tl.load(v_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k))                    # bug: sm_scale (1/sqrt(D)) forgotten
    s = tl.where((j < N)[None, :], s, -float("inf"))
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    o = tl.dot(p.to(tl.float16), v) / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + i[:, None] * D + d[None, :], o, mask=(i < M)[:, None])


@triton.jit
def attn_tile_wrong_pad_keys(q_ptr, k_ptr, v_ptr, o_ptr, M, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    i = tl.arange(0, BM)
    j = tl.arange(0, BN)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + i[:, None] * D + d[None, :], mask=(i < M)[:, None], other=0.0)
    k = tl.load(k_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    v = tl.load(v_ptr + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
    s = tl.dot(q, tl.trans(k)) * sm_scale        # bug: padding keys score 0, not -inf: they take weight
    p = tl.exp(s - tl.max(s, axis=1)[:, None])
    o = tl.dot(p.to(tl.float16), v) / tl.sum(p, axis=1)[:, None]
    tl.store(o_ptr + i[:, None] * D + d[None, :], o, mask=(i < M)[:, None])


# --- 4. the full tiled forward (FlashAttention): one program per BM queries of one head -------------


@triton.jit
def flash_fwd(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    h = tl.program_id(1)
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, N, BN):
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


@triton.jit
def flash_fwd_wrong_no_rescale(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                               BN: tl.constexpr):
    h = tl.program_id(1)
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, N, BN):
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc + tl.dot(p.to(tl.float16), v)   # bug: the accumulator is not rescaled by alpha
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


@triton.jit
def flash_fwd_wrong_pad_keys(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                             BN: tl.constexpr):
    h = tl.program_id(1)
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, N, BN):
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale    # bug: keys past N in the last tile are not masked to -inf
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


# --- 5. causal: key j is seen by query i only when j <= i; tiles past the diagonal are skipped -------


@triton.jit
def flash_causal(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr):
    h = tl.program_id(1)
    start = tl.program_id(0) * BM
    i = start + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, tl.minimum(start + BM, N), BN):
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j[None, :] <= i[:, None]) & (j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


@triton.jit
def flash_causal_wrong_off_by_one(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                                  BN: tl.constexpr):
    h = tl.program_id(1)
    start = tl.program_id(0) * BM
    i = start + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, tl.minimum(start + BM, N), BN):
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j[None, :] < i[:, None]) & (j < N)[None, :], s, -float("inf"))   # bug: j < i hides key i
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


@triton.jit
def flash_causal_wrong_skips_diagonal(q_ptr, k_ptr, v_ptr, o_ptr, N, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                                      BN: tl.constexpr):
    h = tl.program_id(1)
    start = tl.program_id(0) * BM
    i = start + tl.arange(0, BM)
    d = tl.arange(0, D)
    base = h * N * D
    q = tl.load(q_ptr + base + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, start, BN):                # bug: stops before the diagonal tile
        j = n0 + tl.arange(0, BN)
        k = tl.load(k_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + base + j[:, None] * D + d[None, :], mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j[None, :] <= i[:, None]) & (j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + base + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


# --- 6. grouped-query attention: H query heads share HKV key/value heads in groups of H // HKV ------


@triton.jit
def flash_gqa(q_ptr, k_ptr, v_ptr, o_ptr, N, H, HKV, sm_scale, D: tl.constexpr, BM: tl.constexpr,
              BN: tl.constexpr):
    h = tl.program_id(1)
    kvh = h // (H // HKV)
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + h * N * D + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, N, BN):
        j = n0 + tl.arange(0, BN)
        kv = kvh * N * D + j[:, None] * D + d[None, :]
        k = tl.load(k_ptr + kv, mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + kv, mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + h * N * D + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


@triton.jit
def flash_gqa_wrong_interleaved(q_ptr, k_ptr, v_ptr, o_ptr, N, H, HKV, sm_scale, D: tl.constexpr, BM: tl.constexpr,
                                BN: tl.constexpr):
    h = tl.program_id(1)
    kvh = h % HKV                                 # bug: heads interleaved over the KV heads, not grouped
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + h * N * D + i[:, None] * D + d[None, :], mask=(i < N)[:, None], other=0.0)
    m = tl.full([BM], -float("inf"), tl.float32)
    s_sum = tl.zeros([BM], tl.float32)
    acc = tl.zeros([BM, D], tl.float32)
    for n0 in range(0, N, BN):
        j = n0 + tl.arange(0, BN)
        kv = kvh * N * D + j[:, None] * D + d[None, :]
        k = tl.load(k_ptr + kv, mask=(j < N)[:, None], other=0.0)
        v = tl.load(v_ptr + kv, mask=(j < N)[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        s = tl.where((j < N)[None, :], s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new[:, None])
        s_sum = s_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m = m_new
    tl.store(o_ptr + h * N * D + i[:, None] * D + d[None, :], acc / s_sum[:, None], mask=(i < N)[:, None])


# --- 7. decode over a paged KV cache: one query token per sequence, the cache in blocks of BS -------


@triton.jit
def paged_decode(q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr, seq_lens_ptr, o_ptr, H, HKV, MAXB, sm_scale,
                 D: tl.constexpr, BS: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // (H // HKV)
    d = tl.arange(0, D)
    t = tl.arange(0, BS)
    q = tl.load(q_ptr + (b * H + h) * D + d).to(tl.float32)
    seq_len = tl.load(seq_lens_ptr + b)
    m = -float("inf")
    s_sum = 0.0
    acc = tl.zeros([D], tl.float32)
    for blk in range(0, tl.cdiv(seq_len, BS)):
        phys = tl.load(block_table_ptr + b * MAXB + blk)
        # cache[phys, t, kvh, :]: a block holds BS tokens, each HKV heads of D values
        off = ((phys * BS + t[:, None]) * HKV + kvh) * D + d[None, :]
        k = tl.load(k_cache_ptr + off).to(tl.float32)
        v = tl.load(v_cache_ptr + off).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * sm_scale
        s = tl.where(blk * BS + t < seq_len, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        s_sum = s_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + (b * H + h) * D + d, acc / s_sum)


@triton.jit
def paged_decode_wrong_logical_block(q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr, seq_lens_ptr, o_ptr, H, HKV,
                                     MAXB, sm_scale, D: tl.constexpr, BS: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // (H // HKV)
    d = tl.arange(0, D)
    t = tl.arange(0, BS)
    q = tl.load(q_ptr + (b * H + h) * D + d).to(tl.float32)
    seq_len = tl.load(seq_lens_ptr + b)
    m = -float("inf")
    s_sum = 0.0
    acc = tl.zeros([D], tl.float32)
    for blk in range(0, tl.cdiv(seq_len, BS)):
        phys = b * MAXB + blk                     # bug: the logical block used as the physical one (no block table)
        off = ((phys * BS + t[:, None]) * HKV + kvh) * D + d[None, :]
        k = tl.load(k_cache_ptr + off).to(tl.float32)
        v = tl.load(v_cache_ptr + off).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * sm_scale
        s = tl.where(blk * BS + t < seq_len, s, -float("inf"))
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        s_sum = s_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + (b * H + h) * D + d, acc / s_sum)


@triton.jit
def paged_decode_wrong_stale_tail(q_ptr, k_cache_ptr, v_cache_ptr, block_table_ptr, seq_lens_ptr, o_ptr, H, HKV,
                                  MAXB, sm_scale, D: tl.constexpr, BS: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    kvh = h // (H // HKV)
    d = tl.arange(0, D)
    t = tl.arange(0, BS)
    q = tl.load(q_ptr + (b * H + h) * D + d).to(tl.float32)
    seq_len = tl.load(seq_lens_ptr + b)
    m = -float("inf")
    s_sum = 0.0
    acc = tl.zeros([D], tl.float32)
    for blk in range(0, tl.cdiv(seq_len, BS)):
        phys = tl.load(block_table_ptr + b * MAXB + blk)
        off = ((phys * BS + t[:, None]) * HKV + kvh) * D + d[None, :]
        k = tl.load(k_cache_ptr + off).to(tl.float32)
        v = tl.load(v_cache_ptr + off).to(tl.float32)
        s = tl.sum(k * q[None, :], axis=1) * sm_scale   # bug: the last block's slots past seq_len are stale, not masked
        m_new = tl.maximum(m, tl.max(s, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(s - m_new)
        s_sum = s_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + (b * H + h) * D + d, acc / s_sum)
