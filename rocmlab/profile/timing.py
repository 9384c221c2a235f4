"""Time a function properly: device events on a GPU, wall clock on the CPU, a warm-up, the
median of many runs with its spread, and input sets rotated so caches do not flatter the result.

``bench(fn)`` calls ``fn()``; ``bench(fn, inputs=[(a0, b0), (a1, b1), ...])`` calls ``fn(*inputs[i % n])``,
a different input set each run. Give it the bytes the function must move and the FLOPs it must do, and
the result carries the achieved bandwidth and TFLOP/s.

What "returns nothing" means: ``fn`` must return what it computed (a tensor, a tuple of tensors, any
value). On a GPU the work is asynchronous, and a function that returns ``None`` is almost always a
mistake: the learner called the function instead of passing it (``bench(f())``), wrote a ``def`` without
``return``, or timed work whose result is thrown away. ``bench`` refuses it with a message saying so;
``allow_none=True`` times such a function anyway (an in-place update that you know runs).
"""

from __future__ import annotations

import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rocmlab.machine.detect import current


class BenchError(ValueError):
    """Bad input to :func:`bench`: the message names the problem and the fix."""


@dataclass(frozen=True)
class BenchResult:
    name: str
    times_s: tuple[float, ...]       # one per timed run
    timer: str                       # "device events (torch.cuda.Event)" or "wall clock (perf_counter)"
    warmup: int
    rotation: int                    # number of input sets cycled through
    bytes: float | None = None       # bytes the function must move per call (counted, not measured)
    flops: float | None = None       # floating-point operations per call
    label: str = ""                  # "backend: device"
    extra: dict = field(default_factory=dict)

    @property
    def reps(self) -> int:
        return len(self.times_s)

    @property
    def median_s(self) -> float:
        return statistics.median(self.times_s)

    def quantile(self, q: float) -> float:
        xs = sorted(self.times_s)
        if len(xs) == 1:
            return xs[0]
        pos = q * (len(xs) - 1)
        lo, hi = math.floor(pos), math.ceil(pos)
        return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)

    @property
    def spread(self) -> float:
        """Interquartile range over the median: 0.05 means the middle half of runs lie within 5%."""
        m = self.median_s
        return (self.quantile(0.75) - self.quantile(0.25)) / m if m > 0 else 0.0

    @property
    def bandwidth_tbs(self) -> float | None:
        return self.bytes / self.median_s / 1e12 if self.bytes and self.median_s > 0 else None

    @property
    def tflops(self) -> float | None:
        return self.flops / self.median_s / 1e12 if self.flops and self.median_s > 0 else None

    @property
    def intensity(self) -> float | None:
        """Arithmetic intensity, FLOP per byte of device memory traffic."""
        return self.flops / self.bytes if self.flops and self.bytes else None

    def row(self) -> dict:
        return {"name": self.name, "median_ms": self.median_s * 1e3, "spread_pct": 100 * self.spread,
                "reps": self.reps, "TB/s": self.bandwidth_tbs, "TFLOP/s": self.tflops,
                "FLOP/byte": self.intensity, "timer": self.timer}

    def __str__(self) -> str:
        bits = [f"{self.name}: {fmt_time(self.median_s)} median of {self.reps} (±{100 * self.spread:.1f}% IQR)"]
        if self.bandwidth_tbs is not None:
            bits.append(f"{fmt_rate(self.bandwidth_tbs * 1e12, 'B/s')}")
        if self.tflops is not None:
            bits.append(f"{fmt_rate(self.tflops * 1e12, 'FLOP/s')}")
        tail = f"  [{self.label}]" if self.label else ""
        return ", ".join(bits) + tail


def fmt_time(s: float) -> str:
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_rate(x: float, unit: str) -> str:
    for prefix, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if x >= scale:
            return f"{x / scale:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _describe(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}" if t.__module__ != "builtins" else t.__qualname__


def _device_of(inputs) -> str | None:
    """'cuda' if any input tensor is on a GPU (ROCm GPUs are 'cuda' devices in torch), else None."""
    for item in inputs or ():
        for x in (item if isinstance(item, (tuple, list)) else (item,)):
            dev = getattr(x, "device", None)
            if dev is not None and getattr(dev, "type", None) == "cuda":
                return "cuda"
    return None


def _use_device_timer(device: str | None, inputs) -> bool:
    try:
        import torch
    except ImportError:
        return False
    if device is None:
        device = _device_of(inputs) or ("cuda" if torch.cuda.is_available() else "cpu")
    return str(device).startswith("cuda") and torch.cuda.is_available()


def time_once(fn: Callable, *, events: bool):
    """(seconds, result) of one call of ``fn``: between device events after a device synchronize when
    ``events`` (a GPU, also an AMD one under ROCm), else on the wall clock. The one timer under
    :func:`bench` and the all-reduce sweeps."""
    if events:
        import torch

        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3, out
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def graph_bench(fn, quantiles=None, warmup: int = 10, rep: int = 40):
    """Median (or quantiles) in ms of ``fn``'s GPU time: one launch captured in a CUDA/HIP graph and
    replayed, with the L2 cache flushed between runs (triton.testing.do_bench). The graph keeps the
    host's launch overhead (tens of microseconds through Python) out of a kernel's time, as in a
    graph-captured all-reduce. Falls back to plain do_bench where capture fails."""
    import torch
    from triton.testing import do_bench

    fn()
    torch.cuda.synchronize()
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            fn()
        torch.cuda.synchronize()
        run = graph.replay
    except Exception:   # noqa: BLE001 - any capture failure: time it eagerly
        torch.cuda.synchronize()
        run = fn
    kw = dict(quantiles=quantiles) if quantiles else dict(return_mode="median")
    return do_bench(run, warmup=warmup, rep=rep, **kw)


