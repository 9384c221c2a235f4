"""Find the HIP compilers on this machine.

Three kinds, in the order labs prefer them:

- ``rocm``: hipcc / amdclang++ from a ROCm install: compile and run on an AMD GPU.
- ``offline``: Debian's clang-19 + lld-19 with the HIP 5.2 headers and runtime library
  (``apt-get install clang-19 lld-19 hipcc libamdhip64-dev rocm-device-libs``) and the
  gfx942 device bitcode unpacked from trixie's rocm-device-libs-17
  (``scripts/setup/20-gfx942-bitcode.sh``): compile and link for MI300X without a GPU.
  The fallback, clang-15 with bookworm's bitcode, reaches gfx90a and gfx940 only
  (gfx940 is the pre-production CDNA3 ID, not MI300X's gfx942): it is labelled so.
- ``cuda``: nvcc, for CUDA sources and for HIP sources through the HIP->CUDA path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rocmlab.platform import Probe

# AMD Instinct targets the course teaches; clang knows many more.
INSTINCT_TARGETS = ("gfx942", "gfx90a", "gfx940")
_ISA_FILE = {"gfx942": "oclc_isa_version_942.bc", "gfx90a": "oclc_isa_version_90a.bc",
             "gfx940": "oclc_isa_version_940.bc"}
# Targets each clang major version knows (clang-15 predates gfx942's final ID).
_CLANG_TARGETS = {19: ("gfx942", "gfx90a", "gfx940"), 15: ("gfx90a", "gfx940")}


@dataclass(frozen=True)
class OfflineToolchain:
    clang: str               # clang++ driver
    clang_major: int
    bitcode_dir: str         # --rocm-device-lib-path
    rocm_path: str           # --rocm-path (holds include/hip)
    targets: tuple[str, ...]

    def describe(self) -> str:
        labels = [t + (" (pre-production CDNA3 ID, not MI300X)" if t == "gfx940" else "") for t in self.targets]
        return f"clang-{self.clang_major} at {self.clang}, targets {', '.join(labels)}; bitcode {self.bitcode_dir}"

    def compile_command(self, source: str, output: str, target: str = "gfx942", flags: tuple[str, ...] = ()) -> list[str]:
        if target not in self.targets:
            raise ValueError(f"target {target} is not available offline here (have {', '.join(self.targets)}); "
                             "run scripts/setup/20-gfx942-bitcode.sh for gfx942")
        return [self.clang, "-x", "hip", f"--offload-arch={target}", f"--rocm-path={self.rocm_path}",
                f"--rocm-device-lib-path={self.bitcode_dir}", *flags, source, "-o", output]


def _bitcode_candidates(probe: Probe) -> list[Path]:
    home = probe.env.get("ROCMLAB_HOME") or os.path.join(probe.env.get("HOME", os.path.expanduser("~")),
                                                         ".cache", "rocmlab")
    dirs = []
    if probe.env.get("ROCMLAB_DEVICE_LIBS"):
        dirs.append(Path(probe.env["ROCMLAB_DEVICE_LIBS"]))
    dirs += [Path(home) / "device-libs-17/usr/lib/llvm-17/lib/clang/17/amdgcn/bitcode",
             probe.path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"),
             probe.path("/usr/lib/aarch64-linux-gnu/amdgcn/bitcode")]
    return dirs


def discover_offline(probe: Probe | None = None) -> OfflineToolchain | None:
    """The best offline AMD toolchain here, or None. Prefers clang-19 with gfx942 bitcode."""
    probe = probe or Probe()
    if not probe.path("/usr/include/hip/hip_runtime.h").is_file():
        return None
    best = None
    for major in (19, 15):
        clang = probe.find(f"clang++-{major}")
        if not clang:
            continue
        for bc in _bitcode_candidates(probe):
            targets = tuple(t for t in _CLANG_TARGETS[major] if (bc / _ISA_FILE[t]).is_file())
            if targets and (best is None or len(targets) > len(best.targets)):
                best = OfflineToolchain(clang, major, str(bc), str(probe.path("/usr")), targets)
        if best and "gfx942" in best.targets:
            return best
    return best


def clang_version(clang: str) -> str | None:
    from rocmlab.platform import _run_command

    out = _run_command([clang, "--version"])
    m = re.search(r"version (\S+)", out or "")
    return m.group(1) if m else None


# --- every toolchain, as one descriptor -------------------------------------------------

OFFLINE_APT = "apt-get install -y clang-19 lld-19 hipcc libamdhip64-dev rocm-device-libs"
NO_TOOLCHAIN_FIX = {
    "rocm": "install ROCm (hipcc lives in /opt/rocm/bin: add it to PATH), or use a rocm/pytorch image",
    "offline": f"run ./go setup, or by hand: {OFFLINE_APT} && bash scripts/setup/20-gfx942-bitcode.sh",
    "nvcc": "install the CUDA toolkit (nvcc) or add /usr/local/cuda/bin to PATH",
}


@dataclass(frozen=True)
class Toolchain:
    """A compiler rocmlab can drive: ``kind`` is ``rocm`` (hipcc), ``offline`` (clang, AMD targets,
    no GPU) or ``nvcc`` (NVIDIA targets)."""

    kind: str
    compiler: str
    version: str
    targets: tuple[str, ...]          # AMD targets it can build; ("sm_*",) for nvcc
    offline: OfflineToolchain | None = None
    extra_path: str | None = None     # a folder prepended to PATH (offline: clang-offload-bundler)

    @property
    def label(self) -> str:
        name = Path(self.compiler).name
        where = {"rocm": "ROCm", "offline": "offline, Debian", "nvcc": "CUDA"}[self.kind]
        return f"{name} {self.version} ({where})"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.extra_path:
            env["PATH"] = self.extra_path + os.pathsep + env.get("PATH", "")
        return env

    def supports(self, target: str) -> bool:
        if self.kind == "nvcc":
            return target.startswith(("sm_", "compute_"))
        return target in self.targets


def _bundler_dir(clang: str, probe: Probe) -> str | None:
    """clang needs ``clang-offload-bundler`` (package clang-tools-N) to embed device code.
    Debian's clang-19 comes without it; clang-tools-15 (pulled by hipcc) has one that works."""
    here = Path(clang).resolve().parent
    if (here / "clang-offload-bundler").exists() or probe.find("clang-offload-bundler"):
        return None
    for d in ("/usr/lib/llvm-19/bin", "/usr/lib/llvm-18/bin", "/usr/lib/llvm-17/bin", "/usr/lib/llvm-15/bin"):
        if probe.path(d + "/clang-offload-bundler").exists():
            return str(probe.path(d))
    return None


