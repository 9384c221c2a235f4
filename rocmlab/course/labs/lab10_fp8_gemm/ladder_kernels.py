"""Lab 10's speed ladder: one block-scaled FP8 GEMM kernel whose ``tl.constexpr`` switches turn on one step at a time.

Each switch is one step from the puzzle's plain solution towards a vendor-speed kernel, so that a step's gain is
measured by changing one flag (:mod:`rocmlab.course.labs.lab10_fp8_gemm.ladder`), and its effect read in the
offline gfx942/gfx950 ISA.

Block-scaled FP8 GEMM (:func:`fp8_gemm_ladder`; the layouts of :mod:`rocmlab.course.labs.lab10_fp8_gemm.kernels`):

- ``GROUP_M``: programs walk the output in groups of ``GROUP_M`` row tiles, so neighbours share B's tiles in L2;
- ``EVEN``: no bounds masks, for M and N multiples of the tiles;
- ``SCALAR_SB``: with ``BN == 128`` a tile's columns share one weight scale per 128-deep step, so the promotion is
  one multiply-add per accumulator element (``acc += dot * (sa * sb)[:, None]``) in place of two multiplies and an add;
- ``DESC``: A and B tiles through tensor descriptors (TMA on Hopper, buffer loads on AMD); needs ``EVEN``;
- ``SA_MMAJOR``: the activation scales stored K-block-major (``a_scale`` of shape (M, K/128) with strides (1, M),
  as DeepGEMM's quantiser writes them): a tile's ``BM`` row scales for one K block are one coalesced load, where
  the row-major layout reads one float every ``K/128 * 4`` bytes;
- ``UNROLL = 2``: two 128-deep blocks per loop trip, both products issued before either is promoted, so the
  second block's matrix instructions run while the first block's scale multiply-adds do (one wait per two blocks);
- ``RESCALE``: the promotion without a second accumulator: ``acc`` holds the sum divided by the current block's
  scale ``w = sa * sb`` (one per row with ``SCALAR_SB``), so each block is ``acc = tl.dot(a, b, acc * (w_prev / w))``
  and the matrix instruction adds the product itself (FlashAttention's rescale, applied to the scales); the end
  multiplies by the last ``w``. ``BM x BN`` float32 registers fewer per thread, which is what lets a 256 x 128 tile
  (half the bytes per FLOP of a 64 x 128 one, from L2) fit. The scales must be nonzero (a quantiser's amax / FP8 max,
  an all-zero block given scale 1, as Lab 10's);
- ``SPLIT_K``: the K blocks of each output tile shared by ``SPLIT_K`` programs (grid axis 1), for shapes with
  fewer tiles than the GPU has compute units (1024 x 1536: 96 tiles of 128 x 128 on 132 SMs or 304 CUs). Each
  program writes its float32 partial tile to a workspace and counts in on the tile's counter (an atomic add); the
  last to arrive adds the partials, writes the bf16 tile and sets the counter back to 0 for the next launch.
  Needs ``DESC`` and ``SCALAR_SB``;
- ``SCALES_AHEAD``: each trip loads the next K block's scales (``BM`` activation scales and the tile's weight
  scale) and uses those loaded one trip before. Triton's pipeliner moves A's and B's tiles ahead by ``num_stages``
  but leaves these small loads in the trip that uses them, where each is a wait of one L2 round trip before the
  promotion. Needs ``SA_MMAJOR``; not with ``UNROLL = 2``;
- the scales multiply each 128-deep partial product in float32 before it is added: the "promotion" DeepSeek-V3
  describes, and what keeps the accumulator exact to fp32 whatever the scales are.

The ``STREAM_K`` step changes the schedule, not the K loop, so it is a kernel of its own (:func:`fp8_gemm_stream_k`,
with the ``SCALES_AHEAD`` loop): a persistent grid sized to the GPU's compute units, for shapes whose tiles leave
some of them idle (1024 x 1536: 96 tiles of 128 x 128 on 132 SMs) or give a last wave of few tiles.

Tiles, ``num_warps`` and ``num_stages`` are the last step, chosen per GPU by the ladder's ``time_fp8_steps``.
The kernel is self-contained (no helper ``@triton.jit`` calls) so that it compiles offline for AMD targets.
"""

import triton
import triton.language as tl


