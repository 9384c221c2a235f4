"""Lab 06's Triton puzzles, after Triton-Puzzles: eight kernels from a masked add to a tiled matmul.

Each puzzle is checked by the shared puzzle runner (:mod:`rocmlab.course.puzzles`) on fresh random inputs and sizes
(never multiples of the block, so masks matter), against a torch reference; its reference solution and typical wrong
kernels are in :mod:`rocmlab.course.labs.lab06_triton_on_amd.kernels`. Importing this module registers the puzzles
in :data:`rocmlab.course.puzzles.LABS` under ``06-triton-on-amd``; it needs torch only (not triton).
"""

from __future__ import annotations

import torch

from rocmlab.course import puzzles as P
from rocmlab.course.puzzles import Case, Puzzle, cdiv, make_case, rand_int, randn

LAB = "06-triton-on-amd"
KERNELS = "rocmlab.course.labs.lab06_triton_on_amd.kernels"


def _t(case: Case, k: str) -> torch.Tensor:
    return case.inputs[k].detach().cpu().float()


P.register(Puzzle(
    "add-constant", "Add a constant",
    "One program, one block: `z[i] = x[i] + 10` for `i < N0`. The block `B0` is larger than `N0`.",
    "def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 60, 127)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), N0=s["N0"]), (s["N0"],), (1,), ["x", "z", "N0"], dict(B0=128)),
    lambda c: _t(c, "x") + 10,
    ("`offs = tl.arange(0, B0)` are the element indices; load `x_ptr + offs`, store to `z_ptr + offs`.",
     "B0 > N0: pass `mask=offs < N0` to both tl.load and tl.store, or the kernel writes past the end of z."),
    solution="add_const",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "add-vectors", "Add two vectors, many programs",
    "`z = x + y` for vectors of length `N0`, one program per block of `B0` (grid `cdiv(N0, B0)`).",
    "def add_vec_kernel(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 1000, 3000)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), y=randn(g, s["N0"]), N0=s["N0"]), (s["N0"],),
                       (cdiv(s["N0"], 256),), ["x", "y", "z", "N0"], dict(B0=256)),
    lambda c: _t(c, "x") + _t(c, "y"),
    ("Program `tl.program_id(0)` handles elements `pid * B0 + tl.arange(0, B0)`.",
     "The last block is partial: mask with `offs < N0`."),
    solution="add_vec",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "outer-sum", "Outer sum (broadcasting)",
    "`z[i, j] = x[i] + y[j]`, z of shape `(N0, N1)` stored row-major, one program with blocks `B0 x B1`.",
    "def outer_sum_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 20, 40), N1=rand_int(g, 41, 64)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), y=randn(g, s["N1"]), N0=s["N0"], N1=s["N1"]),
                       (s["N0"], s["N1"]), (1,), ["x", "y", "z", "N0", "N1"], dict(B0=64, B1=64)),
    lambda c: _t(c, "x")[:, None] + _t(c, "y")[None, :],
    ("`x[:, None] + y[None, :]` broadcasts a column and a row to a `B0 x B1` tile.",
     "Element (i, j) of a row-major `(N0, N1)` array is at `i * N1 + j`; mask both dimensions."),
    solution="outer_sum",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "relu-outer", "ReLU of an outer product, a 2-D grid",
    "`z[i, j] = max(x[i] * y[j], 0)`, z `(N0, N1)`, a 2-D grid of programs with blocks `B0 x B1` "
    "(`program_id(0)` rows, `program_id(1)` columns). Note that `B0 != B1`.",
    "def relu_outer_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 40, 90), N1=rand_int(g, 40, 90)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), y=randn(g, s["N1"]), N0=s["N0"], N1=s["N1"]),
                       (s["N0"], s["N1"]), (cdiv(s["N0"], 32), cdiv(s["N1"], 16)), ["x", "y", "z", "N0", "N1"],
                       dict(B0=32, B1=16)),
    lambda c: torch.clamp(_t(c, "x")[:, None] * _t(c, "y")[None, :], min=0),
    ("Rows `tl.program_id(0) * B0 + tl.arange(0, B0)`, columns `tl.program_id(1) * B1 + tl.arange(0, B1)`.",
     "`tl.maximum(v, 0.0)` is the ReLU; mask rows and columns."),
    solution="relu_outer",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "row-sum", "Sum each row (a loop and a reduction)",
    "`z[i] = sum_j x[i, j]` for x `(N0, T)`; one program per `B0` rows; `T` is larger than `B1`, so loop over "
    "the columns in blocks of `B1`.",
    "def row_sum_kernel(x_ptr, z_ptr, N0, T, B0: tl.constexpr, B1: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 20, 50), T=rand_int(g, 150, 300)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"], s["T"]), N0=s["N0"], T=s["T"]), (s["N0"],),
                       (cdiv(s["N0"], 16),), ["x", "z", "N0", "T"], dict(B0=16, B1=64)),
    lambda c: _t(c, "x").sum(1),
    ("Accumulate in `acc = tl.zeros([B0], dtype=tl.float32)`; `for t in range(0, T, B1):` loads a `B0 x B1` tile.",
     "`tl.sum(tile, axis=1)`; masked loads need `other=0.0` so padding adds nothing."),
    atol=1e-4, rtol=1e-4, solution="row_sum",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "softmax", "Numerically stable softmax",
    "`z[i, :] = softmax(x[i, :])` for x `(N0, T)`, `T <= B1`, one program per row. The inputs are large "
    "(up to about 150): `exp` overflows float32 above 88.",
    "def softmax_kernel(x_ptr, z_ptr, N0, T, B1: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 8, 24), T=rand_int(g, 100, 256)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"], s["T"], scale=30.0, shift=60.0), N0=s["N0"], T=s["T"]),
                       (s["N0"], s["T"]), (s["N0"],), ["x", "z", "N0", "T"], dict(B1=256)),
    lambda c: torch.softmax(_t(c, "x").double(), 1).float(),
    ("softmax(x) = softmax(x - max(x)): subtract the row's `tl.max(x, axis=0)` before `tl.exp`.",
     "Load the padding as `-inf` (`other=-float('inf')`): exp(-inf) = 0 adds nothing to the sum."),
    atol=1e-6, rtol=1e-4, solution="softmax",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "matmul", "Tiled matrix multiply with tl.dot",
    "`z = x @ y`, x `(M, K)`, y `(K, N)`, one program per `BM x BN` tile of z, looping over K in steps of `BK`; "
    "no size is a multiple of its block.",
    "def matmul_kernel(x_ptr, y_ptr, z_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):",
    lambda g: dict(M=rand_int(g, 33, 70), N=rand_int(g, 33, 70), K=rand_int(g, 40, 100)),
    lambda s, g: make_case(dict(x=randn(g, s["M"], s["K"]), y=randn(g, s["K"], s["N"]), M=s["M"], N=s["N"], K=s["K"]),
                       (s["M"], s["N"]), (cdiv(s["M"], 16), cdiv(s["N"], 16)), ["x", "y", "z", "M", "N", "K"],
                       dict(BM=16, BN=16, BK=16)),
    lambda c: (_t(c, "x").double() @ _t(c, "y").double()).float(),
    ("Accumulate `acc += tl.dot(a, b)` over `for k0 in range(0, K, BK):` with `a` a `BM x BK` tile, `b` `BK x BN`.",
     "Mask the K edge with `other=0.0` in both loads; store with a row and column mask."),
    # tl.dot on NVIDIA uses TF32 for float32 inputs by default: about 1e-3 relative per product
    atol=5e-2, rtol=1e-2, solution="matmul",
    lab=LAB, module=KERNELS))

