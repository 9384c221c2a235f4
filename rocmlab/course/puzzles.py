"""The Triton puzzle runner every puzzle lab shares (after Triton-Puzzles): write a kernel, see "yours / expected"
side by side. Each lab's package defines and registers its own puzzles (Lab 06's in
``rocmlab.course.labs.lab06_triton_on_amd.puzzles``, Labs 09 and 10 likewise), naming its kernels module.

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

import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from collections.abc import Callable

import torch

from rocmlab.course.triton_rounding import round_like_the_gpu

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
    lab: str = ""                   # the notebook stem the puzzle belongs to (progress, self_test, grade)
    points: float = 1.0
    module: str = ""                # the lab's module of reference and wrong kernels (its package's kernels.py)
    wrongs: tuple[str, ...] = ()    # names of typical wrong kernels in `module` (default: solution + "_wrong")
    bound: Callable | None = None   # (case, expected) -> allowed |yours - expected| per value (overrides atol/rtol)
    bound_text: str = ""            # the error bound in words, shown to the learner
    nan_text: str = ""              # what NaN outputs most likely mean in this puzzle (default: the general causes)


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


#: lab (notebook stem) -> its puzzles, in order; each lab's ``puzzles`` module registers its own when imported.
LABS: dict[str, dict[str, Puzzle]] = {}


def register(p: Puzzle) -> Puzzle:
    """Add a puzzle to its lab's list (numbered in order within the lab); keys are unique across labs. A puzzle
    names its lab (the notebook stem) and the module of its reference kernels."""
    if any(p.key in ps for ps in LABS.values()):
        raise ValueError(f"puzzle key {p.key!r} is already taken")
    if not p.lab or not p.module:
        raise ValueError(f"puzzle {p.key!r} must name its lab and its kernels module (lab=, module=)")
    puzzles = LABS.setdefault(p.lab, {})
    p.order = len(puzzles) + 1
    puzzles[p.key] = p
    _register_item(p)
    return p


def _register_item(p: Puzzle) -> None:
    """Make the puzzle a graded item (:mod:`rocmlab.grader.items`): what ``rocmlab handin``, the Hand in button
    and ``rocmlab grade --exchange`` name. A puzzle is an item as soon as it exists, so the hand-in path needs
    no registry of its own for it."""
    from rocmlab.grader import items
    from rocmlab.grader.items import Item

    name = p.signature.split("(")[0].removeprefix("def ").strip()
    items.register(Item(f"{p.lab}/{p.key}", "puzzle", p.lab, p.key, float(p.points), f"{p.lab}: {p.title}", name,
                        _regrade(p.key)))


def _regrade(key: str):
    """The instructor's re-grade of puzzle ``key``: the learner's source runs in the sandbox
    (:class:`rocmlab.grader.pyanswer.Answer`), the check and its seed stay in the grader's process."""
    def regrade(source: str, seed: int, time_limit_s):
        import time

        from rocmlab.grader import items
        from rocmlab.grader.pyanswer import Answer
        from rocmlab.grader.report import CheckResult

        started = time.monotonic()
        p = find(key)
        item = items.get(f"{p.lab}/{key}")
        r = check(key, Answer(source, item.name, triton=True, time_limit_s=time_limit_s), seed)
        result = CheckResult("matches", "compare", "passed" if r.passed else "failed",
                             item.possible if r.passed else 0.0, item.possible, r.message,
                             "" if r.passed else hint(key, 1))
        return items.report(item, [result], "cpu (Triton CPU interpreter)", seed, started)
    return regrade


