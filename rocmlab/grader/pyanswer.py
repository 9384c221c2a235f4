"""A learner's Python or Triton answer, run in the sandbox like a HIP program: the re-grade's side of a lab task
or a puzzle.

:class:`Answer` stands for the learner's function (or Triton kernel) in a checker that runs in the grader's own
process. Every use of it is one :func:`rocmlab.sandbox.run` of a fresh Python: it reads the learner's
``answer.py`` and the inputs the checker drew, runs the function, and writes back only its outputs
(:mod:`rocmlab.grader.answer_runner`). The checker, its seed and its reference answers stay outside: the
sandbox sees neither the grader's frames (no "frame peek") nor its modules (a patched ``tasks.verdict`` patches
only the sandbox's own copy, which does not exist), and it holds no rocmlab package, so a shipped reference
cannot be imported and handed back. Outputs come back as JSON or through ``torch.load(weights_only=True)``
(tensors and plain containers only, never pickled objects), capped in size.

What stays the learner's to control: the traces a task reads (Lab 03's) are recorded in the same sandboxed
process as their function. They prove what happened there, not more; the task also reads the learner's source
itself (Lab 03: :func:`rocmlab.course.labs.lab03_pytorch_on_rocm.task.read_step`).

A Triton answer's module is the grader's, not the learner's (:func:`triton_kernel_module`): the sandbox runs a
file the grader wrote from the answer's source, holding only its ``@triton.jit`` functions, its constants and its
imports of triton, each kernel body checked to be Triton (tl operations on its arguments, no import, no names from
elsewhere). No line of the learner's module-level code runs, so nothing can replace ``triton.runtime.JITFunction``
or the interpreter with a class of its own, and a kernel cannot hand its work to torch or to the toolkit.

A sandbox that cannot start is the machine's fault (:class:`rocmlab.sandbox.SandboxError`, raised: the
grade is "error", not scored, not cached); an answer that does not import, times out or crashes is the
learner's (:class:`AnswerError`, which the checker reports as "not run").
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from rocmlab import sandbox, settings

#: The largest output file read back from the sandbox (a puzzle's guarded buffers are a few MB).
MAX_OUTPUT_BYTES = 256 << 20
#: The largest JSON output (plain values) the grader parses: size-checked before parsing, as parsing takes about
#: 30 times the file's size in memory (48 MB of JSON took the grader to 1.41 GB).
MAX_JSON_OUTPUT_BYTES = 8 << 20
#: A Python answer's default time limit in the sandbox for its own work.
ANSWER_TIME_LIMIT_S = 120.0
#: Added to every Python answer's limit: a fresh Python importing torch and triton takes seconds to start
#: (more on a busy grading machine), which a HIP program's run limit (the grader's time limit) does not count.
STARTUP_ALLOWANCE_S = 60.0
_HERE = Path(__file__).resolve().parent


class AnswerError(RuntimeError):
    """The learner's answer did not give outputs (it does not import, defines no such function, timed out,
    crashed): the message is for the learner."""


#: Parts of the rocmlab package a learner's answer never sees in the sandbox: the checkers and their specs
#: (grader/, course/ with its tasks and puzzles), the reference answers and kernels (course/*_kernels.py,
#: exercises/*/solution), and the workshop's hub. Everything else (comm, hip, machine, profile, port, serve...)
#: is the course's toolkit, which an answer may use as in the notebook.
HIDDEN = ("grader", "course", "exercises", "workshop", "commands", "cli.py", "preflight.py")


def learner_package() -> Path:
    """A folder holding a copy of the rocmlab package without :data:`HIDDEN` (made once per version of the
    sources, in the grader's cache), for the sandbox's ``sys.path``."""
    from rocmlab import paths

    src = Path(__file__).resolve().parents[1]
    data = paths.datasets_dir()           # public facts the toolkit reads (interconnects, hardware)
    files = sorted((p, Path("rocmlab") / p.relative_to(src)) for p in src.rglob("*.py")
                   if "__pycache__" not in p.parts and p.relative_to(src).parts[0] not in HIDDEN)
    files += sorted((p, Path("datasets") / p.relative_to(data)) for p in data.rglob("*") if p.is_file())
    key = hashlib.sha256("".join(f"{rel}:{p.stat().st_size}:{p.stat().st_mtime_ns};"
                                 for p, rel in files).encode()).hexdigest()[:16]
    dest = paths.cache_dir() / "learner-rocmlab" / key
    if not (dest / "rocmlab" / "__init__.py").is_file():
        tmp = Path(tempfile.mkdtemp(prefix=".learner-", dir=paths.cache_dir()))
        for p, rel in files:
            out = tmp / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, out)
        for d in [tmp, *tmp.rglob("*")]:
            os.chmod(d, 0o755 if d.is_dir() else 0o644)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(dest.parent, 0o755)
        try:
            os.replace(tmp, dest)
        except OSError:          # another grader made it first
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def python_binds() -> list[str]:
    """What a sandboxed Python needs read-only: its installation, the environment's site-packages (torch,
    triton) and :func:`learner_package`. Never the rocmlab source itself: an answer cannot import the checkers
    or the references."""
    binds = {sys.base_prefix, sys.prefix, str(learner_package())}
    return sorted(b for b in binds if os.path.isdir(b))


# ----------------------------------------------------------------------------- a Triton answer's module

#: The modules a Triton answer's file may import (its kernels' tl operations); every other import is dropped.
TRITON_MODULES = ("triton", "triton.language")
#: Python builtins a kernel body may name (Triton's own frontend accepts these).
KERNEL_BUILTINS = frozenset({"range", "min", "max", "abs", "int", "float", "bool", "len", "print"})
#: What ``from triton import ...`` may bring in (the rest of triton is its runtime, not the language).
TRITON_NAMES = frozenset({"jit", "autotune", "Config", "language", "cdiv", "next_power_of_2"})
#: Attributes no kernel may read: the interpreter's handles onto the host arrays behind a pointer.
HIDDEN_ATTRIBUTES = frozenset({"handle", "data", "builder", "numpy", "tolist", "fn", "src", "cache"})
_NOT_TRITON = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.ClassDef, ast.Lambda, ast.FunctionDef,
               ast.AsyncFunctionDef, ast.Await, ast.Yield, ast.YieldFrom, ast.Try, ast.With, ast.AsyncWith, ast.Delete,
               ast.AsyncFor)


def _triton_module(name: str) -> bool:
    return name in TRITON_MODULES or name.startswith("triton.language.")


def _aliases(tree: ast.Module) -> tuple[dict, list]:
    """{local name: what it is ("triton", "triton.language", "jit", "autotune", "Config")} from the file's allowed
    imports, and those import statements."""
    names, kept = {}, []
    for node in tree.body:
        if isinstance(node, ast.Import) and all(_triton_module(a.name) for a in node.names):
            kept.append(node)
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module == "triton" and all(a.name in TRITON_NAMES for a in node.names)
                or (node.module or "").startswith("triton.language") and _triton_module(node.module or "")):
            kept.append(node)
            for a in node.names:
                full = f"{node.module}.{a.name}"
                names[a.asname or a.name] = ({"triton.jit": "jit", "triton.autotune": "autotune",
                                              "triton.Config": "Config"}.get(full, full))
    return names, kept


def _is(node, aliases: dict, what: str) -> bool:
    """``node`` names ``what`` (jit, autotune, Config) through the file's triton imports."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id) == what
    return (isinstance(node, ast.Attribute) and node.attr == what and isinstance(node.value, ast.Name)
            and aliases.get(node.value.id) == "triton")


