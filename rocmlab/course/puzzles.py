"""Lab 06's Triton puzzles, after Triton-Puzzles: write a kernel, see "yours / expected" side by side.

Every check draws **fresh random inputs and sizes** (a seed the learner does not choose; sizes that are
not multiples of the block, so masks matter), runs the learner's kernel on the GPU at hand or in
Triton's CPU interpreter, and compares with a torch reference. Buffers sit between guard zones filled
with NaN: a store past the end is caught ("wrote outside z"), and an unmasked load past the end reads
NaN into the result.

    P.setup()                         # before importing triton: TRITON_INTERPRET=1 on a CPU
    import triton, triton.language as tl
    @triton.jit
    def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr): ...
    P.check("add-constant", add_kernel)      # a result that shows itself as yours / expected
"""

from __future__ import annotations

import html
import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from collections.abc import Callable

import torch

#: Elements of NaN before and after every buffer.
GUARD = 4096


def setup() -> str:
    """Choose where Triton kernels run: 'gpu' when torch sees a GPU, else 'interpreter' (sets
    TRITON_INTERPRET=1, which must happen before triton is imported). Returns the mode."""
    if torch.cuda.is_available():
        return "gpu"
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("triton was imported before puzzles.setup() on a machine without a GPU, so its CPU "
                           "interpreter is off: restart the kernel and call setup() before `import triton`")
    os.environ["TRITON_INTERPRET"] = "1"
    round_like_the_gpu()
    return "interpreter"


#: Narrow float types whose conversion from float32/float16 the interpreter gets wrong (see round_like_the_gpu).
_NARROW = {"bf16": torch.bfloat16, "fp8e4b8": torch.float8_e4m3fnuz, "fp8e4nv": torch.float8_e4m3fn,
           "fp8e5": torch.float8_e5m2}


def round_like_the_gpu() -> bool:
    """Make Triton's CPU interpreter round float32/float16 -> bfloat16 and FP8 to nearest even, as the GPUs do.

    Triton 3.x's interpreter converts these in numpy bit by bit: bfloat16 is truncated, and a rounding up that
    carries into the exponent is lost for FP8 (63.5 becomes 32 in e4m3fnuz, half the right value). Lab 10's
    FP8 checks would fail the correct kernel on those values. This routes exactly those conversions through
    torch's casts (round to nearest even, with the carry; explicit round-toward-zero requests are left alone).
    Returns False where the interpreter is not the one this was written against (nothing is changed)."""
    try:
        import numpy as np
        from triton.runtime import interpreter as interp
    except ImportError:   # pragma: no cover - triton is a course dependency
        return False
    orig = getattr(interp, "_convert_float", None)
    if orig is None or not hasattr(interp, "_ir"):
        return False
    if getattr(orig, "_rocmlab_rounding", False):
        return True
    rtz = getattr(interp._ir.ROUNDING_MODE, "RTZ", None)

    def convert(input, input_dtype, output_dtype, rounding_mode):
        name = getattr(output_dtype, "name", "")
        if (name in _NARROW and getattr(input_dtype, "name", "") in ("fp32", "fp16")
                and (rounding_mode is None or rounding_mode != rtz)):
            t = torch.from_numpy(np.ascontiguousarray(input, dtype=np.float32).reshape(-1).copy()).to(_NARROW[name])
            bits = t.view(torch.int16).numpy().view(np.uint16) if name == "bf16" else t.view(torch.uint8).numpy()
            return bits.reshape(np.shape(input))
        return orig(input, input_dtype, output_dtype, rounding_mode)

    convert._rocmlab_rounding = True
    interp._convert_float = convert
    return True


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass
class Case:
    """One drawn instance of a puzzle: inputs, the output buffer and how to launch."""
    inputs: dict           # name -> tensor (views into guarded buffers) or int
    out: torch.Tensor      # a view into a guarded buffer
    out_buf: torch.Tensor  # the whole buffer, guards included
    grid: tuple
    args: list             # positional kernel arguments, in signature order
    meta: dict             # constexprs


