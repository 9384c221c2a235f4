"""Lab 03's graded task: find in the profiler's trace why a step is slow, and fix it.

:func:`slow_scores` scores a batch the slow way: a Python loop runs **one row at a time** (a handful
of small kernels per row) and calls ``.item()`` on every row's sum (the host waits for the device each
time). The profiler's kernel table shows both causes: calls that grow with the rows, and
``aten::item`` / ``aten::_local_scalar_dense`` (a CPU trace) or ``Memcpy DtoH`` (a GPU trace) once per row.

The learner writes ``fast_scores(x, w, b)`` returning the same ``(scores, total)``. Each grade draws
fresh sizes and inputs and checks:

- ``same-result``: the scores and the total equal the reference on fresh inputs;
- ``no-host-sync``: the trace of one call has no ``.item()`` and no device-to-host copy;
- ``launches-flat``: the launches (device kernels; top-level operators on a CPU) stay the same when
  the batch doubles, and few;
- ``speed-up``: on a GPU, fast vs slow timed in the same run (device events) must be 5x or more. On a
  CPU the check is skipped (a CPU runs small operators quickly: the cost of a launch and of a host
  sync is a GPU's, so a ratio measured there would say nothing about a GPU).

``no-host-sync`` and ``launches-flat`` score only when ``same-result`` passed (a function returning zeros
neither syncs nor loops). In the instructor's re-grade the traces are recorded in the sandbox, beside the
learner's code, which could write traces of its own: so the grader also reads the handed-in file itself
(:func:`read_step`, never running it) and each of the two checks passes only when the trace and the reading agree.
"""

from __future__ import annotations

import ast
import dataclasses
import time

import torch

from rocmlab.course import tasks as T
from rocmlab.grader.pyanswer import Answer, AnswerError
from rocmlab.profile.timing import bench
from rocmlab.profile.traces import profile_kernels, trace_counts

LAB, TASK = "03-pytorch-on-rocm", "fix-the-slow-step"
TITLE = "Lab 03 task: find why the step is slow in the trace, and fix it"
MIN_SPEEDUP = 5.0
MAX_LAUNCHES = 40


def slow_scores(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor):
    """Row i: ``h = relu(x[i] @ w + b)``, scored ``h / (h.sum() + 1)``; ``total`` sums every h."""
    rows, total = [], 0.0
    for i in range(x.shape[0]):
        h = torch.relu(x[i] @ w + b)
        s = h.sum()
        total += s.item()
        rows.append(h / (s + 1.0))
    return torch.stack(rows), total


def reference_scores(x, w, b):
    """The fix (the reference answer, :mod:`.reference`: withheld from learners in a workshop)."""
    from rocmlab.course.labs.lab03_pytorch_on_rocm import reference

    return reference.fast_scores(x, w, b)


def wrong_answers() -> dict:
    """Typical wrong fixes, each caught by the grade."""
    def batched_but_item(x, w, b):            # vectorised, but the total still comes back with .item()
        h = torch.relu(x @ w + b)
        s = h.sum(dim=1, keepdim=True)
        return h / (s + 1.0), h.sum().item()

    def syncs_gone_loop_kept(x, w, b):        # no .item(), but still one row at a time
        rows, total = [], torch.zeros((), device=x.device)
        for i in range(x.shape[0]):
            h = torch.relu(x[i] @ w + b)
            s = h.sum()
            total = total + s
            rows.append(h / (s + 1.0))
        return torch.stack(rows), total

    def normalised_by_the_batch(x, w, b):     # fast, but divides by the whole batch's sum
        h = torch.relu(x @ w + b)
        return h / (h.sum() + 1.0), h.sum()
    return {"batched, but .item() on the total": batched_but_item,
            "no .item(), but the row loop kept": syncs_gone_loop_kept,
            "divides by the batch's sum, not the row's": normalised_by_the_batch}


# --- the grader's own reading of a handed-in step (the re-grade: the file, never run here) --------------------

