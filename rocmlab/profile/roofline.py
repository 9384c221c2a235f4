"""A roofline model: the spec peaks from ``datasets/hardware.csv`` next to the ceilings measured on
this device (a large device copy and a large GEMM per precision), measured once and cached per device.

Attainable FLOP/s at arithmetic intensity I (FLOP per byte) is min(peak FLOP/s, bandwidth x I); the
ridge point peak / bandwidth is where a kernel stops being memory bound.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from rocmlab.machine.detect import current
from rocmlab.paths import cache_dir
from rocmlab.profile import ops

CACHE_FILE = "ceilings.json"


@dataclass
class Ceilings:
    """What this device measured: copy bandwidth (TB/s) and GEMM TFLOP/s per precision."""

    key: str
    label: str
    bandwidth_tbs: float
    tflops: dict                                  # dtype -> measured TFLOP/s
    sizes: dict                                   # what was measured: copy bytes, gemm n
    measured_at: str = ""
    notes: dict = field(default_factory=dict)     # dtype -> why it was not measured


def device_key(plat=None, profile: str = "full") -> str:
    """Cache key: backend, device name, torch version and the size profile (quick or full)."""
    import torch

    plat = plat or current()
    name = plat.device.name if plat.device else "unknown"
    return f"{plat.backend}|{name}|torch {torch.__version__}|{profile}"


def _cache_path():
    return cache_dir() / CACHE_FILE


def load_cache() -> dict:
    try:
        return json.loads(_cache_path().read_text())
    except (OSError, ValueError):
        return {}


def default_sizes(quick: bool, plat=None) -> dict:
    plat = plat or current()
    if not plat.is_gpu:
        return {"copy_bytes": 32 * 2 ** 20 if quick else 256 * 2 ** 20, "gemm_n": 256 if quick else 1024}
    return {"copy_bytes": 256 * 2 ** 20 if quick else 2 * 2 ** 30, "gemm_n": 2048 if quick else 8192}


def measure_ceilings(quick: bool = False, dtypes=("fp32", "bf16"), force: bool = False, sizes=None,
                     plat=None, reps: int | None = None, verbose: bool = True) -> Ceilings:
    """Measure copy bandwidth and GEMM rates on this device, or return the cached figures.

    The cache (``~/.cache/rocmlab/ceilings.json``, ``ROCMLAB_HOME`` moves it) is keyed by backend,
    device, torch version and size profile; ``force=True`` measures again. A cached entry that lacks a
    requested precision is completed, not replaced."""

    plat = plat or current()
    profile = "quick" if quick else "full"
    key = device_key(plat, profile)
    cache = load_cache()
    sizes = sizes or default_sizes(quick, plat)
    entry = cache.get(key) if not force else None
    if entry and entry.get("sizes") == sizes and _stale(entry, sizes, plat):
        if verbose:
            print(f"cached ceilings ({entry.get('measured_at')}) are well below a copy measured now "
                  f"(measured under load?): measuring again  [{plat.label}]")
        entry = None
    if entry and entry.get("sizes") == sizes:
        c = Ceilings(**entry)
        missing = [d for d in dtypes if d not in c.tflops and d not in c.notes]
        if not missing:
            if verbose:
                print(f"ceilings from cache ({c.measured_at}; force=True measures again)  [{c.label}]")
            return c
    else:
        c = Ceilings(key, plat.label, 0.0, {}, dict(sizes))
        missing = list(dtypes)
        copy = ops.copy_case(sizes["copy_bytes"]).run(reps=reps or (10 if quick else 30), label=plat.label)
        c.bandwidth_tbs = copy.bandwidth_tbs
        if verbose:
            print(copy)
    for d in missing:
        try:
            case = ops.gemm_case(sizes["gemm_n"], d)
        except ops.Unsupported as exc:
            c.notes[d] = str(exc)
            if verbose:
                print(f"gemm {d}: not measured: {exc}")
            continue
        r = case.run(reps=reps or (10 if quick else 20), max_time_s=5.0, label=plat.label)
        c.tflops[d] = r.tflops
        del case
        if verbose:
            print(r)
    c.measured_at = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    cache[key] = asdict(c)
    try:
        _cache_path().write_text(json.dumps(cache, indent=1))
    except OSError as exc:   # a read-only home: keep going, just unsaved
        print(f"warning: could not save the ceilings cache ({exc})")
    return c


STALE_FACTOR = 1.5


def _stale(entry: dict, sizes: dict, plat) -> bool:
    """True when a short copy measured now beats the cached copy ceiling by STALE_FACTOR: the cached
    figures were taken on a busy machine (common on shared CPUs), so they are no ceiling."""
    cached = entry.get("bandwidth_tbs") or 0.0
    return _quick_copy_tbs(sizes, plat) > STALE_FACTOR * cached


def _quick_copy_tbs(sizes: dict, plat) -> float:
    return ops.copy_case(sizes["copy_bytes"]).run(reps=5, label=plat.label).bandwidth_tbs


@dataclass
class Roofline:
    """Spec peaks and measured ceilings for one device. Figures in TB/s and TFLOP/s."""

    label: str
    spec_name: str | None
    peak_bandwidth_tbs: float | None
    peak_tflops: dict                      # dtype -> spec TFLOP/s (None: not published / supported)
    bandwidth_tbs: float | None = None     # measured
    tflops: dict = field(default_factory=dict)
    gpu: bool = True                       # False on a CPU: its roof is the CPU's own, no GPU roof at all

    @classmethod
    def for_device(cls, ceilings: Ceilings | None = None, plat=None) -> Roofline:
        plat = plat or current()
        spec = plat.device.spec if plat.device else None
        peaks = {d: (spec[f] if spec else None) for d, f in ops.SPEC_FIGURE.items()}
        r = cls(plat.label, spec.device if spec else None, spec["bandwidth_tbs"] if spec else None, peaks,
                gpu=bool(getattr(plat, "is_gpu", spec is not None)))
        if ceilings is not None:
            r.bandwidth_tbs = ceilings.bandwidth_tbs
            r.tflops = dict(ceilings.tflops)
        return r

    def bandwidth(self, measured: bool = True) -> float | None:
        return self.bandwidth_tbs if measured else self.peak_bandwidth_tbs

    def compute(self, dtype: str, measured: bool = True) -> float | None:
        return (self.tflops if measured else self.peak_tflops).get(dtype)

    def attainable(self, intensity: float, dtype: str = "bf16", measured: bool = True) -> float | None:
        """TFLOP/s the roof allows at ``intensity`` FLOP/byte."""
        bw, peak = self.bandwidth(measured), self.compute(dtype, measured)
        if bw is None or peak is None:
            return None
        return min(peak, bw * intensity)

    def ridge(self, dtype: str = "bf16", measured: bool = True) -> float | None:
        """The intensity (FLOP/byte) above which a kernel is compute bound."""
        bw, peak = self.bandwidth(measured), self.compute(dtype, measured)
        return peak / bw if bw and peak else None

    def bound(self, intensity: float, dtype: str = "bf16", measured: bool = True) -> str:
        r = self.ridge(dtype, measured)
        if r is None:
            return "unknown"
        return "memory" if intensity < r else "compute"

    def place(self, results, dtype_of=None):
        """A DataFrame placing bench results on the roof: intensity, achieved TFLOP/s, the roof there
        (measured; the spec roof where this precision was not measured) and the share of it reached.
        ``dtype_of(result)`` names each result's precision (default: the precision word in its name,
        else fp32). A point above its roof is flagged: the ceiling was measured under other load or at
        a size this device runs worse (``measure_ceilings(force=True)`` measures again). A precision
        with no roof (not measured here, no spec row) says so in ``bound`` ("no roof") and ``note``."""
        import pandas as pd

        rows = []
        for r in results:
            dt = dtype_of(r) if dtype_of else _dtype_from_name(r.name)
            inten = r.intensity if r.intensity is not None else (0.0 if r.bytes else None)
            achieved = r.tflops or 0.0
            which = "measured" if self.compute(dt) is not None and self.bandwidth_tbs else "spec"
            measured = which == "measured"
            if not inten:                       # a pure copy: judge it by bandwidth alone
                roof = None
                which = "measured" if self.bandwidth_tbs else "spec"
                measured = which == "measured"
                bw = self.bandwidth(measured)
                share = r.bandwidth_tbs / bw if (r.bandwidth_tbs is not None and bw) else None
                bound = "memory"
            else:
                roof = self.attainable(inten, dt, measured)
                share = achieved / roof if roof else None
                bound = self.bound(inten, dt, measured)
            note = ""
            if roof is None and share is None:
                bound = "no roof"
                note = f"no {dt} ceiling measured here" + ("" if self.spec_name else " and no spec row")
            elif share is not None and share > 1.1:
                note = f"above the {which} roof: re-measure the ceilings (force=True)"
            rows.append({"name": r.name, "dtype": dt, "FLOP/byte": inten, "TFLOP/s": achieved,
                         "TB/s": r.bandwidth_tbs, "time_ms": r.median_s * 1e3, "roof TFLOP/s": roof,
                         "roof": which if roof or share else "none", "of roof": share, "bound": bound,
                         "note": note})
        return pd.DataFrame(rows)


def _dtype_from_name(name: str) -> str:
    parts = name.split()
    for d in ops.DTYPES:
        if d in parts:
            return d
    return "fp32"
