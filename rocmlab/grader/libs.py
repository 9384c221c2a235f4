"""Where the BLAS an exercise links against lives, per toolchain: hipBLAS for AMD, cuBLAS for NVIDIA.

hipBLAS is not in Debian 12: ``scripts/setup/25-hipblas.sh`` unpacks trixie's hipBLAS 5.5 headers and
library (not rocBLAS: the program links but cannot run without ROCm). A ROCm install's
/opt/rocm is used when present. cuBLAS comes from the CUDA toolkit or the ``nvidia-cublas`` wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocmlab.paths import cache_dir

HIPBLAS_FIX = "run bash scripts/setup/25-hipblas.sh (unpacks hipBLAS 5.5 from Debian trixie), or install ROCm's hipblas"
CUBLAS_FIX = "install the CUDA toolkit's cuBLAS (libcublas-dev) or pip install nvidia-cublas"


def hipblas_root() -> Path | None:
    for root in (Path(os.environ.get("ROCMLAB_HIPBLAS", "/nonexistent")), Path("/opt/rocm"),
                 cache_dir() / "hipblas-5.5" / "usr", Path("/usr")):
        if (root / "include" / "hipblas" / "hipblas.h").is_file():
            return root
    return None


def cublas_dirs() -> tuple[Path, Path] | None:
    """(include, lib) of cuBLAS: $ROCMLAB_CUBLAS, the CUDA toolkit, or an nvidia-cublas wheel
    (nvidia/cu13/ in CUDA 13 wheels, nvidia/cublas/ in older ones)."""
    cands = []
    if os.environ.get("ROCMLAB_CUBLAS"):
        base = Path(os.environ["ROCMLAB_CUBLAS"])
        cands.append((base / "include", base / "lib"))
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home:
            cands += [(Path(home) / "include", Path(home) / "lib64"),
                      (Path(home) / "targets" / "x86_64-linux" / "include", Path(home) / "targets" / "x86_64-linux" / "lib")]
    try:
        import nvidia  # namespace package of the CUDA wheels torch depends on

        for root in map(Path, nvidia.__path__):
            for inc in sorted(root.glob("*/include/cublas_v2.h")):
                cands.append((inc.parent, inc.parent.parent / "lib"))
    except Exception:
        pass
    for inc, lib in cands:
        if (inc / "cublas_v2.h").is_file() and (any(lib.glob("libcublas.so*")) if lib.is_dir() else False):
            return inc, lib
    return None


def flags(libraries, nvidia: bool) -> tuple[tuple[str, ...], str]:
    """(extra compiler flags, '' or the fix when a library is missing)."""
    out: list[str] = []
    for lib in libraries:
        if lib != "blas":
            return (), f"unknown library {lib!r} in the exercise spec"
        if nvidia:
            dirs = cublas_dirs()
            if dirs is None:
                return (), "cuBLAS headers (cublas_v2.h) not found: " + CUBLAS_FIX
            lib = dirs[1]
            if (lib / "libcublas.so").exists():
                link = ["-L", str(lib), "-lcublas"]
            else:   # the pip wheel ships only libcublas.so.N: link the file itself
                versioned = sorted(lib.glob("libcublas.so.*"))
                if not versioned:
                    return (), f"no libcublas.so in {lib}: " + CUBLAS_FIX
                link = ["-L", str(lib), "-Xlinker", f"-l:{versioned[0].name}"]
            out += ["-I", str(dirs[0]), *link, "-Xlinker", f"-rpath,{lib}",
                    "-Xlinker", f"-rpath-link,{lib}"]
        else:
            root = hipblas_root()
            if root is None:
                return (), "hipBLAS headers (hipblas/hipblas.h) not found: " + HIPBLAS_FIX
            libdir = root / ("lib" if (root / "lib" / "libhipblas.so").exists() else "lib/x86_64-linux-gnu")
            out += ["-I", str(root / "include"), "-L", str(libdir), "-lhipblas",
                    "-Wl,--allow-shlib-undefined", f"-Wl,-rpath,{libdir}"]
    return tuple(out), ""