@dataclass
class Puzzle:
    key: str
    title: str
    text: str                       # what to compute (markdown)
    signature: str                  # the def line the learner's kernel must have
    draw: Callable                  # (generator) -> dict of sizes
    build: Callable                 # (sizes, generator) -> Case
    reference: Callable             # (case) -> expected tensor (CPU, float32)
    hints: tuple[str, ...]
    atol: float = 1e-5
    rtol: float = 1e-5
    solution: str = ""              # name in `module`
    order: int = 0
    # Labs 09 and 10 extend the machinery (Lab 06's puzzles keep the defaults):
    lab: str = "06-triton-on-amd"   # the notebook stem the puzzle belongs to (progress, self_test, grade)
    points: float = 1.0
    module: str = "rocmlab.course.puzzle_kernels"   # where the reference and wrong kernels live
    wrongs: tuple[str, ...] = ()    # names of typical wrong kernels in `module` (default: solution + "_wrong")
    bound: Callable | None = None   # (case, expected) -> allowed |yours - expected| per value (overrides atol/rtol)
    bound_text: str = ""            # the error bound in words, shown to the learner


def _guarded(shape, dtype=torch.float32, fill=float("nan"), dev=None) -> tuple[torch.Tensor, torch.Tensor]:
    n = math.prod(shape)
    dev = dev or device()
    if dtype.itemsize == 1 and dtype.is_floating_point:   # FP8: filled on the CPU, where every torch fills it
        buf = torch.full((n + 2 * GUARD,), fill, dtype=dtype).to(dev)
    else:
        buf = torch.full((n + 2 * GUARD,), fill, dtype=dtype, device=dev)
    return buf[GUARD:GUARD + n].view(shape), buf


def _input(t: torch.Tensor) -> torch.Tensor:
    view, _buf = _guarded(tuple(t.shape), t.dtype, float("nan") if t.dtype.is_floating_point else 0)
    view.copy_(t.to(view.device))
    view._rocmlab_guard = _buf   # keep the buffer alive with the view
    return view


def randn(g, *shape, scale=1.0, shift=0.0):
    return torch.randn(*shape, generator=g) * scale + shift


def rand_int(g, lo, hi) -> int:
    return int(torch.randint(lo, hi + 1, (1,), generator=g))