@triton.jit
def fp8_gemm_ladder(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, ws_ptr, lock_ptr, BM: tl.constexpr,
                    BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr,
                    SCALAR_SB: tl.constexpr = False, DESC: tl.constexpr = False, SA_MMAJOR: tl.constexpr = False,
                    UNROLL: tl.constexpr = 1, SPLIT_K: tl.constexpr = 1, RESCALE: tl.constexpr = False,
                    SCALES_AHEAD: tl.constexpr = False, WARP_SPEC: tl.constexpr = False):
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    if GROUP_M > 1:
        # walk GROUP_M row tiles down a column of B's tiles before moving right: B's tile stays in L2
        group = pid // (GROUP_M * tiles_n)
        first_m = group * GROUP_M
        rows = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (pid % (GROUP_M * tiles_n)) % rows
        pid_n = (pid % (GROUP_M * tiles_n)) // rows
    else:
        pid_m = pid // tiles_n
        pid_n = pid % tiles_n
    i = pid_m * BM + tl.arange(0, BM)
    j = pid_n * BN + tl.arange(0, BN)
    KB = K // BK                                   # scale blocks along K (BK = 128, the scale block)
    # this program's K blocks: all of them, or its share (in steps of UNROLL blocks) of a split-K tile
    split = tl.program_id(1)
    lo = (split * (KB // UNROLL) // SPLIT_K) * UNROLL
    hi = ((split + 1) * (KB // UNROLL) // SPLIT_K) * UNROLL
    if DESC:
        da = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        db = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros([BM, BN], tl.float32)
    w_prev = tl.full([BM], 1.0, tl.float32)       # RESCALE: the scale the accumulator is counted in
    if SCALES_AHEAD:   # the first block's scales before the loop; each trip then loads the next block's
        sa_next = tl.load(a_scale_ptr + lo * M + i)
        sb_next = tl.load(b_scale_ptr + pid_n * KB + lo)
    for kb in tl.range(lo, hi, UNROLL, warp_specialize=WARP_SPEC):
        k = kb * BK + tl.arange(0, BK)
        if DESC:
            a = da.load([pid_m * BM, kb * BK])
            b = db.load([pid_n * BN, kb * BK])
        elif EVEN:
            a = tl.load(a_ptr + i[:, None] * K + k[None, :])
            b = tl.load(b_ptr + j[:, None] * K + k[None, :])
        else:
            a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None], other=0.0)
            b = tl.load(b_ptr + j[:, None] * K + k[None, :], mask=(j < N)[:, None], other=0.0)
        if SCALAR_SB:   # BN == 128: the tile's columns are one weight-scale block
            if SCALES_AHEAD:
                # this block's scales arrived during the last trip; the next block's are asked for now, so the
                # wait for them overlaps this block's copies and matrix instructions (the last trip re-reads its own)
                sa = sa_next
                sb = sb_next
                nxt = tl.minimum(kb + 1, hi - 1)
                sa_next = tl.load(a_scale_ptr + nxt * M + i)
                sb_next = tl.load(b_scale_ptr + pid_n * KB + nxt)
            elif SA_MMAJOR:
                sa = tl.load(a_scale_ptr + kb * M + i)                    # BM consecutive floats
            else:
                sa = tl.load(a_scale_ptr + i * KB + kb)                   # one float every KB floats
            if not SCALES_AHEAD:
                sb = tl.load(b_scale_ptr + pid_n * KB + kb)
            if UNROLL == 2:
                d = tl.dot(a, tl.trans(b))    # the next block's product is issued before this one is promoted
                a1 = da.load([pid_m * BM, kb * BK + BK])
                b1 = db.load([pid_n * BN, kb * BK + BK])
                if SA_MMAJOR:
                    sa1 = tl.load(a_scale_ptr + (kb + 1) * M + i)
                else:
                    sa1 = tl.load(a_scale_ptr + i * KB + kb + 1)
                sb1 = tl.load(b_scale_ptr + pid_n * KB + kb + 1)
                d1 = tl.dot(a1, tl.trans(b1))
                acc += d * (sa * sb)[:, None] + d1 * (sa1 * sb1)[:, None]
            elif RESCALE:
                # acc holds the sum divided by this block's scale w: the product is added by the matrix
                # instruction itself into acc * (w_prev / w) (no second BM x BN tile of registers)
                w = sa * sb
                acc = tl.dot(a, tl.trans(b), acc * (w_prev / w)[:, None])
                w_prev = w
            else:
                acc += tl.dot(a, tl.trans(b)) * (sa * sb)[:, None]        # one FMA per element
        elif EVEN:
            sa = tl.load(a_scale_ptr + i * KB + kb)
            sb = tl.load(b_scale_ptr + (j // BK) * KB + kb)
            acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]     # fp32 promotion every 128 of K
        else:
            sa = tl.load(a_scale_ptr + i * KB + kb, mask=i < M, other=0.0)
            sb = tl.load(b_scale_ptr + (j // BK) * KB + kb, mask=j < N, other=0.0)
            acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]
    if RESCALE:
        acc = acc * w_prev[:, None]                  # back to the sum itself
    if SPLIT_K > 1:
        # every share writes its float32 partial; the last to count in on the tile adds them and writes C
        part = ws_ptr + i[:, None] * N + j[None, :]
        tl.store(part + split * M * N, acc)
        tl.debug_barrier()                                    # all of this program's partial is written ...
        arrived = tl.atomic_add(lock_ptr + pid_m * tiles_n + pid_n, 1, sem="acq_rel")   # ... before it counts in
        if arrived == SPLIT_K - 1:
            tl.debug_barrier()
            total = tl.zeros([BM, BN], tl.float32)
            for t in tl.static_range(SPLIT_K):
                total += tl.load(part + t * M * N, cache_modifier=".cg")     # from L2, not a stale L1 line
            tl.store(c_ptr + i[:, None] * N + j[None, :], total.to(tl.bfloat16))
            tl.atomic_xchg(lock_ptr + pid_m * tiles_n + pid_n, 0)            # ready for the next launch
    elif EVEN:
        tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16))
    else:
        tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16),
                 mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def fp8_gemm_stream_k(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, ws_ptr, lock_ptr, BM: tl.constexpr,
                      BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr, RESCALE: tl.constexpr = False,
                      WARP_SPEC: tl.constexpr = False):
    """The ``STREAM_K`` step: a persistent grid of a few programs per compute unit shares the GEMM's
    ``tiles x K/128`` block products evenly, whatever the number of tiles. Program ``p`` of ``P`` takes products
    ``[p T / P, (p + 1) T / P)`` of ``T`` in tile order, so it finishes tiles others began and begins tiles others
    finish: a tile done whole is written as in the other steps; a piece of a tile is added (float32 atomic adds)
    into the tile's slot of a zeroed workspace, and the program whose piece completes the tile's count of K blocks
    (an atomic add on the tile's counter) reads the sum, writes C and zeroes the slot and the counter for the next
    launch. The K loop is the ``SCALES_AHEAD`` step's (``SA_MMAJOR`` scales; ``RESCALE`` optional); needs M, N
    multiples of the tile and BN = 128."""
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    tiles_m = M // BM
    tiles_n = N // BN
    KB = K // BK
    total = tiles_m * tiles_n * KB
    it = pid * total // programs
    end = (pid + 1) * total // programs
    da = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    r = tl.arange(0, BM)
    cidx = tl.arange(0, BN)
    while it < end:
        tile = it // KB
        lo = it - tile * KB                             # this piece: K blocks [lo, hi) of one tile
        hi = tl.minimum(KB, lo + end - it)
        group = tile // (GROUP_M * tiles_n)              # the grouped tile order of the other steps
        first_m = group * GROUP_M
        rows = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (tile % (GROUP_M * tiles_n)) % rows
        pid_n = (tile % (GROUP_M * tiles_n)) // rows
        i = pid_m * BM + r
        acc = tl.zeros([BM, BN], tl.float32)
        w_prev = tl.full([BM], 1.0, tl.float32)
        sa_next = tl.load(a_scale_ptr + lo * M + i)
        sb_next = tl.load(b_scale_ptr + pid_n * KB + lo)
        for kb in tl.range(lo, hi, warp_specialize=WARP_SPEC):
            a = da.load([pid_m * BM, kb * BK])
            b = db.load([pid_n * BN, kb * BK])
            sa = sa_next
            sb = sb_next
            nxt = tl.minimum(kb + 1, hi - 1)
            sa_next = tl.load(a_scale_ptr + nxt * M + i)
            sb_next = tl.load(b_scale_ptr + pid_n * KB + nxt)
            if RESCALE:
                w = sa * sb
                acc = tl.dot(a, tl.trans(b), acc * (w_prev / w)[:, None])
                w_prev = w
            else:
                acc += tl.dot(a, tl.trans(b)) * (sa * sb)[:, None]
        if RESCALE:
            acc = acc * w_prev[:, None]
        out = c_ptr + i[:, None] * N + (pid_n * BN + cidx)[None, :]
        if hi - lo == KB:                                # the whole tile: no one else has a piece of it
            tl.store(out, acc.to(tl.bfloat16))
        else:
            slot = ws_ptr + tile * BM * BN + r[:, None] * BN + cidx[None, :]
            tl.atomic_add(slot, acc, sem="relaxed")
            tl.debug_barrier()                                   # every thread's adds are issued ...
            done = tl.atomic_add(lock_ptr + tile, hi - lo, sem="acq_rel") + hi - lo   # ... before it counts in
            if done == KB:                                       # the piece that completes the tile
                tl.debug_barrier()
                total_tile = tl.load(slot, cache_modifier=".cg")     # from L2, where the atomics added
                tl.store(out, total_tile.to(tl.bfloat16))
                tl.store(slot, tl.zeros([BM, BN], tl.float32))
                tl.atomic_xchg(lock_ptr + tile, 0)               # ready for the next launch
        it += hi - lo