def discover(kind: str, probe: Probe | None = None) -> Toolchain | None:
    """The toolchain of one kind on this machine, or None."""
    probe = probe or Probe()
    if kind == "rocm":
        rocm = probe.env.get("ROCM_PATH") or "/opt/rocm"
        for cand in (probe.find("hipcc") if probe.path(rocm).is_dir() else None,
                     str(probe.path(rocm) / "bin" / "hipcc"), str(probe.path(rocm) / "bin" / "amdclang++")):
            if cand and Path(cand).exists() and str(Path(cand).resolve()).startswith(str(probe.path(rocm))):
                ver = _tool_version([cand, "--version"], r"(?:HIP version|clang version)[: ]+(\S+)") or "unknown"
                return Toolchain("rocm", cand, ver, INSTINCT_TARGETS + ("gfx950", "gfx908", "gfx1100"))
        return None
    if kind == "offline":
        tc = discover_offline(probe)
        if tc is None:
            return None
        return Toolchain("offline", tc.clang, clang_version(tc.clang) or str(tc.clang_major), tc.targets, tc,
                         _bundler_dir(tc.clang, probe))
    if kind == "nvcc":
        nvcc = probe.find("nvcc") or (str(probe.path("/usr/local/cuda/bin/nvcc"))
                                      if probe.path("/usr/local/cuda/bin/nvcc").exists() else None)
        if not nvcc:
            return None
        ver = _tool_version([nvcc, "--version"], r"release [\d.]+, V(\S+)") or "unknown"
        return Toolchain("nvcc", nvcc, ver, ("sm_*",))
    raise ValueError(f"unknown toolchain kind {kind!r}: use 'rocm', 'offline' or 'nvcc'")


def _tool_version(cmd: list[str], pattern: str) -> str | None:
    from rocmlab.platform import _run_command

    m = re.search(pattern, _run_command(cmd) or "")
    return m.group(1) if m else None
