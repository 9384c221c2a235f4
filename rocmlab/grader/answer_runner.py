"""Runs a learner's Python answer file inside the sandbox, for :mod:`rocmlab.grader.pyanswer`.

This file is copied into the sandbox's scratch folder and run there by itself: it imports only the standard
library, torch and triton (never rocmlab, whose checkers and reference answers the sandbox does not hold).
It loads ``answer.py``, takes the function or kernel named in the job, runs it on the inputs the grader
drew, and writes what came out. It judges nothing: the grader compares the outputs outside the sandbox.

    python answer_runner.py job.json out.json          # a JSON job: plain values in, plain values out
    python answer_runner.py job.pt out.pt              # a tensor job (torch.save): calls, traces, launches

A problem of the answer itself (it does not import, it has no such function, it is not a Triton kernel)
is written to the output as ``{"load_error": "..."}``; the run still ends with status 0.
"""

import importlib.util
import json
import os
import sys
import traceback
import types


def _last_line(exc: BaseException) -> str:
    msg = (str(exc).strip().splitlines() or [""])[-1]
    return f"{type(exc).__name__}: {msg}"[:500]


def _triton_kinds() -> tuple:
    """The classes a Triton kernel is an instance of (jit, autotune, heuristics, the CPU interpreter's), as triton
    defines them: read before the answer's file is loaded, so that nothing it does replaces them."""
    import triton as tr
    from triton.runtime import interpreter

    return tuple(k for k in (getattr(tr.runtime, "JITFunction", None), getattr(tr.runtime, "Autotuner", None),
                             getattr(tr.runtime, "Heuristics", None),
                             getattr(interpreter, "InterpretedFunction", None)) if k is not None)


def _load(name: str, triton: bool):
    """The learner's function (or Triton kernel) ``name`` from answer.py."""
    if triton:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        rounding = os.path.join(os.path.dirname(os.path.abspath(__file__)), "triton_rounding.py")
        if os.path.exists(rounding):
            spec = importlib.util.spec_from_file_location("_rounding", rounding)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            mod.round_like_the_gpu()
    kinds = _triton_kinds() if triton else ()     # triton's own classes, taken before the answer's file runs
    spec = importlib.util.spec_from_file_location("answer", os.path.join(os.getcwd(), "answer.py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules["answer"] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException as exc:   # noqa: BLE001 - the learner's file: report it, whatever it is
        tb = traceback.extract_tb(exc.__traceback__)
        line = next((f" (answer.py line {f.lineno})" for f in reversed(tb) if f.filename.endswith("answer.py")), "")
        raise LookupError(f"your answer file does not import{line}: {_last_line(exc)}") from None
    fn = getattr(mod, name, None)
    if fn is None:
        raise LookupError(f"your answer file defines no {name}: hand in the file with your {name}")
    if triton:
        if type(fn) not in kinds:
            raise LookupError(f"{name} is a {type(fn).__name__}, not a Triton kernel: decorate it with @triton.jit "
                              "(a puzzle is solved by a Triton kernel, not by torch code)")
    elif not callable(fn):
        raise LookupError(f"{name} is a {type(fn).__name__}, not a function")
    return fn


def _plain(v):
    """A value as plain JSON data (tuples become lists), or TypeError."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if hasattr(v, "item") and callable(v.item) and getattr(v, "ndim", 1) == 0:   # a numpy or torch scalar
        return v.item()
    raise TypeError(f"returned a {type(v).__name__}, not a plain value")


def _json_job(job: dict) -> dict:
    fn = _load(job["name"], False)
    results = []
    for args in job["calls"]:
        args = [types.SimpleNamespace(**a) if job.get("namespace") and isinstance(a, dict) else a for a in args]
        try:
            results.append({"ok": True, "value": _plain(fn(*args))})
        except Exception as exc:   # noqa: BLE001
            results.append({"ok": False, "error": _last_line(exc)})
    return {"results": results}


def _detached(v):
    import torch

    if isinstance(v, torch.Tensor):
        return v.detach().cpu().clone()
    if isinstance(v, (list, tuple)):
        return [_detached(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        return v.item()
    raise TypeError(f"returned a {type(v).__name__}: return tensors and numbers")


def _trace(fn, args, path: str) -> None:
    """One warm-up call, then one call under torch.profiler; its chrome trace goes to ``path``."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn(*args)
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with profile(activities=acts) as prof:
        fn(*args)
    prof.export_chrome_trace(path)


def _tensor_job(job: dict, out_path: str) -> dict:
    import torch

    fn = _load(job["name"], bool(job.get("triton")))
    results = []
    for i, call in enumerate(job["calls"]):
        args = call["args"]
        try:
            if call["op"] == "call":
                results.append({"ok": True, "value": _detached(fn(*args))})
            elif call["op"] == "trace":
                _trace(fn, args, os.path.join(os.path.dirname(out_path), f"trace-{i}.json"))
                results.append({"ok": True, "value": None})
            elif call["op"] == "launch":
                fn[tuple(call["grid"])](*args, **call.get("meta", {}))
                if torch.cuda.is_available():
                    torch.cuda.synchronize()
                # each tensor as it is: a view of its whole buffer (torch.save keeps the storage, guards included)
                results.append({"ok": True, "value": [a.detach().cpu() if isinstance(a, torch.Tensor) else None
                                                      for a in args]})
            else:
                results.append({"ok": False, "error": f"unknown operation {call['op']!r}"})
        except Exception as exc:   # noqa: BLE001
            results.append({"ok": False, "error": _last_line(exc)})
    return {"results": results}


def main() -> int:
    job_path, out_path = sys.argv[1], sys.argv[2]
    # the course's toolkit without its checkers and references (rocmlab.grader.pyanswer.learner_package)
    learner = os.environ.get("ROCMLAB_LEARNER_PATH")
    if learner:
        sys.path.insert(0, learner)
    tensors = job_path.endswith(".pt")
    if tensors:
        import torch

        job = torch.load(job_path, weights_only=True)
    else:
        with open(job_path) as f:
            job = json.load(f)
    try:
        out = _tensor_job(job, out_path) if tensors else _json_job(job)
    except LookupError as exc:
        out = {"load_error": str(exc.args[0] if exc.args else exc)}
    except TypeError as exc:
        out = {"load_error": _last_line(exc)}
    if tensors:
        import torch

        try:
            torch.save(out, out_path)
        except Exception as exc:   # noqa: BLE001 - a value torch cannot save
            torch.save({"load_error": f"the answer's outputs cannot be returned: {_last_line(exc)}"}, out_path)
    else:
        try:
            text = json.dumps(out)
        except (TypeError, ValueError) as exc:
            text = json.dumps({"load_error": f"the answer's outputs cannot be returned: {_last_line(exc)}"})
        with open(out_path, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
