"""A live monitor for GPU (or CPU) utilisation, memory, power and temperature.

Three sources, tried in this order (``source="amdsmi" | "nvml" | "psutil"`` picks one):

- **amdsmi** (AMD GPUs, ROCm): ``pip install amdsmi`` or ROCm's ``/opt/rocm/share/amd_smi``;
- **nvml** via nvidia-ml-py (NVIDIA GPUs): ``pip install nvidia-ml-py`` (imported as ``pynvml``);
- **psutil** (the CPU and system RAM; no power reading).

:class:`Monitor` samples in a background thread, so the notebook never blocks, keeps a bounded history,
calls listeners (the widget) with each sample, and stops cleanly (``stop()`` joins the thread and shuts
the library down). Every sample says which source produced it.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

SOURCES = ("amdsmi", "nvml", "psutil")
INSTALL = {"amdsmi": "pip install amdsmi (or rocmlab[amd]; it needs ROCm's libamd_smi)",
           "nvml": "pip install nvidia-ml-py (or rocmlab[nvidia])",
           "psutil": "pip install psutil"}


class MonitorUnavailable(RuntimeError):
    """No supported monitoring library works here; the message lists what was tried and the fixes."""


@dataclass(frozen=True)
class Sample:
    t: float                     # seconds since the monitor started
    util_pct: float | None       # GPU busy (GFX activity / NVML utilisation) or CPU utilisation
    mem_used_gb: float | None
    mem_total_gb: float | None
    power_w: float | None
    temp_c: float | None
    source: str


def _num(x):
    """A float from a library value, None for 'N/A' or missing."""
    if isinstance(x, dict):
        x = x.get("value")
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None   # NaN -> None


class _Source:
    name = "?"
    device = "?"

    def read(self) -> dict:
        raise NotImplementedError

    def close(self) -> None:
        pass

    @property
    def description(self) -> str:
        return f"{self.name} ({self.device})"


class AmdSmiSource(_Source):
    name = "amdsmi"

    def __init__(self, mod, index: int = 0):
        self.m = mod
        mod.amdsmi_init()
        handles = mod.amdsmi_get_processor_handles()
        if not handles:
            mod.amdsmi_shut_down()
            raise RuntimeError("amdsmi found no AMD GPU")
        if index >= len(handles):
            mod.amdsmi_shut_down()
            raise RuntimeError(f"amdsmi has {len(handles)} GPU(s); there is no GPU {index}")
        self.h = handles[index]
        try:
            self.device = mod.amdsmi_get_gpu_asic_info(self.h).get("market_name") or f"AMD GPU {index}"
        except Exception:
            self.device = f"AMD GPU {index}"

    def _try(self, fn, *args):
        try:
            return fn(self.h, *args)
        except Exception:
            return None

    def read(self) -> dict:
        m = self.m
        act = self._try(m.amdsmi_get_gpu_activity) or {}
        vram = self._try(m.amdsmi_get_gpu_vram_usage) or {}
        power = self._try(m.amdsmi_get_power_info) or {}
        watts = None
        for k in ("current_socket_power", "average_socket_power", "socket_power"):
            watts = _num(power.get(k))
            if watts is not None:
                break
        if watts is not None and watts > 1e4:     # some releases report microwatts
            watts /= 1e6
        temp = None
        tt = getattr(m, "AmdSmiTemperatureType", None)
        tm = getattr(m, "AmdSmiTemperatureMetric", None)
        if tt is not None and tm is not None:
            for sensor in ("EDGE", "HOTSPOT", "JUNCTION"):   # MI300X reports no edge sensor
                if hasattr(tt, sensor):
                    temp = _num(self._try(m.amdsmi_get_temp_metric, getattr(tt, sensor), tm.CURRENT))
                    if temp is not None and temp > 0:
                        break
        if temp is not None and temp > 1000:      # millidegrees
            temp /= 1000
        used, total = _num(vram.get("vram_used")), _num(vram.get("vram_total"))
        return {"util_pct": _num(act.get("gfx_activity")),
                "mem_used_gb": used * 2 ** 20 / 1e9 if used is not None else None,   # amdsmi reports MB
                "mem_total_gb": total * 2 ** 20 / 1e9 if total is not None else None,
                "power_w": watts, "temp_c": temp}

    def close(self):
        try:
            self.m.amdsmi_shut_down()
        except Exception:
            pass


class NvmlSource(_Source):
    name = "nvml"

    def __init__(self, mod, index: int = 0):
        self.m = mod
        mod.nvmlInit()
        count = mod.nvmlDeviceGetCount()
        if count == 0 or index >= count:
            mod.nvmlShutdown()
            raise RuntimeError(f"NVML sees {count} GPU(s); there is no GPU {index}")
        self.h = mod.nvmlDeviceGetHandleByIndex(index)
        name = mod.nvmlDeviceGetName(self.h)
        self.device = name.decode() if isinstance(name, bytes) else str(name)

    def _try(self, fn, *args):
        try:
            return fn(self.h, *args)
        except Exception:
            return None

    def read(self) -> dict:
        m = self.m
        util = self._try(m.nvmlDeviceGetUtilizationRates)
        mem = self._try(m.nvmlDeviceGetMemoryInfo)
        power = self._try(m.nvmlDeviceGetPowerUsage)             # milliwatts
        temp = self._try(m.nvmlDeviceGetTemperature, m.NVML_TEMPERATURE_GPU)
        return {"util_pct": _num(getattr(util, "gpu", None)),
                "mem_used_gb": mem.used / 1e9 if mem is not None else None,
                "mem_total_gb": mem.total / 1e9 if mem is not None else None,
                "power_w": power / 1e3 if power is not None else None,
                "temp_c": _num(temp)}

    def close(self):
        try:
            self.m.nvmlShutdown()
        except Exception:
            pass


class PsutilSource(_Source):
    name = "psutil"

    def __init__(self, mod, index: int = 0):
        self.m = mod
        mod.cpu_percent(interval=None)     # the first call primes the counter
        self.device = f"CPU, {mod.cpu_count()} logical cores, system RAM"

    def read(self) -> dict:
        m = self.m
        vm = m.virtual_memory()
        temp = None
        try:
            sensors = m.sensors_temperatures() or {}
            readings = [s.current for group in sensors.values() for s in group if s.current]
            temp = max(readings) if readings else None
        except (AttributeError, OSError):
            pass
        return {"util_pct": float(m.cpu_percent(interval=None)), "mem_used_gb": (vm.total - vm.available) / 1e9,
                "mem_total_gb": vm.total / 1e9, "power_w": None, "temp_c": temp}


_CLASSES = {"amdsmi": (AmdSmiSource, "amdsmi"), "nvml": (NvmlSource, "pynvml"), "psutil": (PsutilSource, "psutil")}


def open_source(source: str | None = None, index: int = 0, importer: Callable = importlib.import_module) -> _Source:
    """Open a monitoring source: the named one, or the first that works of amdsmi, nvml, psutil.

    Raises :class:`MonitorUnavailable` naming each library tried, why it failed, and how to install it."""
    if source is not None and source not in SOURCES:
        raise MonitorUnavailable(f"unknown monitor source {source!r}: use one of {', '.join(SOURCES)} "
                                 "(or None to pick the first that works)")
    tried = []
    for name in ([source] if source else SOURCES):
        cls, module = _CLASSES[name]
        try:
            mod = importer(module)
        except ImportError as exc:
            tried.append(f"{name}: not installed ({exc}); install it with {INSTALL[name]}")
            continue
        try:
            return cls(mod, index)
        except Exception as exc:
            tried.append(f"{name}: installed but did not start ({type(exc).__name__}: {exc})")
    what = f"the {source} monitor" if source else "a GPU or CPU monitor"
    raise MonitorUnavailable(f"cannot start {what}: no supported monitoring library works here.\n  "
                             + "\n  ".join(tried)
                             + "\nAMD GPUs need amdsmi, NVIDIA GPUs nvidia-ml-py, a CPU psutil.")


class Monitor:
    """Sample a source every ``interval_s`` seconds in a daemon thread.

    ``with Monitor() as m: ...`` starts and stops it; ``m.samples`` is the history (at most ``history``
    samples), ``m.frame()`` the same as a DataFrame, ``m.listeners`` callables given each new Sample."""

    def __init__(self, source: str | None = None, interval_s: float = 1.0, history: int = 600, index: int = 0,
                 importer: Callable = importlib.import_module, opened: _Source | None = None):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive (got {interval_s})")
        self.src = opened or open_source(source, index, importer)
        self.interval_s = interval_s
        self.samples: deque = deque(maxlen=history)
        self.listeners: list[Callable] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = time.monotonic()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def source(self) -> str:
        """Which library the samples come from, and the device: 'nvml (NVIDIA H200)'."""
        return self.src.description

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def sample(self) -> Sample:
        vals = self.src.read()
        s = Sample(time.monotonic() - self._t0, source=self.src.name, **vals)
        with self._lock:
            self.samples.append(s)
        for fn in list(self.listeners):
            try:
                fn(s)
            except Exception as exc:   # a broken listener must not kill sampling
                self.errors.append(f"listener {getattr(fn, '__name__', fn)}: {type(exc).__name__}: {exc}")
        return s

    def _loop(self):
        while not self._stop.is_set():
            try:
                self.sample()
            except Exception as exc:
                self.errors.append(f"{type(exc).__name__}: {exc}")
                if len(self.errors) > 20:
                    break
            self._stop.wait(self.interval_s)

    def start(self) -> Monitor:
        if self._closed:
            raise RuntimeError("this monitor was closed: make a new Monitor()")
        if not self.running:
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="rocmlab-monitor", daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Stop sampling; True when the thread has ended."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        return not self.running

    def close(self):
        self.stop()
        if not self._closed:
            self.src.close()
            self._closed = True

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close()

    def frame(self):
        import pandas as pd

        with self._lock:
            rows = [asdict(s) for s in self.samples]
        return pd.DataFrame(rows, columns=[f for f in Sample.__dataclass_fields__])
