"""The ROCm software stack (article §2.1) and versions (§2.3), as found on this machine.

:func:`layers` lists the stack from the kernel driver up to the frameworks and says, for
each layer, what this machine has. :func:`version_table` marks the installed ROCm
release in the article's version table and says which low-precision formats the
installed release and GPU support.
"""

from __future__ import annotations

import csv
import glob
import os
import re

from rocmlab import settings, targets
from rocmlab.machine.detect import Platform, Probe
from rocmlab.paths import datasets_dir

LIBRARIES = ("amdhip64", "rocblas", "hipblas", "hipblaslt", "MIOpen", "rccl", "hipfft", "hipsparselt", "roctracer")


def _lib_dirs(plat: Platform, probe: Probe) -> list[str]:
    dirs = [str(probe.path(probe.env.get("ROCM_PATH", "/opt/rocm")) / "lib"),
            str(probe.path("/usr/lib/x86_64-linux-gnu"))]
    try:
        import torch

        dirs.append(os.path.join(os.path.dirname(torch.__file__), "lib"))   # ROCm wheels bundle their libraries
    except Exception:
        pass
    return dirs


def find_libraries(plat: Platform, probe: Probe | None = None) -> dict[str, str | None]:
    probe = probe or Probe()
    found = {}
    for name in LIBRARIES:
        hits = []
        for d in _lib_dirs(plat, probe):
            hits += glob.glob(os.path.join(d, f"lib{name}.so*"))
        found[name] = sorted(hits)[0] if hits else None
    return found


def layers(plat: Platform, probe: Probe | None = None, compiler: str | None = None) -> list[list[str]]:
    """Rows of (layer, what it is, found on this machine). ``compiler``: the compiler that compiles HIP here, as
    the compiler driver chose it (Lab 01 passes it: rocmlab.hip decides, which this room does not import); without
    it, the compilers on PATH."""
    probe = probe or Probe()
    libs = find_libraries(plat, probe)
    have = [n for n, p in libs.items() if p and n != "amdhip64"]
    compilers = [compiler] if compiler else [t for t in ("hipcc", "amdclang++", "clang++-19", "clang++-15", "nvcc")
                                            if plat.tools.get(t)]
    return [
        ["Driver", "amdgpu kernel driver + KFD (/dev/kfd): device init, power, memory",
         f"{plat.driver or 'no amdgpu driver'}; /dev/kfd {'present' if plat.kfd else 'absent'}"],
        ["Runtime", "HIP (libamdhip64) on ROCr/HSA: the CUDA-like runtime API",
         libs["amdhip64"] or "libamdhip64 not found"],
        ["Compiler", "LLVM/Clang (amdclang++, hipcc): HIP, OpenMP, OpenCL",
         ", ".join(compilers) or "no compiler found"],
        ["Libraries", "rocBLAS/hipBLAS, hipBLASLt, MIOpen, RCCL, hipFFT, hipSPARSELt",
         ", ".join(have) or "none found"],
        ["Frameworks", "PyTorch, TensorFlow, JAX (ROCm builds), vLLM, SGLang",
         f"torch {plat.torch.version or 'not installed'} ({plat.torch.build})"],
    ]


def _version_key(v: str) -> tuple[int, int]:
    m = re.match(r"(\d+)\.?(\d+)?", v)
    return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)


def installed_release(plat: Platform) -> str | None:
    """The ROCm release in use: the install's version, else the one torch was built for."""
    return plat.rocm_version or plat.torch.hip


def _row_matches(row_version: str, installed: str) -> bool:
    major, minor = _version_key(installed)
    rv = row_version.replace("x", "")
    if "-" in rv:                       # "6.1-6.2"
        lo, hi = rv.split("-")
        return _version_key(lo) <= (major, minor) <= _version_key(hi)
    rmajor, rminor = _version_key(rv)
    if row_version.endswith(".x"):
        return major == rmajor
    return (major, minor) == (rmajor, rminor)


def version_table(plat: Platform) -> list[list[str]]:
    """The article's version table (§2.3), with an 'installed here' column."""
    installed = installed_release(plat)
    rows = []
    with open(datasets_dir() / "rocm_versions.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            mark = "◀ installed" if installed and _row_matches(r["version"], installed) else ""
            rows.append([r["version"], r["released"], r["gpus"], r["key_features"], r["fp8"], r["fp6_fp4"], mark])
    return rows


def low_precision_support(plat: Platform) -> str:
    """Which of FP8 / FP6 / FP4 the installed release and this GPU support, in one sentence."""
    installed = installed_release(plat)
    target = plat.device.target if plat.device else ""
    if plat.backend != "rocm":
        return (f"no AMD GPU here (backend {plat.backend}): on MI300X (gfx942) ROCm 6.0+ runs FP8; "
                "FP6/FP4 need ROCm 7.0 and MI350-series (gfx950) hardware")
    v = _version_key(installed or "0")
    fp8 = settings.FP8_FORMATS.get(target) is not None and v >= (6, 0)
    record = targets.find(target)
    fp4 = bool(record and record.fp6_fp4) and v >= (7, 0)
    return (f"ROCm {installed} on {target}: FP8 {'yes' if fp8 else 'no'}; FP6/FP4 {'yes' if fp4 else 'no'}"
            + ("" if fp4 else " (FP6/FP4 need ROCm 7.0 on gfx950)"))
