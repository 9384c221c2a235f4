"""Detect once what this machine can do: the ``rocm``, ``cuda`` or ``cpu`` backend.

Every lab asks :func:`current` instead of guessing. Detection reads only what it is
given through a :class:`Probe` (a filesystem root, environment variables, a torch
module, a command runner), so tests drive the real code with fake ``/dev`` and ``/sys``
trees. Nothing here is hard-coded per machine: every fact is read or looked up in
``datasets/hardware.csv`` and says where it came from.
"""

from __future__ import annotations

import os
import platform as _pyplatform
import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmlab.machine import hardware

BACKENDS = ("rocm", "cuda", "cpu")
ENV_VARS = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES",
            "HSA_OVERRIDE_GFX_VERSION", "ROCM_PATH", "ROCMLAB_BACKEND")
TOOLS = ("hipcc", "amdclang++", "hipconfig", "rocminfo", "amd-smi", "rocm-smi", "rocprofv3", "rocprof",
         "hipify-perl", "hipify-clang", "clang++-19", "clang++-15", "nvcc", "nvidia-smi")

_UNSET = object()


def _run_command(cmd: list[str], timeout: float = 15.0) -> str | None:
    """stdout of a command, or None if it is missing, fails or hangs."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout if res.returncode == 0 else None


@dataclass
class Probe:
    """Where detection looks. The defaults read this machine."""

    root: Path = Path("/")
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    torch: Any = _UNSET                      # a torch module, None for "not installed", or _UNSET: import it
    which: Callable[[str], str | None] | None = None
    run: Callable[[list[str]], str | None] = _run_command

    def path(self, p: str) -> Path:
        return self.root / p.lstrip("/")

    def find(self, tool: str) -> str | None:
        if self.which is not None:
            return self.which(tool)
        return shutil.which(tool, path=self.env.get("PATH"))

    def load_torch(self):
        if self.torch is _UNSET:
            try:
                import torch
                self.torch = torch
            except Exception as exc:  # ImportError, or a broken build raising OSError
                self.torch = None
                self.torch_error = f"{type(exc).__name__}: {exc}"
        return self.torch


@dataclass(frozen=True)
class Device:
    index: int
    name: str
    target_id: str                # the full target: gcnArchName (gfx942:sramecc+:xnack-), sm_90, or the CPU's machine
    wavefront_size: int | None    # 64 on CDNA (MI300X), 32 on NVIDIA and RDNA
    compute_units: int | None     # CUs on AMD, SMs on NVIDIA, cores on the CPU
    memory_gib: float | None   # GiB (what vendors call '192 GB' on an MI300X)
    source: str                   # what these facts were read from
    spec: hardware.Spec | None = None

    @property
    def target(self) -> str:
        """The compile target without its features: gfx942 for ``gfx942:sramecc+:xnack-``."""
        return self.target_id.split(":")[0]


@dataclass(frozen=True)
class TorchInfo:
    version: str | None
    hip: str | None
    cuda: str | None
    gpu_available: bool
    device_count: int
    error: str | None = None

    @property
    def build(self) -> str:
        if self.version is None:
            return "not installed"
        if self.hip:
            return f"ROCm (HIP {self.hip})"
        if self.cuda:
            return f"CUDA {self.cuda}"
        return "CPU-only"


@dataclass(frozen=True)
class Platform:
    backend: str
    reason: str
    devices: tuple[Device, ...]
    torch: TorchInfo
    rocm_version: str | None
    driver: str | None
    tools: dict
    env: dict
    kfd: bool
    render_nodes: tuple[str, ...]
    wsl: bool
    kernel: str
    machine: str

    @property
    def device(self) -> Device | None:
        return self.devices[0] if self.devices else None

    @property
    def is_gpu(self) -> bool:
        return self.backend in ("rocm", "cuda")

    @property
    def device_name(self) -> str:
        """The first device's name, or "unknown device"."""
        return self.device.name if self.device else "unknown device"

    @property
    def label(self) -> str:
        """Short tag for every printed figure: ``backend: device``."""
        return f"{self.backend}: {self.device_name}"

    def summary(self) -> str:
        d = self.device
        if d is None:
            return f"backend {self.backend} (no device facts)"
        bits = [f"backend {self.backend}", d.name, d.target_id]
        if d.wavefront_size:
            bits.append(f"{'wavefront' if self.backend == 'rocm' else 'warp'} {d.wavefront_size}")
        if d.compute_units:
            unit = {"rocm": "CUs", "cuda": "SMs"}.get(self.backend, "cores")
            bits.append(f"{d.compute_units} {unit}")
        if d.memory_gib:
            bits.append(f"{d.memory_gib:.0f} GiB")
        return " · ".join(bits)

    def facts(self) -> list[tuple[str, str]]:
        """(fact, value) rows for a table: what a learner and an instructor want to see."""
        d = self.device
        rows = [("backend", f"{self.backend} ({self.reason})")]
        if d:
            rows += [
                ("device", f"{d.name} (#{d.index} of {len(self.devices)})"),
                ("target", d.target_id),
                ("wavefront / warp size", str(d.wavefront_size or "n/a")),
                ("CUs / SMs / cores", str(d.compute_units or "n/a")),
                ("memory", f"{d.memory_gib:.1f} GiB" if d.memory_gib else "n/a"),
                ("device facts from", d.source),
                ("spec row (datasets/hardware.csv)", d.spec.device if d.spec else "none (not a listed device)"),
            ]
        rows += [
            ("torch", f"{self.torch.version or 'not installed'} ({self.torch.build})"),
            ("ROCm install", self.rocm_version or "not found"),
            ("driver", self.driver or "not found"),
            ("/dev/kfd", "present" if self.kfd else "absent"),
            ("render nodes", ", ".join(self.render_nodes) or "none"),
            ("toolchains", ", ".join(sorted(k for k, v in self.tools.items() if v)) or "none found"),
            ("kernel", self.kernel + (" (WSL)" if self.wsl else "")),
        ]
        rows += [(k, v) for k, v in self.env.items()]
        return rows


