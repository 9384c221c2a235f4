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
