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
- the scales multiply each 128-deep partial product in float32 before it is added: the "promotion" DeepSeek-V3
  describes, and what keeps the accumulator exact to fp32 whatever the scales are.

Tiles, ``num_warps`` and ``num_stages`` are the last step, chosen per GPU by the ladder's ``time_fp8_steps``.
The kernel is self-contained (no helper ``@triton.jit`` calls) so that it compiles offline for AMD targets.
"""

import triton
import triton.language as tl


@triton.jit
def fp8_gemm_ladder(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                    BK: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr, SCALAR_SB: tl.constexpr = False,
                    DESC: tl.constexpr = False):
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
    if DESC:
        da = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        db = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN, BK])
    acc = tl.zeros([BM, BN], tl.float32)
    for kb in range(0, KB):
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
            sa = tl.load(a_scale_ptr + i * KB + kb)
            sb = tl.load(b_scale_ptr + pid_n * KB + kb)
            acc += tl.dot(a, tl.trans(b)) * (sa * sb)[:, None]          # one FMA per element
        elif EVEN:
            sa = tl.load(a_scale_ptr + i * KB + kb)
            sb = tl.load(b_scale_ptr + (j // BK) * KB + kb)
            acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]     # fp32 promotion every 128 of K
        else:
            sa = tl.load(a_scale_ptr + i * KB + kb, mask=i < M, other=0.0)
            sb = tl.load(b_scale_ptr + (j // BK) * KB + kb, mask=j < N, other=0.0)
            acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]
    if EVEN:
        tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16))
    else:
        tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16),
                 mask=(i < M)[:, None] & (j < N)[None, :])