def bench(fn: Callable, *, inputs: Sequence | None = None, warmup: int = 3, reps: int = 20,
          max_time_s: float | None = None, bytes: float | None = None, flops: float | None = None,
          name: str | None = None, device: str | None = None, allow_none: bool = False,
          label: str | None = None) -> BenchResult:
    """Time ``fn`` and return a :class:`BenchResult` (median, spread, achieved rates).

    inputs: a list of argument tuples (or single arguments); run ``i`` uses ``inputs[i % len(inputs)]``.
        Give enough sets that together they exceed the last-level cache (:func:`rotation_count`).
    warmup: untimed calls first (module load, kernel selection, allocator growth stay out of the numbers).
    reps: timed calls; the median is reported with the interquartile spread.
    max_time_s: stop timing early once this much time was spent (at least 3 timed runs).
    bytes / flops: counted per call, for bandwidth and TFLOP/s.
    device: 'cuda' (also an AMD GPU under ROCm) for device events, 'cpu' for the wall clock;
        default: the inputs' device, else the GPU if torch sees one.
    allow_none: time a function that returns None (see the module docstring).
    """
    if not callable(fn):
        raise BenchError(
            f"bench needs a function to call, but got a {_describe(fn)}. Did you call it? "
            "Write bench(f) or bench(lambda: f(x)), not bench(f(x)).")
    if reps < 1 or warmup < 0:
        raise BenchError(f"bench needs reps >= 1 and warmup >= 0 (got reps={reps}, warmup={warmup})")
    if inputs is not None:
        inputs = list(inputs)
        if not inputs:
            raise BenchError("bench got an empty inputs list: pass at least one argument set, or no inputs")
    name = name or getattr(fn, "__name__", "fn")
    sets = [(x if isinstance(x, tuple) else (x,)) for x in inputs] if inputs else [()]
    n = len(sets)

    def call(i):
        return fn(*sets[i % n])

    # First call outside the timers: it proves the function runs and returns something.
    try:
        out = call(0)
    except Exception as exc:
        raise BenchError(f"bench: {name} raised {type(exc).__name__} on its first call, so nothing was "
                         f"timed: {exc}. Fix the function (call it once yourself to see the traceback).") from exc
    if out is None and not allow_none:
        raise BenchError(
            f"bench: {name} returned None. bench times a function that returns what it computed "
            "(e.g. `lambda: a @ b`): a function that returns nothing usually means a missing `return`, "
            "or the result of calling the function was passed instead of the function. "
            "If it really works in place, pass allow_none=True.")
    del out
    for i in range(1, warmup):
        call(i)

    use_events = _use_device_timer(device, inputs)
    times: list[float] = []
    spent = 0.0
    for i in range(reps):
        t, out = time_once(lambda i=i: call(i), events=use_events)
        del out
        times.append(t)
        spent += t
        if max_time_s is not None and spent > max_time_s and len(times) >= 3:
            break
    timer = "device events (torch.cuda.Event)" if use_events else "wall clock (time.perf_counter)"
    if label is None:
        label = current().label
    return BenchResult(name, tuple(times), timer, warmup, n, bytes, flops, label)


def last_level_cache_bytes(plat=None) -> int:
    """The last-level cache a rotation must defeat: L2 + Infinity Cache from the spec row on a GPU,
    the largest CPU cache in sysfs on the CPU; 256 MiB if neither is known (covers MI300X's 256 MB)."""

    plat = plat or current()
    spec = plat.device.spec if plat.device else None
    if plat.is_gpu and spec is not None:
        mb = (spec["l2_mb"] or 0) + (spec["infinity_cache_mb"] or 0)
        if mb:
            return int(mb * 1e6)
    if plat.backend == "cpu":
        best = 0
        base = "/sys/devices/system/cpu/cpu0/cache"
        try:
            for idx in os.listdir(base):
                try:
                    with open(os.path.join(base, idx, "size")) as fh:
                        s = fh.read().strip()
                except OSError:
                    continue
                mult = {"K": 1024, "M": 1024 ** 2}.get(s[-1:], 1)
                best = max(best, int(s.rstrip("KM")) * mult)
        except OSError:
            pass
        if best:
            return best
    return 256 * 1024 ** 2


def rotation_count(bytes_per_set: float, cache_bytes: float | None = None, factor: float = 2.0,
                   max_sets: int = 64) -> int:
    """How many input sets to cycle so that together they exceed ``factor`` x the last-level cache."""
    if bytes_per_set <= 0:
        raise BenchError(f"rotation_count needs a positive size per input set (got {bytes_per_set})")
    cache = last_level_cache_bytes() if cache_bytes is None else cache_bytes
    return int(max(1, min(max_sets, math.ceil(factor * cache / bytes_per_set))))
