"""Kernel tables from profiler traces: torch.profiler (every backend) and rocprofv3/rocprof (ROCm).

Both end in the same two DataFrames:

- ``events``: one row per kernel or operator: name, cat, lane (a GPU stream or a CPU thread), start_us
  (from the first event), dur_us, self_us (time not spent in a nested child), depth;
- the kernel table (:func:`kernel_table`): name, calls, total_us, mean_us, share.

On a GPU the table lists device kernels (and copies/memsets), which do not nest. On a CPU there are no
kernels: it lists operators by *self* time, so nested operators (aten::linear calling aten::addmm) are
not counted twice and the shares add up to 100%.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import json
import os
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rocmlab.machine.detect import current
from rocmlab.sandbox import run_limited

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
CPU_CATS = ("cpu_op",)
EVENT_COLUMNS = ["name", "cat", "lane", "start_us", "dur_us", "self_us", "depth"]


class ProfileError(RuntimeError):
    """Profiling could not produce a table; the message names the problem and the fix."""


def _frame(rows):
    import pandas as pd

    df = pd.DataFrame(rows, columns=EVENT_COLUMNS)
    if len(df):
        df["start_us"] -= df["start_us"].min()
        df = df.sort_values(["lane", "start_us"], kind="stable").reset_index(drop=True)
    return df


def _nest(rows):
    """Fill self_us and depth for events of one lane that nest (CPU operators)."""
    by_lane: dict = {}
    for r in rows:
        by_lane.setdefault(r["lane"], []).append(r)
    for lane_rows in by_lane.values():
        lane_rows.sort(key=lambda r: (r["start_us"], -r["dur_us"]))
        stack: list = []
        for r in lane_rows:
            end = r["start_us"] + r["dur_us"]
            while stack and stack[-1]["start_us"] + stack[-1]["dur_us"] < end - 1e-3:
                stack.pop()
            r["depth"] = len(stack)
            r["self_us"] = r["dur_us"]
            if stack:
                stack[-1]["self_us"] -= r["dur_us"]
            stack.append(r)
    for r in rows:
        r["self_us"] = max(0.0, r["self_us"])
    return rows


def read_chrome_trace(trace) -> tuple:
    """(events DataFrame, kind) from a torch.profiler chrome trace: a path, a JSON string or a dict.

    kind is ``"gpu"`` when the trace has device kernels, else ``"cpu"`` (operators)."""
    if isinstance(trace, (str, Path)) and not str(trace).lstrip().startswith("{"):
        path = Path(trace)
        if not path.is_file():
            raise ProfileError(f"no trace file at {path}: export one with prof.export_chrome_trace(path)")
        trace = json.loads(path.read_text())
    elif isinstance(trace, str):
        trace = json.loads(trace)
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    gpu, cpu = [], []
    for e in events:
        if e.get("ph") != "X" or "dur" not in e:
            continue
        cat = e.get("cat", "")
        if cat in GPU_CATS:
            args = e.get("args", {}) or {}
            stream = args.get("stream", e.get("tid"))
            dev = args.get("device", e.get("pid"))
            gpu.append({"name": e.get("name", "?"), "cat": cat, "lane": f"gpu {dev} stream {stream}",
                        "start_us": float(e["ts"]), "dur_us": float(e["dur"]), "self_us": float(e["dur"]),
                        "depth": 0})
        elif cat in CPU_CATS:
            cpu.append({"name": e.get("name", "?"), "cat": cat, "lane": f"cpu thread {e.get('tid')}",
                        "start_us": float(e["ts"]), "dur_us": float(e["dur"]), "self_us": 0.0, "depth": 0})
    if gpu:
        return _frame(gpu), "gpu"
    return _frame(_nest(cpu)), "cpu"


def kernel_table(events, by: str | None = None, top: int | None = None):
    """name, calls, total_us, mean_us, share (of the summed time), longest first.

    by: the time column to sum: ``dur_us`` for kernels (default when nothing nests), ``self_us`` for
    nested CPU operators (default when any event has depth > 0)."""
    import pandas as pd

    cols = ["name", "calls", "total_us", "mean_us", "share"]
    if events is None or len(events) == 0:
        return pd.DataFrame(columns=cols)
    if by is None:
        by = "self_us" if (events["depth"] > 0).any() else "dur_us"
    g = events.groupby("name", sort=False)[by].agg(["count", "sum"]).reset_index()
    g.columns = ["name", "calls", "total_us"]
    g = g[g["total_us"] > 0] if by == "self_us" else g
    g["mean_us"] = g["total_us"] / g["calls"]
    total = g["total_us"].sum()
    g["share"] = g["total_us"] / total if total > 0 else 0.0
    g = g.sort_values("total_us", ascending=False, kind="stable").reset_index(drop=True)
    return g.head(top) if top else g


@dataclass
class KernelProfile:
    events: object          # DataFrame (EVENT_COLUMNS)
    kind: str               # "gpu" (device kernels) or "cpu" (operators by self time)
    source: str             # "torch.profiler", "rocprofv3", "rocprof"
    label: str
    trace_path: str | None = None
    steps: int = 1

    @property
    def table(self):
        return kernel_table(self.events)

    def summary(self) -> str:
        t = self.table
        what = "device kernels" if self.kind == "gpu" else "CPU operators (self time)"
        total_ms = t["total_us"].sum() / 1e3 if len(t) else 0.0
        return (f"{self.source}: {len(self.events)} {what}, {len(t)} distinct, {total_ms:.3g} ms over "
                f"{self.steps} step(s)  [{self.label}]")


#: Lines the profiler's C++ side prints on stderr at every start and stop ("USDT:... profiler_start"):
#: bookkeeping, not a warning, so they are kept from the learner.
PROFILER_NOISE = ("USDT:",)


@contextlib.contextmanager
def quiet_profiler_stderr():
    """Hold back the profiler's start/stop lines (:data:`PROFILER_NOISE`) that its C++ side writes straight to
    file descriptor 2; every other line written meanwhile is passed on to ``sys.stderr`` at the end."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):      # no real stderr (an embedded interpreter): nothing to filter
        yield
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            kept = [ln for ln in tmp.read().decode(errors="replace").splitlines()
                    if ln.strip() and not ln.lstrip().startswith(PROFILER_NOISE)]
            if kept:
                print("\n".join(kept), file=sys.stderr)