#: Calls that bring a device value to the host (each one a sync on a GPU).
SYNC_CALLS = frozenset({"item", "tolist", "numpy", "cpu"})
SYNC_BUILTINS = frozenset({"float", "int", "bool", "complex"})
#: Tensor methods that run Python once per element (a loop by another name).
LOOP_CALLS = frozenset({"apply_", "map_", "map2_"})
#: Names that would let a file reach the grader's harness in the sandbox (its traces, torch's profiler).
REFUSED_NAMES = frozenset({"exec", "eval", "compile", "getattr", "setattr", "delattr", "globals", "locals", "vars",
                           "open", "breakpoint", "input", "type", "object", "super", "sys", "os", "builtins",
                           "importlib", "inspect", "gc", "ctypes", "map", "filter"})
ALLOWED_IMPORTS = ("torch", "math")


@dataclasses.dataclass
class Reading:
    """What the grader read in a handed-in file: host syncs and loops (with their lines), or why it refuses it."""
    syncs: list
    loops: list
    refused: str = ""


def _calls_of(fn: ast.FunctionDef, defined: set) -> set:
    return {n.func.id for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
            and n.func.id in defined}


def read_step(source: str) -> Reading:
    """Read the learner's file without running it: its host syncs (``.item()``, ``.tolist()``, ``float(t)``...),
    its loops (``for``, ``while``, comprehensions, recursion, per-element ``apply_``), or a refusal when it does
    more than a step needs (module-level code other than imports of torch and math, functions and constants;
    setting attributes; names or attributes starting with ``_``; exec, getattr, sys and the like)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return Reading([], [], f"the file does not parse ({type(exc).__name__})")
    for node in tree.body:
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name.split(".")[0] not in ALLOWED_IMPORTS]
        elif isinstance(node, ast.ImportFrom):
            bad = [] if node.level == 0 and (node.module or "").split(".")[0] in ALLOWED_IMPORTS else [node.module]
        elif isinstance(node, (ast.FunctionDef, ast.Assign, ast.AnnAssign)) or (
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            bad = []
        else:
            return Reading([], [], f"line {node.lineno}: code at the top level of the file (a step needs only "
                           "imports of torch, functions and constants)")
        if bad:
            return Reading([], [], f"line {node.lineno}: imports {', '.join(map(str, bad))} (a step needs only torch)")
    syncs, loops = [], []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Name) and (node.id.startswith("_") or node.id in REFUSED_NAMES):
            return Reading([], [], f"line {line}: {node.id} (a step needs only torch's operations)")
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return Reading([], [], f"line {line}: .{node.attr} (a step needs only torch's operations)")
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                return Reading([], [], f"line {line}: sets .{node.attr} (a step changes no object's attributes)")
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return Reading([], [], f"line {line}: {type(node).__name__.lower()} (a step keeps its own variables)")
        if isinstance(node, ast.Import | ast.ImportFrom) and node not in tree.body:
            return Reading([], [], f"line {line}: an import inside a function")
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Attribute) and f.attr in SYNC_CALLS or isinstance(f, ast.Name) and f.id in SYNC_BUILTINS:
                syncs.append(f"line {line}: {f.attr if isinstance(f, ast.Attribute) else f.id}()")
            if isinstance(f, ast.Attribute) and f.attr in LOOP_CALLS:
                loops.append(f"line {line}: {f.attr}() (Python per element)")
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            loops.append(f"line {line}: {type(node).__name__}")
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls = {name: _calls_of(fn, set(fns)) for name, fn in fns.items()}
    for name in fns:                                   # recursion: a loop without the word
        seen, todo = set(), list(calls[name])
        while todo:
            c = todo.pop()
            if c == name:
                loops.append(f"line {fns[name].lineno}: {name} calls itself (recursion)")
                break
            if c not in seen:
                seen.add(c)
                todo += calls.get(c, ())
    return Reading(syncs, loops)


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def draw(seed: int, rows: tuple[int, int] = (48, 160)) -> dict:
    g = torch.Generator().manual_seed(seed)
    R = int(torch.randint(rows[0], rows[1] + 1, (1,), generator=g))
    D, H = (int(v) for v in torch.randint(24, 97, (2,), generator=g))
    x = torch.randn(R, D, generator=g)
    w = torch.randn(D, H, generator=g) / D ** 0.5
    b = torch.randn(H, generator=g) * 0.1
    return dict(x=x, w=w, b=b)


def _on(d: dict, dev: str) -> tuple:
    return d["x"].to(dev), d["w"].to(dev), d["b"].to(dev)


def _counts(fn, args):
    prof = profile_kernels(fn, *args, steps=1, warmup=1)
    return trace_counts(prof.trace_path)


def _observe(fn, args, args2):
    """(fn's outputs for ``args``, trace counts of one call on ``args``, on ``args2``): here for a function,
    in one sandbox run for a handed-in :class:`~rocmlab.grader.pyanswer.Answer` (its traces are recorded in
    the sandbox, beside the learner's code; the counts are read here)."""
    if not isinstance(fn, Answer):
        got = fn(*args)
        return got, _counts(fn, args), _counts(fn, args2)
    res = fn.tensor_calls([{"op": "call", "args": list(args)}, {"op": "trace", "args": list(args)},
                           {"op": "trace", "args": list(args2)}])
    for _, err in res:
        if err:
            raise AnswerError(err)
    traces = dict(fn.traces)
    if set(traces) != {"trace-1.json", "trace-2.json"}:
        raise AnswerError("the profiler's traces did not come back from the sandbox")
    try:
        return res[0][0], trace_counts(traces["trace-1.json"]), trace_counts(traces["trace-2.json"])
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:   # the learner's file
        raise AnswerError(f"the profiler's traces are not readable ({type(exc).__name__})") from None


def _structure(result_ok: bool, ok: bool, cid: str, good: str, bad: str, hint: str):
    """A structure check's verdict; it scores only with a right result (zeros neither sync nor loop)."""
    if not result_ok:
        return T.failed(cid, "run", 2, f"not scored until the result is right ({good if ok else bad})", hint)
    return T.verdict(ok, cid, "run", 2, good, bad, hint)


def grade(fast_scores, seed: int | None = None, record: bool = True, big_rows: int | None = None):
    """Grade ``fast_scores(x, w, b) -> (scores, total)`` (see the module's docstring)."""
    started = time.monotonic()
    seed = T.draw_seed(seed)
    dev = device()
    d = draw(seed)
    args = _on(d, dev)
    checks = []
    d2 = dict(d, x=torch.cat([d["x"], d["x"]]))
    try:
        got, c1, c2 = _observe(fast_scores, args, _on(d2, dev))
        got_s, got_t = got
        got_s = torch.as_tensor(got_s).detach().double().cpu()
        got_t = float(got_t)
    except Exception as exc:   # noqa: BLE001 - a learner's function can fail in many ways: report it
        msg = (str(exc).strip().splitlines() or [""])[-1]
        checks.append(T.not_run("same-result", "compare", 4, f"your function raised {type(exc).__name__}: {msg} "
                                "(or did not return (scores, total))"))
        checks += [T.not_run(c, t, p, "your function did not run") for c, t, p in
                   (("no-host-sync", "run", 2), ("launches-flat", "run", 2), ("speed-up", "perf", 2))]
        return T.finish(LAB, TASK, TITLE, checks, dev, dev, seed, started, record)
    # the expected answer is computed only now, after the learner's function ran: it is never in a frame
    # their code could read
    # (from the slow step itself, in float64: the grade holds no reference answer a learner could copy)
    want_s, want_t = slow_scores(*(t.double() for t in (d["x"], d["w"], d["b"])))
    R = d["x"].shape[0]
    if tuple(got_s.shape) != tuple(want_s.shape):
        ok, bad = False, f"scores have shape {tuple(got_s.shape)}, expected {tuple(want_s.shape)}"
    else:
        close = torch.isclose(got_s, want_s, rtol=1e-4, atol=1e-6)
        ok_t = abs(got_t - float(want_t)) <= 1e-4 * max(1.0, abs(float(want_t)))
        ok = bool(close.all()) and ok_t
        first = tuple(int(v) for v in (~close).nonzero()[0]) if not close.all() else None
        bad = (f"{int((~close).sum())} of {close.numel()} scores differ (first at {first}: yours "
               f"{float(got_s[first]):.5g}, expected {float(want_s[first]):.5g})" if first else
               f"the total is {got_t:.6g}, expected {float(want_t):.6g}")
    checks.append(T.verdict(ok, "same-result", "compare", 4,
                            f"scores and total match on fresh inputs ({R} rows, {tuple(d['w'].shape)} weights)",
                            bad, "normalise each row by its own sum; total is the sum of every h"))
    # the re-grade reads the handed-in file too: its traces were written beside the learner's own code
    reading = read_step(fast_scores.source) if isinstance(fast_scores, Answer) else None
    syncs = c1.host_syncs
    what = ("device-to-host cop" + ("y" if syncs == 1 else "ies")) if c1.dtoh_copies else \
        ("aten::item call" + ("" if syncs == 1 else "s"))
    good = "the trace shows no .item() and no device-to-host copy: the host never waits"
    bad = f"the trace shows {syncs} {what} in one call: the host waits for the device each time"
    no_sync = syncs == 0
    if reading is not None and no_sync and (reading.refused or reading.syncs):
        no_sync = False
        bad = (f"the grader does not take your file's traces on trust: {reading.refused}" if reading.refused else
               f"your file brings values to the host: {'; '.join(reading.syncs[:3])}")
    elif reading is not None:
        good += "; the grader's reading of your file finds no host sync either"
    checks.append(_structure(ok, no_sync, "no-host-sync", good, bad,
                             "keep the total a tensor (h.sum()); the caller reads it once, when it needs it"))
    n1, n2 = c1.launches, c2.launches
    unit = "device kernels" if c1.kernels else "top-level operators"
    flat = n2 <= n1 + 2 and n1 <= MAX_LAUNCHES
    good = f"{n1} {unit} for {R} rows, {n2} for {2 * R}: the launches do not grow with the batch"
    bad = (f"{n1} {unit} for {R} rows, {n2} for {2 * R}: "
           + ("about one set per row" if n2 > n1 + 2 else f"more than {MAX_LAUNCHES}"))
    if reading is not None and flat and (reading.refused or reading.loops):
        flat = False
        bad = (f"the grader does not take your file's traces on trust: {reading.refused}" if reading.refused else
               f"your file loops: {'; '.join(reading.loops[:3])}")
    elif reading is not None:
        good += "; the grader's reading of your file finds no loop either"
    checks.append(_structure(ok, flat, "launches-flat", good, bad,
                             "work on the whole batch at once: x @ w is one GEMM for every row"))
    if isinstance(fast_scores, Answer):
        checks.append(T.skipped("speed-up", "perf", 2, "not timed in the sandboxed re-grade (it runs on the "
                                "grader's CPU); the in-notebook check times it on a GPU"))
        return T.finish(LAB, TASK, TITLE, checks, dev, dev, seed, started, record)
    if dev != "cuda":
        checks.append(T.skipped("speed-up", "perf", 2, "graded on a GPU (5x or more, timed with device events); "
                                "not timed on this CPU, where an operator costs no kernel launch and .item() "
                                "waits for nothing, so a CPU ratio says nothing about a GPU"))
        return T.finish(LAB, TASK, TITLE, checks, dev, dev, seed, started, record)
    if not (ok and syncs == 0 and flat):
        checks.append(T.failed("speed-up", "perf", 2, "not timed: the checks above must pass first"))
        return T.finish(LAB, TASK, TITLE, checks, dev, torch.cuda.get_device_name(0), seed, started, record)
    big = draw(seed + 1, rows=(big_rows or 2048,) * 2)
    bargs = _on(big, dev)
    slow_t = bench(slow_scores, inputs=[bargs], reps=5, warmup=1).median_s
    fast_t = bench(fast_scores, inputs=[bargs], reps=20, warmup=2).median_s
    ratio, n = slow_t / fast_t, big["x"].shape[0]
    checks.append(T.verdict(ratio >= MIN_SPEEDUP, "speed-up", "perf", 2,
                            f"{ratio:.1f}x faster than the slow step for {n} rows (device events, same run)",
                            f"only {ratio:.1f}x faster than the slow step for {n} rows; {MIN_SPEEDUP:g}x needed",
                            "one launch for the batch, no sync in the loop"))
    return T.finish(LAB, TASK, TITLE, checks, dev, torch.cuda.get_device_name(0), seed, started, record)