# --- readers -------------------------------------------------------------------------

def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _torch_info(probe: Probe) -> TorchInfo:
    torch = probe.load_torch()
    if torch is None:
        return TorchInfo(None, None, None, False, 0, getattr(probe, "torch_error", "not installed"))
    version = getattr(torch, "__version__", None)
    vinfo = getattr(torch, "version", None)
    hip = getattr(vinfo, "hip", None)
    cuda = getattr(vinfo, "cuda", None)
    try:
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    except Exception:  # a broken driver can raise here
        available, count = False, 0
    return TorchInfo(str(version) if version else None, hip, cuda, available, count)


def _default_wavefront(target_id: str) -> int:
    # CDNA and GCN (gfx9xx) run wave64; RDNA (gfx10-12) defaults to wave32 under HIP.
    return 64 if target_id.startswith("gfx9") else 32


def _torch_devices(torch, backend: str) -> list[Device]:
    out = []
    for i in range(torch.cuda.device_count()):
        p = torch.cuda.get_device_properties(i)
        if backend == "rocm":
            target_id = getattr(p, "gcnArchName", "") or "gfx?"
            wave = getattr(p, "warp_size", None) or _default_wavefront(target_id)
        else:
            target_id = f"sm_{p.major}{p.minor}"
            wave = getattr(p, "warp_size", None) or 32
        mem = p.total_memory / 2**30
        out.append(Device(i, p.name, target_id, int(wave), int(p.multi_processor_count), mem,
                          "torch.cuda.get_device_properties", hardware.lookup(p.name, target_id, mem)))
    return out


def _gfx_from_target_version(v: int) -> str:
    # KFD writes gfx_target_version as major*10000 + minor*100 + stepping: 90402 -> gfx942.
    major, minor, step = v // 10000, (v // 100) % 100, v % 100
    return f"gfx{major}{minor:x}{step:x}"


def _kfd_devices(probe: Probe) -> list[Device]:
    """GPU nodes from the KFD topology in sysfs (what rocminfo reads), without torch."""
    nodes = probe.path("/sys/class/kfd/kfd/topology/nodes")
    out = []
    if not nodes.is_dir():
        return out
    for node in sorted(nodes.iterdir(), key=lambda p: int(p.name) if p.name.isdigit() else 1 << 30):
        props = _read(node / "properties") or ""
        kv = dict(line.split(None, 1) for line in props.splitlines() if len(line.split(None, 1)) == 2)
        target = int(kv.get("gfx_target_version", "0") or 0)
        if target == 0:          # CPU nodes have no GFX target
            continue
        target_id = _gfx_from_target_version(target)
        simds = int(kv.get("simd_count", "0"))
        per_cu = int(kv.get("simd_per_cu", "4") or 4)
        wave = int(kv.get("wave_front_size", "0")) or _default_wavefront(target_id)
        name = (_read(node / "name") or "").strip() or target_id
        mem_bytes = 0
        for bank in sorted((node / "mem_banks").glob("*/properties")):
            bkv = dict(line.split(None, 1) for line in (_read(bank) or "").splitlines() if " " in line)
            mem_bytes += int(bkv.get("size_in_bytes", "0"))
        mem = mem_bytes / 2**30 if mem_bytes else None
        out.append(Device(len(out), name, target_id, wave, simds // per_cu if simds else None, mem,
                          "KFD topology (/sys/class/kfd)", hardware.lookup(name, target_id, mem)))
    return out