@dataclass(frozen=True)
class TraceCounts:
    """What one trace holds, counted: CPU operators by name (nested ones too), device kernels by name,
    and device-to-host copies (each one a point where the host waited for the device)."""
    ops: Counter
    kernels: Counter
    dtoh_copies: int

    @property
    def host_syncs(self) -> int:
        """Calls that make the host wait for a result: ``.item()`` / ``aten::_local_scalar_dense``
        (a CPU trace) and device-to-host copies (a GPU trace)."""
        return max(self.ops.get("aten::item", 0), self.ops.get("aten::_local_scalar_dense", 0), self.dtoh_copies)

    @property
    def launches(self) -> int:
        """Device kernels when there are any, else the operators the step called at its top level."""
        return sum(self.kernels.values()) if self.kernels else self.ops.get("__top__", 0)


def trace_counts(trace) -> TraceCounts:
    """:class:`TraceCounts` of a torch.profiler chrome trace (a path, JSON text or a dict)."""
    if isinstance(trace, (str, Path)) and not str(trace).lstrip().startswith("{"):
        trace = json.loads(Path(trace).read_text())
    elif isinstance(trace, str):
        trace = json.loads(trace)
    events = trace.get("traceEvents", trace) if isinstance(trace, dict) else trace
    cpu = [{"name": e.get("name", "?"), "lane": e.get("tid"), "start_us": float(e["ts"]), "dur_us": float(e["dur"]),
            "self_us": 0.0, "depth": 0}
           for e in events if e.get("ph") == "X" and "dur" in e and e.get("cat") in CPU_CATS]
    ops = Counter(r["name"] for r in cpu)
    ops["__top__"] = sum(1 for r in _nest(cpu) if r["depth"] == 0)
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATS]
    kernels = Counter(e.get("name", "?") for e in gpu if e.get("cat") == "kernel")
    dtoh = sum(1 for e in gpu if e.get("cat") == "gpu_memcpy" and "dtoh" in e.get("name", "").lower().replace(" ", ""))
    return TraceCounts(ops, kernels, dtoh)


