"""Reference solutions (and one typical wrong answer each) for the Triton puzzles of Lab 06.

Imported only after :func:`rocmlab.course.puzzles.setup` has chosen the GPU or Triton's CPU interpreter
(TRITON_INTERPRET=1 must be set before triton is imported). Each ``*_wrong`` kernel holds a bug a learner
makes; the tests check that every reference passes and every wrong kernel fails on fresh inputs.
"""


from rocmlab.workshop.references import guard

guard(__name__)   # a workshop learner's server (ROCMLAB_REFERENCES=off) does not load references
import triton  # noqa: E402 - after the guard
import triton.language as tl  # noqa: E402 - after the guard


@triton.jit
def add_const(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)
    mask = offs < N0
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(z_ptr + offs, x + 10.0, mask=mask)


@triton.jit
def add_const_wrong(x_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)                      # bug: no mask, writes past the end of z
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < N0) + 10.0)


@triton.jit
def add_vec(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.program_id(0) * B0 + tl.arange(0, B0)
    mask = offs < N0
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def add_vec_wrong(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):
    offs = tl.arange(0, B0)                      # bug: every program does block 0
    mask = offs < N0
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def outer_sum(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = x[:, None] + y[None, :]
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], z, mask=(i < N0)[:, None] & (j < N1)[None, :])


@triton.jit
def outer_sum_wrong(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.arange(0, B0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = x[:, None] + y[None, :]
    # bug: row stride N0 instead of N1 (right only for square z)
    tl.store(z_ptr + i[:, None] * N0 + j[None, :], z, mask=(i < N0)[:, None] & (j < N1)[None, :])


@triton.jit
def relu_outer(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B1 + tl.arange(0, B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = tl.maximum(x[:, None] * y[None, :], 0.0)
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], z, mask=(i < N0)[:, None] & (j < N1)[None, :])


@triton.jit
def relu_outer_wrong(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.program_id(1) * B0 + tl.arange(0, B1)   # bug: B0 for the column block (right only when B0 == B1)
    x = tl.load(x_ptr + i, mask=i < N0)
    y = tl.load(y_ptr + j, mask=j < N1)
    z = tl.maximum(x[:, None] * y[None, :], 0.0)
    tl.store(z_ptr + i[:, None] * N1 + j[None, :], z, mask=(i < N0)[:, None] & (j < N1)[None, :])


@triton.jit
def row_sum(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    acc = tl.zeros([B0], dtype=tl.float32)
    for t in range(0, T, B1):
        j = t + tl.arange(0, B1)
        x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i < N0)[:, None] & (j < T)[None, :], other=0.0)
        acc += tl.sum(x, axis=1)
    tl.store(z_ptr + i, acc, mask=i < N0)


@triton.jit
def row_sum_wrong(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):
    i = tl.program_id(0) * B0 + tl.arange(0, B0)
    j = tl.arange(0, B1)                          # bug: only the first B1 columns, no loop over T
    x = tl.load(x_ptr + i[:, None] * T + j[None, :], mask=(i < N0)[:, None] & (j < T)[None, :], other=0.0)
    tl.store(z_ptr + i, tl.sum(x, axis=1), mask=i < N0)


@triton.jit
def softmax(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(z_ptr + row * T + j, e / tl.sum(e, axis=0), mask=j < T)


@triton.jit
def softmax_wrong(x_ptr, z_ptr, N0, T, B1: tl.constexpr):
    row = tl.program_id(0)
    j = tl.arange(0, B1)
    x = tl.load(x_ptr + row * T + j, mask=j < T, other=-float("inf"))
    e = tl.exp(x)                                 # bug: no max subtracted, exp overflows for x > 88
    tl.store(z_ptr + row * T + j, e / tl.sum(e, axis=0), mask=j < T)


@triton.jit
def matmul(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        k = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None] & (k < K)[None, :], other=0.0)
        b = tl.load(y_ptr + k[:, None] * N + j[None, :], mask=(k < K)[:, None] & (j < N)[None, :], other=0.0)
        acc += tl.dot(a, b)
    tl.store(z_ptr + i[:, None] * N + j[None, :], acc, mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def matmul_wrong(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    i = tl.program_id(0) * BM + tl.arange(0, BM)
    j = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros([BM, BN], dtype=tl.float32)
    for k0 in range(0, K - BK, BK):               # bug: stops one K block early
        k = k0 + tl.arange(0, BK)
        a = tl.load(x_ptr + i[:, None] * K + k[None, :], mask=(i < M)[:, None] & (k < K)[None, :], other=0.0)
        b = tl.load(y_ptr + k[:, None] * N + j[None, :], mask=(k < K)[:, None] & (j < N)[None, :], other=0.0)
        acc += tl.dot(a, b)
    tl.store(z_ptr + i[:, None] * N + j[None, :], acc, mask=(i < M)[:, None] & (j < N)[None, :])


@triton.jit
def gather_rows(table_ptr, idx_ptr, z_ptr, N0, D, BD: tl.constexpr):
    row = tl.program_id(0)
    r = tl.load(idx_ptr + row)
    d = tl.arange(0, BD)
    tl.store(z_ptr + row * D + d, tl.load(table_ptr + r * D + d, mask=d < D), mask=d < D)


@triton.jit
def gather_rows_wrong(table_ptr, idx_ptr, z_ptr, N0, D, BD: tl.constexpr):
    row = tl.program_id(0)                        # bug: the row number, not the index it names
    d = tl.arange(0, BD)
    tl.store(z_ptr + row * D + d, tl.load(table_ptr + row * D + d, mask=d < D), mask=d < D)