P.register(Puzzle(
    "gather", "Gather rows (an embedding lookup)",
    "`z[i, :] = table[idx[i], :]`, table `(V, D)`, idx `(N0,)` int32, one program per output row, `D <= BD`.",
    "def gather_kernel(table_ptr, idx_ptr, z_ptr, N0, D, BD: tl.constexpr):",
    lambda g: dict(V=rand_int(g, 60, 120), N0=rand_int(g, 20, 50), D=rand_int(g, 20, 64)),
    lambda s, g: make_case(dict(table=randn(g, s["V"], s["D"]),
                            idx=torch.randint(0, s["V"], (s["N0"],), generator=g, dtype=torch.int32),
                            N0=s["N0"], D=s["D"]),
                       (s["N0"], s["D"]), (s["N0"],), ["table", "idx", "z", "N0", "D"], dict(BD=64)),
    lambda c: _t(c, "table")[c.inputs["idx"].detach().cpu().long()],
    ("`r = tl.load(idx_ptr + tl.program_id(0))` is the row of the table to copy.",
     "Row r starts at `table_ptr + r * D`; mask `d < D`."),
    solution="gather_rows",
    lab=LAB, module=KERNELS))


PUZZLES = P.LABS[LAB]
POINTS = {k: p.points for k, p in PUZZLES.items()}
