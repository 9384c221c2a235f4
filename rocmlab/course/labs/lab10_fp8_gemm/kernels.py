"""Reference solutions and typical wrong kernels for Lab 10's FP8 puzzles (block-scaled FP8 GEMM).

Imported only after :func:`rocmlab.course.puzzles.setup`. The FP8 format is the one of the tensors the
kernel receives: ``tl.float8e4b8`` is e4m3fnuz (MI300X, gfx942: max 240), ``tl.float8e4nv`` the OCP e4m3fn
(MI355X gfx950, NVIDIA: max 448). A kernel reads it from a pointer's element type at compile time, so one
source serves both. Layouts, as DeepSeek-V3 and AMD's FP8 GEMM problem:

- ``a (M, K)`` FP8 with ``a_scale (M, K // 128)`` float32: one scale per 1 x 128 block of a row (activations);
- ``b (N, K)`` FP8 with ``b_scale (N // 128, K // 128)`` float32: one scale per 128 x 128 block (weights);
- ``c = (a * a_scale) @ (b * b_scale)^T``, ``(M, N)`` bfloat16.

Every kernel is self-contained (no helper ``@triton.jit`` calls) so that it compiles offline for AMD targets.
"""


from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
import triton  # noqa: E402 - after the guard
import triton.language as tl  # noqa: E402 - after the guard

# --- 1. quantise activations per 1 x 128 block: scale = amax / FP8_MAX, code = fp8(x / scale) -------


@triton.jit
def fp8_quant(x_ptr, z_ptr, M, K, BK: tl.constexpr):
    row = tl.program_id(0)
    kb = tl.program_id(1)
    if z_ptr.dtype.element_ty == tl.float8e4b8:
        fp8_max = 240.0                            # e4m3fnuz (gfx942)
    else:
        fp8_max = 448.0                            # OCP e4m3fn (gfx950, NVIDIA)
    k = kb * BK + tl.arange(0, BK)
    x = tl.load(x_ptr + row * K + k)
    scale = tl.max(tl.abs(x), axis=0) / fp8_max
    scale = tl.where(scale > 0, scale, 1.0)       # an all-zero block: any scale, codes are 0
    q = tl.clamp(x / scale, -fp8_max, fp8_max)
    tl.store(z_ptr + row * K + k, q.to(z_ptr.dtype.element_ty))


@triton.jit
def fp8_quant_wrong_other_max(x_ptr, z_ptr, M, K, BK: tl.constexpr):
    row = tl.program_id(0)
    kb = tl.program_id(1)
    if z_ptr.dtype.element_ty == tl.float8e4b8:
        fp8_max = 448.0                            # bug: the OCP maximum for an e4m3fnuz tensor ...
    else:
        fp8_max = 240.0                            # ... and the fnuz maximum for an OCP one
    k = kb * BK + tl.arange(0, BK)
    x = tl.load(x_ptr + row * K + k)
    scale = tl.max(tl.abs(x), axis=0) / fp8_max
    scale = tl.where(scale > 0, scale, 1.0)
    q = tl.clamp(x / scale, -fp8_max, fp8_max)
    tl.store(z_ptr + row * K + k, q.to(z_ptr.dtype.element_ty))


@triton.jit
def fp8_quant_wrong_other_bytes(x_ptr, z_ptr, M, K, BK: tl.constexpr):
    row = tl.program_id(0)
    kb = tl.program_id(1)
    k = kb * BK + tl.arange(0, BK)
    x = tl.load(x_ptr + row * K + k)
    out = z_ptr.to(tl.pointer_type(tl.uint8))
    if z_ptr.dtype.element_ty == tl.float8e4b8:
        # bug: OCP e4m3fn bytes (the NVIDIA habit) written where e4m3fnuz is read
        scale = tl.max(tl.abs(x), axis=0) / 448.0
        scale = tl.where(scale > 0, scale, 1.0)
        q = tl.clamp(x / scale, -448.0, 448.0).to(tl.float8e4nv).to(tl.uint8, bitcast=True)
    else:
        # bug: e4m3fnuz bytes written where OCP e4m3fn is read
        scale = tl.max(tl.abs(x), axis=0) / 240.0
        scale = tl.where(scale > 0, scale, 1.0)
        q = tl.clamp(x / scale, -240.0, 240.0).to(tl.float8e4b8).to(tl.uint8, bitcast=True)
    tl.store(out + row * K + k, q)