def find(key: str) -> Puzzle:
    for ps in LABS.values():
        if key in ps:
            return ps[key]
    known = ", ".join(k for ps in LABS.values() for k in ps)
    raise KeyError(f"unknown puzzle {key!r}: choose one of {known}")


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
    answered: bool = True                  # False: no kernel, or one that stored nothing ("not answered yet")
    view: str = ""                         # what each program touched (rocmlab.course.puzzle_view), HTML
    notes: tuple = ()                      # the interpreter's warnings (overflow...), shown folded
    kernel: object = field(default=None, repr=False, compare=False)   # the learner's kernel: Hand in sends it

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        p = find(self.key)
        mark = "PASS" if self.passed else "not yet" if self.answered else "not answered yet"
        return f"puzzle {p.order} ({p.title}): {mark}: {self.message}"

    def __repr__(self) -> str:
        """Plain text (a terminal, a test log): the verdict and the first values, yours / expected."""
        out = str(self)
        if self.yours is not None and self.expected is not None:
            y, e = self.yours.reshape(-1)[:6].tolist(), self.expected.reshape(-1)[:6].tolist()
            out += "\n  yours:    " + " ".join(f"{v:9.4g}" for v in y)
            out += "\n  expected: " + " ".join(f"{v:9.4g}" for v in e)
        return out

    def _repr_html_(self) -> str:
        from rocmlab.course.verdict import element     # the course's one verdict element

        p = find(self.key)
        ok = self.passed if self.answered else None
        pts = f"{p.points if self.passed else 0:g}/{p.points:g} points" if self.answered else ""
        extra = ""
        if self.yours is not None and self.expected is not None and self.answered:
            bad = _bad(p, self.yours, self.expected, self.allowed)
            extra = ("<div style='display:flex;flex-wrap:wrap;gap:0.5em 2em'>" + _table("yours", self.yours, bad)
                     + _table("expected", self.expected, None) + "</div>")
        details = [("puzzle", f"{p.order}: {p.title}"), ("ran in", self.mode), ("sizes", str(self.sizes)),
                   ("interpreter warnings", "\n".join(self.notes) + "\n" if self.notes else "")]
        return element(ok, self.message, pts, extra=extra + self.view, details=details)

    def _ipython_display_(self) -> None:
        """The verdict, then a **Hand in** button for the learner's kernel (the instructor re-grades it in a
        sandbox on fresh inputs); no button for an unanswered puzzle or a sandboxed re-grade."""
        from IPython.display import HTML, display

        display(HTML(self._repr_html_()))
        if self.kernel is not None and self.answered:
            from rocmlab.course.handin import handin_box

            display(handin_box(item_id(self.key), self.kernel))


def item_id(key: str) -> str:
    """The graded item of puzzle ``key`` (``LAB/KEY``): what `rocmlab handin` and the Hand in button name."""
    for lab, ps in LABS.items():
        if key in ps:
            return f"{lab}/{key}"
    find(key)                # raises the clear "no puzzle named ..." error
    raise KeyError(key)


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


def not_a_triton_kernel(kernel) -> str:
    """'' for a Triton kernel (``@triton.jit``, possibly autotuned), else the learner's message: a puzzle is
    solved by a kernel, and torch code behind a ``[grid]`` is not one."""
    runtime = getattr(sys.modules.get("triton"), "runtime", None)    # never imported here: see setup()
    interpreter = sys.modules.get("triton.runtime.interpreter")
    kinds = tuple(k for k in (getattr(runtime, "JITFunction", None), getattr(runtime, "Autotuner", None),
                              getattr(runtime, "Heuristics", None),
                              getattr(interpreter, "InterpretedFunction", None)) if k is not None)
    if kinds and type(kernel) in kinds:
        return ""
    return (f"this is a {type(kernel).__name__}, not a Triton kernel: write the puzzle as a @triton.jit kernel "
            "(torch code that fills z is not a solution; the instructor's re-grade runs only Triton kernels)")


def _is_answer(kernel) -> bool:
    from rocmlab.grader.pyanswer import Answer

    return isinstance(kernel, Answer)


def _launch_in_sandbox(answer, case: Case) -> None:
    """Run the learner's kernel (a :class:`rocmlab.grader.pyanswer.Answer`) on ``case`` in the sandbox and copy
    back every buffer as the kernel left it, guard zones included."""
    from rocmlab.grader.pyanswer import AnswerError

    (value, err), = answer.tensor_calls([{"op": "launch", "args": list(case.args), "grid": list(case.grid),
                                          "meta": dict(case.meta)}])
    if err:
        raise AnswerError(err)
    if not isinstance(value, list) or len(value) != len(case.args):
        raise AnswerError("the kernel's buffers did not come back")
    for mine, back in zip(case.args, value, strict=True):
        if isinstance(mine, torch.Tensor):
            st = mine.untyped_storage()
            bst = back.untyped_storage() if isinstance(back, torch.Tensor) else None
            if bst is None or bst.nbytes() != st.nbytes() or back.dtype != mine.dtype:
                raise AnswerError("the kernel's buffers came back changed in size or type")
            st.copy_(bst)


def check(key: str, kernel, seed: int | None = None) -> Result:
    """Run ``kernel`` on fresh random inputs for puzzle ``key`` and compare with the reference. The result
    shown in a notebook carries a **Hand in** button for the learner's own kernel."""
    r = _check(key, kernel, seed)
    if kernel is not None and not _is_answer(kernel) and not not_a_triton_kernel(kernel):
        r.kernel = kernel
    return r


