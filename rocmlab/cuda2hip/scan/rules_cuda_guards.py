"""Trap rules: CUDA's preprocessor world, which HIP does not share.

``#if __CUDA_ARCH__`` (``cuda-arch-guard``: HIP never defines it, so the test goes the same way on the
device and the host, and the report says which way), ``__CUDA_ARCH__`` used in code (``cuda-arch-use``),
``#ifdef __NVCC__``/``__CUDACC__`` (``nvcc-guard``), and ``CUDA_VERSION``/``CUDART_VERSION`` tests
(``cuda-version-guard``), all judged on the code the preprocessor really reaches in each pass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

CUDA_ONLY_MACROS = ("__CUDA_ARCH__", "CUDART_VERSION", "CUDA_VERSION", "TORCH_HIP_VERSION", "__CUDA_API_VERSION",
                    "__CUDACC_VER_MAJOR__", "__CUDACC_VER_MINOR__", "__CUDA_ARCH_LIST__", "__NVCC__", "__CUDACC__")


def directive_rule(s: Scanner, u, line, d, rest, active, taken):
    """A conditional directive (``#if``, ``#ifdef``, ``#elif``...) that tests a CUDA-only macro."""
    names = [t.text for t in rest if t.kind == "id" and t.text in CUDA_ONLY_MACROS]
    if d in ("if", "ifdef", "ifndef", "elif", "elifdef", "elifndef") and names:
        name = names[0]
        if name == "__CUDA_ARCH__":
            s.add(u.path, line, 1, "cuda-arch-guard", "preprocessor", "error",
                  "__CUDA_ARCH__ is defined only by nvcc's device passes; HIP never defines it (it has "
                  f"__HIP_DEVICE_COMPILE__ and __{s.target}__), so this test is decided the same way on "
                  "the device and the host: "
                  + ("under HIP the code behind it is ALWAYS compiled, on the device too." if taken else
                     "under HIP the code behind it is NEVER compiled: it silently disappears."),
                  "decide per guard: remove it if the feature exists on the AMD target; for a device/host "
                  "split test defined(__HIP_DEVICE_COMPILE__); for an architecture choice test "
                  f"__{s.target}__.", active)
        elif name in ("__NVCC__", "__CUDACC__"):
            s.add(u.path, line, 1, "nvcc-guard", "preprocessor", "warning",
                  f"{name} is defined only by nvcc; hipcc defines __HIPCC__ instead, so under HIP this "
                  "test takes the non-CUDA branch.", "test defined(__HIPCC__) as well", active)
        else:
            s.add(u.path, line, 1, "cuda-version-guard", "preprocessor", "error",
                  f"{name} is not defined under HIP (hipify turns CUDA_VERSION into TORCH_HIP_VERSION, "
                  "which only PyTorch's own build defines), so this test silently picks a branch.",
                  "test HIP_VERSION (from <hip/hip_version.h>) or the feature itself, or drop the test.",
                  active)


def id_rule(s: Scanner, u, flat, i, a):
    """``__CUDA_ARCH__`` written in code."""
    t = flat[i]
    tx = t.text
    if tx == "__CUDA_ARCH__":
        s.add(u.path, t.line, t.col, "cuda-arch-use", "preprocessor", "error",
              "__CUDA_ARCH__ is never defined under HIP: this line does not compile there.",
              f"use __HIP_DEVICE_COMPILE__ or __{s.target}__, or remove it.", a)