@triton.jit
def fp8_quant_wrong_signed_max(x_ptr, z_ptr, M, K, BK: tl.constexpr):
    row = tl.program_id(0)
    kb = tl.program_id(1)
    if z_ptr.dtype.element_ty == tl.float8e4b8:
        fp8_max = 240.0
    else:
        fp8_max = 448.0
    k = kb * BK + tl.arange(0, BK)
    x = tl.load(x_ptr + row * K + k)
    scale = tl.max(x, axis=0) / fp8_max           # bug: max(x), not max(|x|): a large negative value overflows
    scale = tl.where(scale != 0, scale, 1.0)
    q = tl.clamp(x / scale, -fp8_max, fp8_max)
    tl.store(z_ptr + row * K + k, q.to(z_ptr.dtype.element_ty))


# --- 2. the block-scaled FP8 GEMM ---------------------------------------------------------------------


@triton.jit
def fp8_gemm(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    KB = K // BK                                   # scale blocks along K (BK = 128, the scale block)
    acc = tl.zeros([BM, BN], tl.float32)
    for kb in range(0, KB):
        k = kb * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None], other=0.0)
        b = tl.load(b_ptr + j[:, None] * K + k[None, :], mask=(j < N)[:, None], other=0.0)
        sa = tl.load(a_scale_ptr + i * KB + kb, mask=i < M, other=0.0)            # (BM,): one per row
        sb = tl.load(b_scale_ptr + (j // BK) * KB + kb, mask=j < N, other=0.0)    # (BN,): one per 128 columns
        acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]                  # FP8 MFMA, fp32 accumulate
    tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16), mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def fp8_gemm_wrong_per_tensor(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                              BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    KB = K // BK
    sa = tl.load(a_scale_ptr)                      # bug: one scale per tensor (the first block's) ...
    sb = tl.load(b_scale_ptr)                      # ... where every block has its own
    acc = tl.zeros([BM, BN], tl.float32)
    for kb in range(0, KB):
        k = kb * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None], other=0.0)
        b = tl.load(b_ptr + j[:, None] * K + k[None, :], mask=(j < N)[:, None], other=0.0)
        acc += tl.dot(a, tl.trans(b))
    acc = acc * sa * sb
    tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16), mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def fp8_gemm_wrong_scales_transposed(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                     BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    KB = K // BK
    NB = N // BK
    acc = tl.zeros([BM, BN], tl.float32)
    for kb in range(0, KB):
        k = kb * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None], other=0.0)
        b = tl.load(b_ptr + j[:, None] * K + k[None, :], mask=(j < N)[:, None], other=0.0)
        sa = tl.load(a_scale_ptr + i * KB + kb, mask=i < M, other=0.0)
        sb = tl.load(b_scale_ptr + kb * NB + (j // BK), mask=j < N, other=0.0)    # bug: read as (K/128, N/128)
        acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]
    tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16), mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def fp8_gemm_wrong_format_mixed(a_ptr, b_ptr, a_scale_ptr, b_scale_ptr, c_ptr, M, N, K, BM: tl.constexpr,
                                BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    KB = K // BK
    acc = tl.zeros([BM, BN], tl.float32)
    for kb in range(0, KB):
        k = kb * BK + tl.arange(0, BK)
        a = tl.load(a_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None], other=0.0)
        b = tl.load(b_ptr + j[:, None] * K + k[None, :], mask=(j < N)[:, None], other=0.0)
        # bug: the bytes read as the other FP8 format (fnuz as OCP on a kernel written for NVIDIA, or back)
        if a_ptr.dtype.element_ty == tl.float8e4b8:
            a = a.to(tl.uint8, bitcast=True).to(tl.float8e4nv, bitcast=True)
            b = b.to(tl.uint8, bitcast=True).to(tl.float8e4nv, bitcast=True)
        else:
            a = a.to(tl.uint8, bitcast=True).to(tl.float8e4b8, bitcast=True)
            b = b.to(tl.uint8, bitcast=True).to(tl.float8e4b8, bitcast=True)
        sa = tl.load(a_scale_ptr + i * KB + kb, mask=i < M, other=0.0)
        sb = tl.load(b_scale_ptr + (j // BK) * KB + kb, mask=j < N, other=0.0)
        acc += tl.dot(a, tl.trans(b)) * sa[:, None] * sb[None, :]
    tl.store(c_ptr + i[:, None] * N + j[None, :], acc.to(tl.bfloat16), mask=(i < M)[:, None] & (j < N)[None, :])