def _check(key: str, kernel, seed: int | None) -> Result:
    p = find(key)
    g = torch.Generator().manual_seed(_seed(seed))
    sizes = p.draw(g)
    case = p.build(sizes, g)
    mode = "GPU" if device() == "cuda" else "Triton CPU interpreter"
    remote = _is_answer(kernel)
    if remote:
        mode = "Triton CPU interpreter, sandboxed re-grade"
    elif kernel is not None and not_a_triton_kernel(kernel):
        return Result(key, False, not_a_triton_kernel(kernel), sizes=sizes, mode=mode)
    from rocmlab.course import puzzle_view
    try:
        with puzzle_view.recording() as trace, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RuntimeWarning)    # kept for the details, not printed in red
            if remote:
                _launch_in_sandbox(kernel, case)
            else:
                kernel[case.grid](*case.args, **case.meta)
            if device() == "cuda":
                torch.cuda.synchronize()
    except Exception as exc:   # noqa: BLE001 - a learner's kernel can fail in many ways: report it
        msg = str(exc).strip().splitlines()
        return Result(key, False, f"the kernel did not run: {type(exc).__name__}: {msg[-1] if msg else ''}",
                      sizes=sizes, mode=mode)
    notes = tuple(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))
    buffers = [puzzle_view.Buffer.of(k, v, getattr(v, "_rocmlab_guard", None))
               for k, v in case.inputs.items() if isinstance(v, torch.Tensor)]
    view = puzzle_view.view_html(trace, buffers + [puzzle_view.Buffer.of("z", case.out, case.out_buf)])
    yours = case.out.detach().cpu().float()
    expected = p.reference(case)
    allowed = p.bound(case, expected) if p.bound is not None else None
    guard = torch.cat([case.out_buf[:GUARD], case.out_buf[-GUARD:]]).cpu().float()
    if not torch.isnan(guard).all():
        n = int((~torch.isnan(guard)).sum())
        return Result(key, False, f"your kernel wrote {n} values outside z: mask the store (tl.store(..., mask=...))",
                      yours, expected, sizes, mode, view=view, notes=notes)
    if torch.isnan(yours).all() and not any(c.kind == "store" for c in trace.calls):   # GPU: no trace
        return Result(key, False, "your kernel stored nothing in z yet. Write the kernel's body "
                                  "(it ends with tl.store(z_ptr + ..., value, mask=...)) and run the cell again",
                      yours, expected, sizes, mode, answered=False, view=view, notes=notes)
    if torch.isnan(yours).any():
        n = int(torch.isnan(yours).sum())
        why = p.nan_text or ("never written (a missing or misplaced store), an unmasked load past the end, or an "
                             "operation with no number for an answer (inf - inf, 0/0, the square root of a negative)")
        return Result(key, False, f"{n} of {yours.numel()} outputs are NaN: {why}", yours, expected, sizes, mode,
                      view=view, notes=notes)
    bad = _bad(p, yours, expected, allowed)
    if bad.any():
        idx = tuple(int(v) for v in bad.nonzero()[0])
        err = float((yours.double() - expected.double()).abs().max())
        within = f", allowed {float(allowed[idx]):.3g} there" if allowed is not None else ""
        return Result(key, False, f"{int(bad.sum())} of {yours.numel()} values differ (first at {idx}: yours "
                                  f"{float(yours[idx]):.4g}, expected {float(expected[idx]):.4g}{within}; "
                                  f"max error {err:.3g})", yours, expected, sizes, mode, allowed, view=view, notes=notes)
    ok = f"all {yours.numel()} values match on fresh inputs"
    if allowed is not None:
        err = (yours.double() - expected.double()).abs()
        ok += f" (max error {float(err.max()):.3g}; worst use of the bound {float((err / allowed.double()).max()):.2f})"
    return Result(key, True, ok, yours, expected, sizes, mode, allowed, view=view, notes=notes)


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


def self_test(seed: int | None = None, *, lab: str) -> list[dict]:
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


def grade(kernels: dict, seed: int | None = None, *, lab: str, record: bool = False) -> list[Result]:
    """Check every puzzle of ``lab`` the learner has a kernel for (``{key: kernel}``); missing ones score 0.
    ``record=True`` keeps the points in the learner's progress (``rocmlab progress``)."""
    results = [check(k, kernels[k], seed) if kernels.get(k) is not None else
               Result(k, False, "no kernel given yet", answered=False) for k in LABS[lab]]
    if record:
        from rocmlab.course import progress
        from rocmlab.machine.detect import current

        backend = current().backend
        for r in results:
            pts = find(r.key).points
            progress.record(lab, r.key, earned=pts if r.passed else 0.0, earnable=pts, possible=pts, backend=backend)
    return results
