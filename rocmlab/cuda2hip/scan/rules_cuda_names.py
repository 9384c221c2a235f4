"""Trap rules: CUDA left over after hipify, which does not exist on ROCm.

CUDA headers (``cuda-header``), CUDA runtime and driver names (``cuda-left``: ``cudaX``, ``cuX(``,
``CUDA_*``/``CUFFT_*`` enums), cuBLAS and cuDNN names (``library-left``: hipBLAS is a rename, MIOpen is
not), and rocBLAS called directly where hipBLAS keeps cuBLAS's signatures (``rocblas-direct``). Names the
project defines itself are never "left over".
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rocmlab.cuda2hip.scan.scanner import Scanner

CUDA_HEADER = re.compile(r"(?:cuda(?:_runtime(?:_api)?|_fp16|_bf16|_fp8|_texture_types|_profiler_api|_gl_interop|"
                         r"_occupancy|_device_runtime_api)?\.h|cuda/.+|cu(?:blas|fft|rand|sparse|solver|dnn)\w*\.h|"
                         r"nvrtc\.h|cooperative_groups(?:\.h|/.+)|device_launch_parameters\.h|nvToolsExt\.h|"
                         r"nvtx3/.+|sm_\d+_\w+\.h|device_functions\.h|driver_types\.h|vector_types\.h)$")
LIB_ENUM = re.compile(r"^(CUBLAS|HIPBLAS|CUFFT|HIPFFT|CURAND|HIPRAND|CUSPARSE|HIPSPARSE|CUSOLVER|HIPSOLVER|CUDNN|MIOPEN)_")


def directive_rule(s: Scanner, u, line, d, rest, active):
    """``#include`` of a CUDA header the project does not have itself."""
    if d == "include" and rest and active:
        spec = "".join(t.text for t in rest)
        inc = spec[1:-1]
        if CUDA_HEADER.match(inc) and s.resolve(spec, s.root / u.path) is None:
            s.add(u.path, line, 1, "cuda-header", "cuda-left", "error",
                  f"<{inc}> is a CUDA header: it does not exist on ROCm.",
                  "include its HIP twin (hip/hip_runtime.h, hipblas/hipblas.h, ...)", True)


def id_rules(s: Scanner, u, flat, i, a):
    """CUDA and CUDA-library names at flat[i] (``a``: its line is compiled)."""
    t = flat[i]
    tx = t.text
    n = len(flat)
    nxt = flat[i + 1].text if i + 1 < n else ""
    # libraries and CUDA names left over
    low = tx.lower()
    if re.match(r"(?:cublas|cudnn)[A-Z]", tx) or LIB_ENUM.match(tx) and tx.startswith(("CUBLAS", "CUDNN")):
        if tx not in s.own_names:
            lib = "hipBLAS" if "blas" in low else "MIOpen"
            s.add(u.path, t.line, t.col, "library-left", "library", "error",
                  f"{tx} is a {'cuBLAS' if 'blas' in low else 'cuDNN'} name: on ROCm it is {lib}"
                  + (" (not a rename: descriptors and algorithm search differ)." if lib == "MIOpen" else "."),
                  "include <hipblas/hipblas.h> and rename cublasX to hipblasX (link -lhipblas)"
                  if lib == "hipBLAS" else "port each cuDNN call to MIOpen by hand", a)
        return
    if tx.startswith("rocblas_") and nxt == "(":
        s.add(u.path, t.line, t.col, "rocblas-direct", "library", "warning",
              "hipify mapped this cuBLAS call to rocBLAS directly; rocBLAS's handle and enums differ.",
              "prefer hipBLAS (hipblasSgemm), which keeps cuBLAS's signatures.", a)
    if (re.match(r"cuda[A-Z]", tx) or (re.match(r"cu[A-Z][a-z]", tx) and nxt == "(") or
            (re.match(r"CU(?:FFT|RAND|SPARSE|SOLVER|DA)_[A-Z0-9_]+$", tx) and nxt != "(")) \
            and tx not in s.own_names:
        if i > 0 and flat[i - 1].text in (".", "->"):
            return
        s.add(u.path, t.line, t.col, "cuda-left", "cuda-left", "error",
              f"{tx} is a CUDA name hipify did not rename: it does not exist on ROCm.",
              "use its HIP equivalent (cudaX -> hipX, cuX -> hipX), see the HIP API reference.", a)