def _nvidia_smi_devices(probe: Probe) -> list[Device]:
    smi = probe.find("nvidia-smi")
    text = probe.run([smi, "--query-gpu=name,memory.total,compute_cap",
                      "--format=csv,noheader,nounits"]) if smi else None
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 3:
            continue
        name, mem_mib, cap = parts[0], parts[1], parts[2]
        mem = float(mem_mib) / 1024 if mem_mib.replace(".", "").isdigit() else None
        target_id = "sm_" + cap.replace(".", "")
        out.append(Device(len(out), name, target_id, 32, None, mem, "nvidia-smi", hardware.lookup(name, target_id, mem)))
    return out


def _cpu_device(probe: Probe) -> Device:
    info = _read(probe.path("/proc/cpuinfo")) or ""
    m = re.search(r"^model name\s*:\s*(.+)$", info, re.MULTILINE)
    cores = len(re.findall(r"^processor\s*:", info, re.MULTILINE)) or os.cpu_count()
    name = m.group(1).strip() if m else (_pyplatform.processor() or "CPU")
    mem = None
    mi = re.search(r"^MemTotal:\s+(\d+) kB", _read(probe.path("/proc/meminfo")) or "", re.MULTILINE)
    if mi:
        mem = int(mi.group(1)) / 2**20
    return Device(0, name, _pyplatform.machine(), None, cores, mem, "/proc/cpuinfo", None)


def _rocm_version(probe: Probe) -> str | None:
    base = probe.env.get("ROCM_PATH") or "/opt/rocm"
    for rel in (".info/version", ".info/version-dev"):
        text = _read(probe.path(base) / rel)
        if text and text.strip():
            return text.strip()
    return None


def _driver(probe: Probe, backend: str) -> str | None:
    if backend == "rocm" or probe.path("/dev/kfd").exists():
        v = _read(probe.path("/sys/module/amdgpu/version"))
        if v and v.strip():
            return f"amdgpu {v.strip()}"
        if probe.path("/sys/module/amdgpu").exists():
            return "amdgpu (in-tree, kernel's own version)"
    text = _read(probe.path("/proc/driver/nvidia/version"))
    if text:
        m = re.search(r"Kernel Module\s+(?:for \S+\s+)?([\d.]+)", text)
        return f"nvidia {m.group(1)}" if m else "nvidia"
    return None


def detect(probe: Probe | None = None) -> Platform:
    """Detect the backend and gather facts. Use :func:`current` for the cached answer."""
    probe = probe or Probe()
    torch_info = _torch_info(probe)
    torch = probe.torch
    kfd = probe.path("/dev/kfd").exists()
    dri = probe.path("/dev/dri")
    render = tuple(sorted(p.name for p in dri.glob("renderD*"))) if dri.is_dir() else ()
    tools = {t: probe.find(t) for t in TOOLS}
    forced = probe.env.get("ROCMLAB_BACKEND", "").strip().lower()

    devices: list[Device] = []
    if forced:
        if forced not in BACKENDS:
            raise ValueError(f"ROCMLAB_BACKEND={forced!r} is not one of {', '.join(BACKENDS)}; "
                             "unset it to detect the backend")
        backend, reason = forced, "forced by ROCMLAB_BACKEND"
    elif torch_info.gpu_available and torch_info.hip:
        backend, reason = "rocm", f"torch {torch_info.version} is a ROCm build and sees the GPU"
    elif torch_info.gpu_available and torch_info.cuda:
        backend, reason = "cuda", f"torch {torch_info.version} is a CUDA build and sees the GPU"
    elif kfd and (_kfd_devices(probe) or tools.get("rocminfo")):
        backend, reason = "rocm", "/dev/kfd and an AMD GPU node are present (torch does not see it)"
    elif _nvidia_smi_devices(probe):
        backend, reason = "cuda", "nvidia-smi lists a GPU (torch does not see it)"
    else:
        backend, reason = "cpu", "no GPU visible to torch, no /dev/kfd GPU node, no nvidia-smi GPU"

    if backend in ("rocm", "cuda") and torch_info.gpu_available and not forced:
        devices = _torch_devices(torch, backend)
    elif backend == "rocm":
        devices = _kfd_devices(probe)
    elif backend == "cuda":
        devices = _nvidia_smi_devices(probe)
    if not devices:
        devices = [_cpu_device(probe)]

    osrelease = (_read(probe.path("/proc/sys/kernel/osrelease")) or _pyplatform.release()).strip()
    wsl = "microsoft" in osrelease.lower() or "WSL_DISTRO_NAME" in probe.env
    env = {k: probe.env[k] for k in ENV_VARS if k in probe.env}
    return Platform(backend, reason, tuple(devices), torch_info, _rocm_version(probe),
                    _driver(probe, backend), tools, env, kfd, render, wsl, osrelease, _pyplatform.machine())


_CURRENT: Platform | None = None


def current(refresh: bool = False) -> Platform:
    """This machine's platform, detected once per process."""
    global _CURRENT
    if _CURRENT is None or refresh:
        _CURRENT = detect()
    return _CURRENT