def _not_callable(fn, who: str):
    t = type(fn)
    return ProfileError(f"{who} needs a function to call, but got a {t.__qualname__}. Did you call it? "
                        f"Write {who}(f) or {who}(lambda: f(x)), not {who}(f(x)).")


def profile_kernels(fn: Callable, *args, steps: int = 3, warmup: int = 1, trace_dir: str | None = None,
                    record_shapes: bool = False, **kwargs) -> KernelProfile:
    """Run ``fn(*args, **kwargs)`` ``warmup`` times, then ``steps`` times under torch.profiler, and
    return its kernels (on a GPU) or operators (on a CPU) as a :class:`KernelProfile`.

    If ``fn`` raises, the profiler is stopped cleanly and a :class:`ProfileError` says which call failed
    (the original exception is chained, with its traceback)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    if not callable(fn):
        raise _not_callable(fn, "profile_kernels")
    if steps < 1:
        raise ProfileError(f"profile_kernels needs steps >= 1 (got {steps})")
    name = getattr(fn, "__name__", "fn")
    gpu = torch.cuda.is_available()
    for i in range(warmup):
        try:
            fn(*args, **kwargs)
        except Exception as exc:
            raise ProfileError(f"profile_kernels: {name} raised {type(exc).__name__} in warm-up call {i + 1}, "
                               f"before profiling started; nothing was recorded: {exc}. Fix the function "
                               "(call it once yourself to see the traceback).") from exc
    if gpu:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if gpu else [])
    failure = None
    with quiet_profiler_stderr(), profile(activities=activities, record_shapes=record_shapes) as prof:
        for i in range(steps):
            try:
                fn(*args, **kwargs)
            except Exception as exc:
                failure = (i, exc)
                break
        if gpu:
            torch.cuda.synchronize()
    if failure:
        i, exc = failure
        raise ProfileError(f"profile_kernels: {name} raised {type(exc).__name__} in profiled step {i + 1} of "
                           f"{steps}; the profiler was stopped and its partial trace discarded: {exc}. Fix the "
                           "function (call it once yourself to see the traceback).") from exc
    trace_dir = trace_dir or tempfile.mkdtemp(prefix="rocmlab-trace-")
    path = os.path.join(trace_dir, f"{name}.trace.json")
    prof.export_chrome_trace(path)
    events, kind = read_chrome_trace(path)
    return KernelProfile(events, kind, "torch.profiler", current().label, path, steps)


# --- rocprofv3 / rocprof ---------------------------------------------------------------------

def rocprof_tool(which=None) -> tuple[str, str] | None:
    """(name, path) of rocprofv3, else rocprof, on PATH; None if neither is."""

    which = which or shutil.which
    for tool in ("rocprofv3", "rocprof"):
        path = which(tool)
        if path:
            return tool, path
    return None


def _int(x):
    try:
        return int(float(x))
    except (TypeError, ValueError):
        return None


def read_rocprof_csv(path) -> object:
    """Events from a rocprofv3 ``*_kernel_trace.csv`` (Kernel_Name, Start/End_Timestamp in ns,
    Agent_Id, Queue_Id or Stream_Id) or a rocprof v1 ``results.csv`` (KernelName, BeginNs, EndNs,
    gpu-id, queue-id)."""
    rows = []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        fields = set(reader.fieldnames or ())
        if {"Kernel_Name", "Start_Timestamp", "End_Timestamp"} <= fields:
            name_k, start_k, end_k = "Kernel_Name", "Start_Timestamp", "End_Timestamp"
            dev_k, q_k = "Agent_Id", ("Stream_Id" if "Stream_Id" in fields else "Queue_Id")
        elif {"KernelName", "BeginNs", "EndNs"} <= fields:
            name_k, start_k, end_k, dev_k, q_k = "KernelName", "BeginNs", "EndNs", "gpu-id", "queue-id"
        else:
            raise ProfileError(f"{path} is not a kernel trace: expected rocprofv3 columns Kernel_Name, "
                               "Start_Timestamp, End_Timestamp or rocprof columns KernelName, BeginNs, EndNs; "
                               f"found {sorted(fields)[:8]}")
        for r in reader:
            s, e = _int(r.get(start_k)), _int(r.get(end_k))
            if s is None or e is None or e < s:
                continue
            rows.append({"name": r.get(name_k, "?"), "cat": "kernel",
                         "lane": f"gpu {r.get(dev_k, '?')} stream {r.get(q_k, '?')}",
                         "start_us": s / 1e3, "dur_us": (e - s) / 1e3, "self_us": (e - s) / 1e3, "depth": 0})
    return _frame(rows)


def find_kernel_csv(out_dir) -> str | None:
    for pattern in ("**/*kernel_trace.csv", "**/results.csv"):
        hits = sorted(glob.glob(os.path.join(str(out_dir), pattern), recursive=True))
        if hits:
            return hits[0]
    return None


def _python_command(fn) -> list[str]:
    mod = getattr(fn, "__module__", None)
    qual = getattr(fn, "__qualname__", "")
    if not mod or mod == "__main__" or "<" in qual:
        raise ProfileError(
            f"run_under_rocprof runs a function in a new process, so it must be importable; {qual or fn!r} "
            f"is defined in {mod or 'no module'}. Put it in a .py file (def main(): ...) and pass that "
            "function, or pass a command list such as [sys.executable, 'my_script.py'].")
    code = f"import importlib; f = importlib.import_module({mod!r})\nfor p in {qual.split('.')!r}: f = getattr(f, p)\nf()"
    return [sys.executable, "-c", code]


def rocprof_command(tool: str, path: str, out_dir: str, cmd: list[str]) -> list[str]:
    if tool == "rocprofv3":
        return [path, "--kernel-trace", "--output-format", "csv", "-d", out_dir, "--", *cmd]
    return [path, "--timestamp", "on", "-o", os.path.join(out_dir, "results.csv"), *cmd]


def run_under_rocprof(target, out_dir: str | None = None, timeout_s: float = 300.0, which=None) -> KernelProfile:
    """Run a command (a list) or an importable Python function under rocprofv3 (or rocprof) and read
    its kernel trace into a :class:`KernelProfile`."""

    found = rocprof_tool(which)
    if found is None:
        raise ProfileError("neither rocprofv3 nor rocprof is on PATH: they ship with ROCm "
                           "(export PATH=$PATH:/opt/rocm/bin). On other machines use profile_kernels, "
                           "which reads torch.profiler.")
    tool, path = found
    if callable(target):
        cmd = _python_command(target)
    elif isinstance(target, (list, tuple)) and target:
        cmd = [str(c) for c in target]
    else:
        raise ProfileError(f"run_under_rocprof needs a command list or an importable function, got {target!r}")
    out_dir = out_dir or tempfile.mkdtemp(prefix="rocmlab-rocprof-")
    res = run_limited(rocprof_command(tool, path, out_dir, cmd), timeout_s=timeout_s, memory_bytes=None)
    if not res.ok:
        raise ProfileError(f"{tool} run {res.explain()}; stderr tail: {res.stderr.strip()[-400:]}")
    csv_path = find_kernel_csv(out_dir)
    if csv_path is None:
        raise ProfileError(f"{tool} finished but wrote no kernel trace CSV under {out_dir}: did the program "
                           "launch any GPU kernel?")
    return KernelProfile(read_rocprof_csv(csv_path), "gpu", tool, current().label, csv_path)