def make_case(inputs: dict, out_shape, grid, order: list[str], meta: dict, out_dtype=torch.float32) -> Case:
    ins = {k: (_input(v) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    out, buf = _guarded(out_shape, out_dtype)
    args = [ins[k] if k != "z" else out for k in order]
    return Case(ins, out, buf, grid, args, meta)


def _t(case: Case, k: str) -> torch.Tensor:
    return case.inputs[k].detach().cpu().float()


#: lab (notebook stem) -> its puzzles, in order. Lab 06's are also :data:`PUZZLES`.
LABS: dict[str, dict[str, Puzzle]] = {"06-triton-on-amd": {}}
PUZZLES: dict[str, Puzzle] = LABS["06-triton-on-amd"]


def register(p: Puzzle) -> Puzzle:
    """Add a puzzle to its lab's list (numbered in order within the lab); keys are unique across labs."""
    if any(p.key in ps for ps in LABS.values()):
        raise ValueError(f"puzzle key {p.key!r} is already taken")
    puzzles = LABS.setdefault(p.lab, {})
    p.order = len(puzzles) + 1
    puzzles[p.key] = p
    return p


_add = register


def find(key: str) -> Puzzle:
    for ps in LABS.values():
        if key in ps:
            return ps[key]
    known = ", ".join(k for ps in LABS.values() for k in ps)
    raise KeyError(f"unknown puzzle {key!r}: choose one of {known}")


_add(Puzzle(
    "add-constant", "Add a constant",
    "One program, one block: `z[i] = x[i] + 10` for `i < N0`. The block `B0` is larger than `N0`.",
    "def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 60, 127)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), N0=s["N0"]), (s["N0"],), (1,), ["x", "z", "N0"], dict(B0=128)),
    lambda c: _t(c, "x") + 10,
    ("`offs = tl.arange(0, B0)` are the element indices; load `x_ptr + offs`, store to `z_ptr + offs`.",
     "B0 > N0: pass `mask=offs < N0` to both tl.load and tl.store, or the kernel writes past the end of z."),
    solution="add_const"))

_add(Puzzle(
    "add-vectors", "Add two vectors, many programs",
    "`z = x + y` for vectors of length `N0`, one program per block of `B0` (grid `cdiv(N0, B0)`).",
    "def add_vec_kernel(x_ptr, y_ptr, z_ptr, N0, B0: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 1000, 3000)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), y=randn(g, s["N0"]), N0=s["N0"]), (s["N0"],),
                       (cdiv(s["N0"], 256),), ["x", "y", "z", "N0"], dict(B0=256)),
    lambda c: _t(c, "x") + _t(c, "y"),
    ("Program `tl.program_id(0)` handles elements `pid * B0 + tl.arange(0, B0)`.",
     "The last block is partial: mask with `offs < N0`."),
    solution="add_vec"))

_add(Puzzle(
    "outer-sum", "Outer sum (broadcasting)",
    "`z[i, j] = x[i] + y[j]`, z of shape `(N0, N1)` stored row-major, one program with blocks `B0 x B1`.",
    "def outer_sum_kernel(x_ptr, y_ptr, z_ptr, N0, N1, B0: tl.constexpr, B1: tl.constexpr):",
    lambda g: dict(N0=rand_int(g, 20, 40), N1=rand_int(g, 41, 64)),
    lambda s, g: make_case(dict(x=randn(g, s["N0"]), y=randn(g, s["N1"]), N0=s["N0"], N1=s["N1"]),
                       (s["N0"], s["N1"]), (1,), ["x", "y", "z", "N0", "N1"], dict(B0=64, B1=64)),
    lambda c: _t(c, "x")[:, None] + _t(c, "y")[None, :],
    ("`x[:, None] + y[None, :]` broadcasts a column and a row to a `B0 x B1` tile.",
     "Element (i, j) of a row-major `(N0, N1)` array is at `i * N1 + j`; mask both dimensions."),
    solution="outer_sum"))

_add(Puzzle(
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
    solution="relu_outer"))

_add(Puzzle(
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
    atol=1e-4, rtol=1e-4, solution="row_sum"))

_add(Puzzle(
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
    atol=1e-6, rtol=1e-4, solution="softmax"))

_add(Puzzle(
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
    atol=5e-2, rtol=1e-2, solution="matmul"))

_add(Puzzle(
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
    solution="gather_rows"))


@dataclass
class Result:
    key: str
    passed: bool
    message: str
    yours: torch.Tensor | None = None
    expected: torch.Tensor | None = None
    sizes: dict = field(default_factory=dict)
    mode: str = ""
    allowed: torch.Tensor | None = None    # the per-value error bound, where the puzzle states one

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        p = find(self.key)
        mark = "PASS" if self.passed else "not yet"
        return f"puzzle {p.order} ({p.title}): {mark}: {self.message}"

    def __repr__(self) -> str:
        """Plain text (a terminal, nbval): the verdict and the first values, yours / expected."""
        out = str(self)
        if self.yours is not None and self.expected is not None:
            y, e = self.yours.reshape(-1)[:6].tolist(), self.expected.reshape(-1)[:6].tolist()
            out += "\n  yours:    " + " ".join(f"{v:9.4g}" for v in y)
            out += "\n  expected: " + " ".join(f"{v:9.4g}" for v in e)
        return out

    def _repr_html_(self) -> str:
        p = find(self.key)
        color = "#1a7f37" if self.passed else "#b35900"
        head = (f"<div style='font-family:sans-serif'><b>Puzzle {p.order}: {html.escape(p.title)}</b> "
                f"<span style='color:{color}'>{'✔ pass' if self.passed else '✘ not yet'}</span> "
                f"<small>({html.escape(self.mode)}; sizes {html.escape(str(self.sizes))})</small><br>"
                f"{html.escape(self.message)}</div>")
        if self.yours is None or self.expected is None:
            return head
        bad = _bad(p, self.yours, self.expected, self.allowed)
        return head + ("<div style='display:flex;gap:2em'>" + _table("yours", self.yours, bad)
                       + _table("expected", self.expected, None) + "</div>")


def _mismatch(y: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> torch.Tensor:
    return ~torch.isclose(y.double(), e.double(), atol=atol, rtol=rtol)


def _bad(p: Puzzle, y: torch.Tensor, e: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
    """Values outside the puzzle's error bound (its stated bound, else atol + rtol * |expected|)."""
    if allowed is None:
        return _mismatch(y, e, p.atol, p.rtol)
    return ~((y.double() - e.double()).abs() <= allowed.double())


def _table(title: str, t: torch.Tensor, bad: torch.Tensor | None, rows: int = 6, cols: int = 8) -> str:
    def _2d(x):   # a vector as one row; leading dimensions (heads, batch) folded into the rows
        return x.reshape(1, -1) if x.dim() == 1 else x.reshape(-1, x.shape[-1])

    t2 = _2d(t)
    b2 = None if bad is None else _2d(bad)
    cols = 12 if t.dim() == 1 else cols
    out = [f"<div><b>{title}</b> {tuple(t.shape)}<table style='font-family:monospace;font-size:11px'>"]
    for i in range(min(rows, t2.shape[0])):
        cells = []
        for j in range(min(cols, t2.shape[1])):
            red = b2 is not None and bool(b2[i, j])
            style = " style='background:#ffd7d7'" if red else ""
            cells.append(f"<td{style}>{float(t2[i, j]):.3g}</td>")
        more = "<td>…</td>" if t2.shape[1] > cols else ""
        out.append("<tr>" + "".join(cells) + more + "</tr>")
    if t2.shape[0] > rows:
        out.append("<tr><td>⋮</td></tr>")
    out.append("</table></div>")
    return "".join(out)


def _seed(seed) -> int:
    return int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")


def check(key: str, kernel, seed: int | None = None) -> Result:
    """Run ``kernel`` on fresh random inputs for puzzle ``key`` and compare with the reference."""
    p = find(key)
    g = torch.Generator().manual_seed(_seed(seed))
    sizes = p.draw(g)
    case = p.build(sizes, g)
    mode = "GPU" if device() == "cuda" else "Triton CPU interpreter"
    try:
        kernel[case.grid](*case.args, **case.meta)
        if device() == "cuda":
            torch.cuda.synchronize()
    except Exception as exc:   # noqa: BLE001 - a learner's kernel can fail in many ways: report it
        msg = str(exc).strip().splitlines()
        return Result(key, False, f"the kernel did not run: {type(exc).__name__}: {msg[-1] if msg else ''}",
                      sizes=sizes, mode=mode)
    yours = case.out.detach().cpu().float()
    expected = p.reference(case)
    allowed = p.bound(case, expected) if p.bound is not None else None
    guard = torch.cat([case.out_buf[:GUARD], case.out_buf[-GUARD:]]).cpu().float()
    if not torch.isnan(guard).all():
        n = int((~torch.isnan(guard)).sum())
        return Result(key, False, f"your kernel wrote {n} values outside z: mask the store (tl.store(..., mask=...))",
                      yours, expected, sizes, mode)
    if torch.isnan(yours).any():
        n = int(torch.isnan(yours).sum())
        return Result(key, False, f"{n} of {yours.numel()} outputs are NaN: never written (a missing or "
                                  "misplaced store), an unmasked load past the end, an overflow such as inf/inf, or 0/0 (a softmax row "
                                  "whose every score is -inf)", yours, expected, sizes, mode)
    bad = _bad(p, yours, expected, allowed)
    if bad.any():
        idx = tuple(int(v) for v in bad.nonzero()[0])
        err = float((yours.double() - expected.double()).abs().max())
        within = f", allowed {float(allowed[idx]):.3g} there" if allowed is not None else ""
        return Result(key, False, f"{int(bad.sum())} of {yours.numel()} values differ (first at {idx}: yours "
                                  f"{float(yours[idx]):.4g}, expected {float(expected[idx]):.4g}{within}; "
                                  f"max error {err:.3g})", yours, expected, sizes, mode, allowed)
    ok = f"all {yours.numel()} values match on fresh inputs"
    if allowed is not None:
        err = (yours.double() - expected.double()).abs()
        ok += f" (max error {float(err.max()):.3g}; worst use of the bound {float((err / allowed.double()).max()):.2f})"
    return Result(key, True, ok, yours, expected, sizes, mode, allowed)


def hint(key: str, level: int = 1) -> str:
    """Hint ``level`` (1, 2, ...) for a puzzle, one level at a time."""
    hs = find(key).hints
    level = max(1, min(level, len(hs)))
    return f"hint {level} of {len(hs)}: {hs[level - 1]}"


def _kernels_module(p: Puzzle):
    import importlib

    return importlib.import_module(p.module)


def wrong_names(key: str) -> tuple[str, ...]:
    """The names of a puzzle's typical wrong kernels."""
    p = find(key)
    return p.wrongs or (p.solution + "_wrong",)


def reference_kernel(key: str, wrong: bool | str = False):
    """The reference solution of a puzzle, or a typical wrong answer (``wrong=True``: the first; or its
    name from :func:`wrong_names`): after :func:`setup`."""
    p = find(key)
    name = p.solution if not wrong else (wrong if isinstance(wrong, str) else wrong_names(key)[0])
    return getattr(_kernels_module(p), name)


def self_test(seed: int | None = None, lab: str = "06-triton-on-amd") -> list[dict]:
    """Each puzzle's reference must pass and each of its wrong kernels must fail, on the same fresh inputs.
    One row per puzzle; ``wrongs`` lists every wrong kernel with the message a learner would see."""

    seed = _seed(seed)
    rows = []
    for key, p in LABS[lab].items():
        ok = check(key, reference_kernel(key), seed)
        wrongs = []
        for name in wrong_names(key):
            with warnings.catch_warnings():   # wrong kernels overflow on purpose (numpy warns in the interpreter)
                warnings.simplefilter("ignore", RuntimeWarning)
                bad = check(key, reference_kernel(key, wrong=name), seed)
            wrongs.append(dict(name=name, caught=not bad.passed, message=bad.message))
        rows.append(dict(puzzle=p.order, key=key, points=p.points, reference=ok.passed,
                         reference_message=ok.message, wrong_caught=all(w["caught"] for w in wrongs),
                         wrong_message=wrongs[0]["message"], wrongs=wrongs, seed=seed))
    return rows


def wrong_rows(rows: list[dict]) -> list[dict]:
    """:func:`self_test`'s rows flattened to one row per wrong kernel (the table a lab shows)."""
    return [dict(puzzle=r["puzzle"], key=r["key"], points=r["points"], reference=r["reference"], wrong_kernel=w["name"],
                 caught=w["caught"], message=w["message"]) for r in rows for w in r["wrongs"]]


def grade(kernels: dict, seed: int | None = None, lab: str = "06-triton-on-amd", record: bool = False) -> list[Result]:
    """Check every puzzle of ``lab`` the learner has a kernel for (``{key: kernel}``); missing ones score 0.
    ``record=True`` keeps the points in the learner's progress (``rocmlab progress``)."""
    results = [check(k, kernels[k], seed) if kernels.get(k) is not None else
               Result(k, False, "no kernel given") for k in LABS[lab]]
    if record:
        from rocmlab.course import progress
        from rocmlab.machine.detect import current

        backend = current().backend
        for r in results:
            pts = find(r.key).points
            progress.record(lab, r.key, earned=pts if r.passed else 0.0, earnable=pts, possible=pts, backend=backend)
    return results