def _constant(node, aliases: dict, consts: set) -> bool:
    """Data only: literals, containers of them, arithmetic, names of earlier constants, tl.constexpr(...) and
    triton.Config(...) of data."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.Name):
        return node.id in consts
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_constant(e, aliases, consts) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _constant(k, aliases, consts) for k in node.keys) and \
            all(_constant(v, aliases, consts) for v in node.values)
    if isinstance(node, ast.BinOp):
        return _constant(node.left, aliases, consts) and _constant(node.right, aliases, consts)
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand, aliases, consts)
    if isinstance(node, ast.Call):
        f = node.func
        ok = _is(f, aliases, "Config") or (isinstance(f, ast.Attribute) and f.attr == "constexpr"
                                           and isinstance(f.value, ast.Name)
                                           and aliases.get(f.value.id) == "triton.language")
        return ok and all(_constant(a, aliases, consts) for a in node.args) and \
            all(_constant(k.value, aliases, consts) for k in node.keywords)
    return False


def _data_arguments(call: ast.Call, aliases: dict, consts: set) -> bool:
    return all(_constant(a, aliases, consts) for a in call.args) and \
        all(_constant(k.value, aliases, consts) for k in call.keywords)


def _decorators_ok(fn: ast.FunctionDef, aliases: dict, consts: set) -> bool:
    """@triton.jit last (innermost), optionally with data arguments, and only @triton.autotune(data) above it."""
    if not fn.decorator_list:
        return False
    *outer, inner = fn.decorator_list
    if isinstance(inner, ast.Call):
        if not (_is(inner.func, aliases, "jit") and _data_arguments(inner, aliases, consts)):
            return False
    elif not _is(inner, aliases, "jit"):
        return False
    return all(isinstance(d, ast.Call) and _is(d.func, aliases, "autotune") and _data_arguments(d, aliases, consts)
               for d in outer)


def _check_kernel_body(fn: ast.FunctionDef, aliases: dict, globals_: set) -> str:
    """'' when ``fn``'s body is Triton (what the kernel may name: its arguments, its own variables, the file's
    constants and other kernels, triton's modules, a few builtins), else the first problem with its line."""
    a = fn.args
    local = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p))}
    body = [n for stmt in fn.body for n in ast.walk(stmt)]
    body += [n for x in (*a.defaults, *(d for d in a.kw_defaults if d is not None)) for n in ast.walk(x)]
    for node in body:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            local.add(node.id)
    for node in body:
        where = f"{fn.name}, line {getattr(node, 'lineno', fn.lineno)}"
        if isinstance(node, _NOT_TRITON):
            return f"{where}: {type(node).__name__.lower()} is not Triton (a kernel body holds tl operations)"
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr in HIDDEN_ATTRIBUTES:
                return f"{where}: .{node.attr} is not a Triton operation"
            if isinstance(node.ctx, (ast.Store, ast.Del)):
                return f"{where}: a kernel does not set attributes (.{node.attr} = ...)"
            if isinstance(node.value, ast.Name) and aliases.get(node.value.id) == "triton" and node.attr not in (
                    "language", "cdiv", "next_power_of_2", "jit"):
                return f"{where}: triton.{node.attr} is not a Triton operation (tl.* are)"
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in local | globals_ \
                | KERNEL_BUILTINS | set(aliases):
            return (f"{where}: {node.id} is not available in a Triton kernel (its arguments, its variables, tl "
                    "operations, other @triton.jit functions and the file's constants are)")
    return ""


