"""Where the BLAS an exercise links against lives, per toolchain: hipBLAS for AMD, cuBLAS for NVIDIA.

hipBLAS comes from a ROCm install (/opt/rocm) when there is one, else from the offline ROCm 7.2.4
root (``scripts/setup/20-rocm-root.sh`` unpacks hipBLAS 7.2.4's headers and ``libhipblas.so`` there,
not rocBLAS's GPU kernels: the program links but runs only on a ROCm install). Inside that root
the compiler finds them at their system paths, so only ``-lhipblas`` is added. cuBLAS comes from
the CUDA toolkit or the ``nvidia-cublas`` wheel.
"""

from __future__ import annotations

import os
from pathlib import Path

from rocmlab import settings
from rocmlab.paths import rocm_root

HIPBLAS_FIX = ("build the offline ROCm root (rocmlab setup rocm-root: it holds hipBLAS 7.2.4), "
               "or install ROCm's hipblas")
CUBLAS_FIX = "install the CUDA toolkit's cuBLAS (libcublas-dev) or pip install nvidia-cublas"


def hipblas_root() -> Path | None:
    """The host folder holding include/hipblas/hipblas.h, or None (see :func:`offline_hipblas`)."""
    for root in (Path(settings.env("ROCMLAB_HIPBLAS", "/nonexistent")), Path("/opt/rocm")):
        if (root / "include" / "hipblas" / "hipblas.h").is_file():
            return root
    return None


def offline_hipblas() -> bool:
    """True when the offline ROCm root has hipBLAS (header and the library to link)."""
    root = rocm_root() / "usr"
    return (root / "include/hipblas/hipblas.h").is_file() and any((root / "lib/x86_64-linux-gnu").glob("libhipblas.so*"))


def cublas_dirs() -> tuple[Path, Path] | None:
    """(include, lib) of cuBLAS: $ROCMLAB_CUBLAS, the CUDA toolkit, or an nvidia-cublas wheel
    (nvidia/cu13/ in CUDA 13 wheels, nvidia/cublas/ in older ones)."""
    cands = []
    if settings.env("ROCMLAB_CUBLAS"):
        base = Path(settings.env("ROCMLAB_CUBLAS"))
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
            if root is None and offline_hipblas():
                # inside the ROCm root: system paths; rocBLAS (which libhipblas needs at run time) is not there
                out += ["-lhipblas", "-Wl,--allow-shlib-undefined"]
                continue
            if root is None:
                return (), "hipBLAS headers (hipblas/hipblas.h) not found: " + HIPBLAS_FIX
            libdir = root / ("lib" if (root / "lib" / "libhipblas.so").exists() else "lib/x86_64-linux-gnu")
            out += ["-I", str(root / "include"), "-L", str(libdir), "-lhipblas",
                    "-Wl,--allow-shlib-undefined", f"-Wl,-rpath,{libdir}"]
    return tuple(out), ""