def triton_kernel_module(source: str, name: str) -> str:
    """The file the sandbox runs for a Triton answer: ``source`` with every top-level statement blanked (line
    numbers kept) except its imports of triton, its constants (data) and its ``@triton.jit`` functions, each body
    checked by :func:`_check_kernel_body`. Raises :class:`AnswerError` (the learner's) when ``name`` is not such a
    kernel or a kernel body is not Triton."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise AnswerError(f"your answer file does not parse: {type(exc).__name__}: {exc}") from None
    aliases, imports = _aliases(tree)
    consts, kernels, keep = set(), [], list(imports)
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
            node.target if isinstance(node, ast.AnnAssign) and node.value is not None else None
        if isinstance(target, ast.Name) and _constant(node.value, aliases, consts):
            consts.add(target.id)
            keep.append(node)
        elif isinstance(node, ast.FunctionDef) and _decorators_ok(node, aliases, consts):
            kernels.append(node)
    if name not in {k.name for k in kernels}:
        raise AnswerError(f"{name} is not a Triton kernel in your answer file: define it at the top level, "
                          "decorated with @triton.jit (a puzzle is solved by a Triton kernel, not by torch code)")
    globals_ = consts | {k.name for k in kernels}
    for k in kernels:
        problem = _check_kernel_body(k, aliases, globals_)
        if problem:
            raise AnswerError(f"your kernel is not Triton: {problem}")
    def span(node) -> range:
        return range(min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])]), node.end_lineno + 1)

    kept = {id(n) for n in keep + kernels}
    kept_lines = {i for n in keep + kernels for i in span(n)}
    for node in tree.body:
        if id(node) not in kept and kept_lines.intersection(span(node)):
            raise AnswerError(f"your answer file, line {node.lineno}: one statement per line beside a kernel or a "
                              "constant (the grader runs those lines alone)")
    lines = source.splitlines()
    out = [line if i + 1 in kept_lines else "" for i, line in enumerate(lines)]
    return "\n".join(out) + "\n"


class Answer:
    """The function (or Triton kernel, ``triton=True``) ``name`` of a learner's answer file ``source``."""

    def __init__(self, source: str, name: str, *, triton: bool = False, time_limit_s: float | None = None):
        self.source, self.name, self.triton = source, name, triton
        self.time_limit_s = float(time_limit_s or ANSWER_TIME_LIMIT_S) + STARTUP_ALLOWANCE_S
        self.runs = 0
        self.traces: list[tuple[str, str]] = []    # (name, text): the chrome traces of the last tensor run's "trace" calls

    def __repr__(self) -> str:
        return f"<answer {self.name} (run in the sandbox)>"

    # ------------------------------------------------------------------ the one sandbox run
    def _run(self, job_name: str, write_job, out_name: str) -> Path:
        tmp = Path(tempfile.mkdtemp(prefix="rocmlab-answer-"))
        os.chmod(tmp, 0o755)
        try:
            (tmp / "answer.py").write_text(triton_kernel_module(self.source, self.name) if self.triton
                                           else self.source)
            shutil.copy(_HERE / "answer_runner.py", tmp / "answer_runner.py")
            if self.triton:
                shutil.copy(_HERE.parent / "course" / "triton_rounding.py", tmp / "triton_rounding.py")
            write_job(tmp / job_name)
            for f in tmp.iterdir():
                os.chmod(f, 0o644)
            limits = sandbox.Limits(wall_s=self.time_limit_s, memory_bytes=settings.RUN_MEMORY_BYTES,
                                    file_bytes=MAX_OUTPUT_BYTES)
            env = {"TRITON_INTERPRET": "1"} if self.triton else {}
            env["ROCMLAB_LEARNER_PATH"] = str(learner_package())
            done = sandbox.run([sys.executable, "-I", "-B", str(tmp / "answer_runner.py"), str(tmp / job_name),
                                str(tmp / out_name)], limits=limits, scratch=str(tmp), ro_binds=python_binds(),
                               env=env, cwd=str(tmp), etc=sandbox.TOOL_ETC)
            self.runs += 1
            out = tmp / out_name
            if done.starved:
                raise sandbox.MachineBusy(f"your answer {done.explain()}")
            if not done.ok:
                tail = (done.stderr.strip().splitlines() or [""])[-1][:300]
                raise AnswerError(f"your answer {done.explain()}" + (f" ({tail})" if tail and not done.timed_out
                                                                    and tail not in done.explain() else ""))
            st = os.lstat(out) if out.exists() or out.is_symlink() else None
            if st is None or not os.path.isfile(out) or out.is_symlink() or st.st_size > MAX_OUTPUT_BYTES:
                raise AnswerError("your answer left no readable output (it must not write or remove the "
                                  "grader's files)")
            keep = Path(tempfile.mkdtemp(prefix="rocmlab-answer-out-"))
            shutil.copy(out, keep / out_name)
            self.traces = []
            for t in sorted(tmp.glob("trace-*.json")):
                if t.is_file() and not t.is_symlink() and t.stat().st_size <= MAX_OUTPUT_BYTES:
                    self.traces.append((t.name, t.read_text(errors="replace")))
            return keep / out_name
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    # ------------------------------------------------------------------ plain values
    def map(self, calls: list[tuple]) -> list[tuple[object, str]]:
        """``[(value, error)]`` for ``name(*args)`` with each ``args`` of ``calls`` (one sandbox run). A
        dataclass argument arrives as an object with the same attributes; a value comes back as JSON data
        (a tuple as a list)."""
        plain = [[dataclasses.asdict(a) if dataclasses.is_dataclass(a) else a for a in args] for args in calls]
        ns = any(dataclasses.is_dataclass(a) for args in calls for a in args)
        out = self._run("job.json", lambda p: p.write_text(json.dumps({"name": self.name, "calls": plain,
                                                                          "namespace": ns})), "out.json")
        try:
            size = out.stat().st_size
            if size > MAX_JSON_OUTPUT_BYTES:
                raise AnswerError(f"your answer's outputs are {size / 1e6:.1f} MB of JSON, over the "
                                  f"{MAX_JSON_OUTPUT_BYTES >> 20} MiB the grader reads: return only the values asked for")
            data = json.loads(out.read_text())
        except (ValueError, RecursionError):          # written in the sandbox: the learner's doing
            raise AnswerError("your answer's outputs are not readable") from None
        finally:
            shutil.rmtree(out.parent, ignore_errors=True)
        return self._results(data, len(calls), lambda r: (r.get("value"), "") if r.get("ok") else
                             (None, str(r.get("error", "failed"))))

    # ------------------------------------------------------------------ tensors
    def tensor_calls(self, calls: list[dict]) -> list[tuple[object, str]]:
        """``[(value, error)]`` for each call ``{"op": "call" | "trace" | "launch", "args": [...], "grid": ...,
        "meta": {...}}`` (one sandbox run): ``call`` returns the function's outputs, ``trace`` leaves a chrome
        trace in :attr:`traces`, ``launch`` runs ``kernel[grid](*args, **meta)`` and returns every tensor
        argument as the kernel left it."""
        import torch

        out = self._run("job.pt", lambda p: torch.save({"name": self.name, "triton": self.triton,
                                                         "calls": calls}, p), "out.pt")
        try:
            data = torch.load(out, weights_only=True)
        except Exception as exc:   # noqa: BLE001 - not a file torch's safe loader accepts (deep nesting too)
            raise AnswerError(f"your answer's outputs are not readable ({type(exc).__name__})") from None
        finally:
            shutil.rmtree(out.parent, ignore_errors=True)
        return self._results(data, len(calls), lambda r: (r.get("value"), "") if r.get("ok") else
                             (None, str(r.get("error", "failed"))))

    def __call__(self, *args):
        """One call with tensors; raises AnswerError with the learner's error."""
        (value, err), = self.tensor_calls([{"op": "call", "args": list(args)}])
        if err:
            raise AnswerError(err)
        return value

    @staticmethod
    def _results(data, n: int, one) -> list[tuple[object, str]]:
        if not isinstance(data, dict):
            raise AnswerError("your answer's outputs are not readable")
        if data.get("load_error"):
            raise AnswerError(str(data["load_error"])[:600])
        results = data.get("results")
        if not isinstance(results, list) or len(results) != n or not all(isinstance(r, dict) for r in results):
            raise AnswerError("your answer's outputs are not the grader's (wrong count)")
        return [one(r) for r in results]


def answers(fn, inputs: list, *, spread: bool = False) -> list[tuple[object, str]]:
    """``[(fn(x), error)]`` for each ``x`` of ``inputs`` (``spread``: ``fn(*x)``): in the sandbox for an
    :class:`Answer` (one run; a whole-run failure gives every input its error), else here, one call at a time
    (the notebook's preview)."""
    calls = [tuple(x) if spread else (x,) for x in inputs]
    if isinstance(fn, Answer):
        try:
            return fn.map(calls)
        except AnswerError as exc:
            return [(None, str(exc))] * len(inputs)
    out = []
    for args in calls:
        try:
            out.append((fn(*args), ""))
        except Exception as exc:   # noqa: BLE001 - a learner's function can fail in many ways: report it
            out.append((None, f"{type(exc).__name__}: {exc}"))
    return out
