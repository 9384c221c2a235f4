"""What a failed compile means: the first error of a file, its category (with what it means and
the fix), and the libraries a project needs on ROCm.

Categories are checked against the messages of ROCm 7.2's clang (and the offline HIP 5.2 headers);
:func:`categorise` reads the first error and the source line it points at.
"""

from __future__ import annotations

import re

from rocmlab.hip.compile import is_clang_error
from rocmlab.cuda2hip.scan import scan, strip_comments_and_strings

_MAIN = re.compile(r"\bint\s+main\s*\(")
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.MULTILINE)
_UNDEFINED = ("undefined reference to ", "undefined symbol ", "undefined symbol: ")


def _tool_error(log: str) -> str | None:
    """The first line of a linker or driver error (an undefined symbol, ``ld: error:``, ``clang...: error:``).
    Line by line with plain string tests: linear in the log."""
    for line in log.splitlines():
        if any(u in line for u in _UNDEFINED) or line.startswith(("ld: error: ", "ld.lld: error: ")) \
                or is_clang_error(line):
            return line
    return None


# category -> (what it means, what to do). Order of the rules in categorise() matters.
CATEGORIES = {
    "ok": ("compiled", ""),
    "missing-header": ("a header the file includes is not found",
                       "check the include paths (--include DIR) and that hipify renamed the header consistently"),
    "cuda-left": ("a CUDA name or header is left that hipify did not translate",
                  "rename it by hand to its HIP equivalent (see the HIP API reference), or include <hip/hip_runtime.h>"),
    "missing-hip-api": ("a HIP name the compiler does not know: a HIP API this ROCm release lacks, or a HIP "
                        "header included before hip/hip_runtime.h",
                        "include <hip/hip_runtime.h> first; check the HIP API reference of the ROCm release you "
                        "deploy on, or use an equivalent it has"),
    "warp-sync": ("a warp-sync builtin (__shfl_*_sync, __ballot_sync, ...) is missing or its mask is 32-bit",
                  "ROCm 6.2+ declares them with 64-bit masks: pass 0xffffffffffffffffull or __activemask(), or "
                  "use the mask-less __shfl_down/__ballot"),
    "cooperative-groups": ("a cooperative-groups feature HIP lacks (e.g. cg::reduce, labeled_partition, "
                           "memcpy_async, clusters)",
                           "write the collective with tile.shfl_down / __shfl_down over warpSize lanes, or check "
                           "newer ROCm's hip_cooperative_groups.h"),
    "texture-surface": ("texture or surface use that does not port: texture references are gone (CUDA 12, "
                        "ROCm 6), and texture-object fetches (tex*/surf*) need image instructions, which gfx90a "
                        "(MI200) has and gfx942/gfx950 (MI300/MI350) do not: there ROCm says 'The image/texture "
                        "API not supported on the device'",
                        "use texture objects for gfx90a; for gfx942/gfx950 read through plain global loads "
                        "(__ldg / const __restrict__) and do the interpolation in code"),
    "thrust-cub": ("thrust / CUB: on ROCm these are rocThrust and hipCUB, not installed here",
                   "install rocThrust and hipCUB (ROCm: apt install rocthrust-dev hipcub-dev); thrust:: code keeps "
                   "its names, cub:: becomes hipcub::"),
    "library": ("a CUDA math library (cuBLAS, cuFFT, cuRAND, cuSPARSE, cuSOLVER, cuDNN) -> its hip*/MIOpen "
                "library, not installed here",
                "install the hip* library (see the report's library table) and link it (-lhipblas, ...)"),
    "inline-ptx": ("inline PTX assembly: AMD GPUs do not run PTX",
                   "replace the asm with a HIP intrinsic (__lane_id(), __shfl*, atomics) or __builtin_amdgcn_*"),
    "driver-api": ("a CUDA driver-API call or type without a HIP equivalent here",
                   "use the HIP module API (hipModuleLoad, hipModuleLaunchKernel) or the runtime API"),
    "device-prop": ("a cudaDeviceProp field that hipDeviceProp_t lacks in this HIP version",
                    "ROCm 6.0+ added many fields; else read it with hipDeviceGetAttribute, and never assume "
                    "NVIDIA's values"),
    "host-device": ("a __host__-only function is called from device code: often a CUDA-only macro that "
                    "defined __host__ __device__ expanded to nothing",
                    "check macros guarded by __CUDACC__/__CUDA_ARCH__; mark the function __host__ __device__"),
    "offline-toolchain": ("a mismatch inside the offline toolchain, not in the port: Debian's HIP 5.2 headers call "
                          "an LLVM intrinsic that clang-19 no longer has (atomicInc/atomicDec, for example)",
                          "nothing to fix in the code: a ROCm toolchain (hipcc) compiles it; offline, check the "
                          "rest of the file by avoiding that call"),
    "dynamic-parallelism": ("a kernel launched from device code (CUDA dynamic parallelism): HIP has none",
                            "launch the child kernels from the host (one launch per level, or a loop over levels), "
                            "or turn the recursion into a loop inside one kernel"),
    "compile-error": ("another compile error", "read the message; it is C++ or a HIP difference not classified"),
    "link-undefined": ("the link found undefined symbols: a library not linked, or a file that failed to compile",
                       "fix the files that failed; link the hip* libraries the project needs"),
    "link-error": ("the link failed", "read the message"),
    "timeout": ("the compiler ran past the time limit", "compile the file alone and look for template explosions"),
    "not-linked": ("not linked: a translation unit it may need failed, or it did not compile", "fix the failures first"),
}
LIBRARIES = {
    # needle (in includes / names) -> (CUDA library, ROCm library, header, link flag, how to get it)
    "cublas": ("cuBLAS", "hipBLAS (over rocBLAS)", "hipblas/hipblas.h", "-lhipblas",
               "ROCm: apt install hipblas-dev (in rocm/pytorch images already); Debian 13: apt install libhipblas-dev"),
    "cufft": ("cuFFT", "hipFFT (over rocFFT)", "hipfft/hipfft.h", "-lhipfft",
              "ROCm: apt install hipfft-dev; Debian 13: apt install libhipfft-dev"),
    "curand": ("cuRAND", "hipRAND (over rocRAND)", "hiprand/hiprand.h", "-lhiprand",
               "ROCm: apt install hiprand-dev; Debian 13: apt install libhiprand-dev"),
    "cusparse": ("cuSPARSE", "hipSPARSE (over rocSPARSE)", "hipsparse/hipsparse.h", "-lhipsparse",
                 "ROCm: apt install hipsparse-dev; Debian 13: apt install libhipsparse-dev"),
    "cusolver": ("cuSOLVER", "hipSOLVER (over rocSOLVER)", "hipsolver/hipsolver.h", "-lhipsolver",
                 "ROCm: apt install hipsolver-dev; Debian 13: apt install libhipsolver-dev"),
    "cudnn": ("cuDNN", "MIOpen (not a rename: port each call)", "miopen/miopen.h", "-lMIOpen",
              "ROCm: apt install miopen-hip-dev"),
    "thrust": ("Thrust", "rocThrust (same thrust:: names)", "thrust/*.h", "(header-only, needs rocPRIM)",
               "ROCm: apt install rocthrust-dev; Debian 13: apt install librocthrust-dev"),
    "cub": ("CUB", "hipCUB (cub:: -> hipcub::)", "hipcub/hipcub.hpp", "(header-only, needs rocPRIM)",
            "ROCm: apt install hipcub-dev; Debian 13: apt install libhipcub-dev"),
    "nccl": ("NCCL", "RCCL (same nccl* API)", "rccl/rccl.h", "-lrccl", "ROCm: apt install rccl-dev"),
    "openmp": ("OpenMP (host threads, nvcc -Xcompiler -fopenmp)", "clang's OpenMP (libomp)", "omp.h", "-fopenmp",
               "ROCm: ships with its clang (libomp); Debian: apt install libomp-dev"),
}


def has_main(text: str) -> bool:
    return bool(_MAIN.search(strip_comments_and_strings(text)))


def libraries_needed(texts) -> list[str]:
    """Keys of LIBRARIES whose API is used in code that is compiled (texts: HIP or CUDA sources, each
    scanned as its own one-file project). A header that only mentions a library does not count."""

    found: set[str] = set()
    for i, t in enumerate(texts):
        found |= set(scan(t, filename=f"source{i}.hip").libraries)
    return [k for k in LIBRARIES if k in found]


def categorise(message: str, code_line: str = "") -> str:
    """The category of a first compile error, from its message and the source line it points at."""
    m, c = message, code_line
    if re.search(r"undefined hidden symbol: llvm\.amdgcn\.|Intrinsic has incorrect|unknown intrinsic", m):
        return "offline-toolchain"
    nf = re.search(r"'([^']+)' file not found", m)
    if nf:
        h = nf.group(1)
        if re.search(r"(?:^|/)(?:hip)?(?:blas|fft|rand|sparse|solver)|cublas|cufft|curand|cusparse|cusolver|"
                     r"cudnn|miopen|rocblas|rocfft|rocrand|nccl|rccl", h):
            return "library"
        if re.match(r"(?:thrust|cub|hipcub|rocprim|rocthrust)/", h):
            return "thrust-cub"
        if "cooperative_groups" in h:
            return "cooperative-groups"
        if re.match(r"cuda|cu[A-Z_]|nv|sm_\d", h) or h.startswith(("cuda", "helper_cuda", "cooperative")):
            return "cuda-left"
        return "missing-header"
    if re.search(r"mask must be a 64-bit|__(?:shfl(?:_up|_down|_xor)?|ballot|any|all)_sync|__activemask|__syncwarp", m):
        return "warp-sync"
    if re.search(r"\basm\b|invalid instruction|unknown token in expression|invalid (?:output|input) constraint|"
                 r"instruction not supported|invalid operand for instruction|unrecognized instruction", m) or \
            re.search(r"\basm\s*(?:volatile\s*)?\(", c):
        return "inline-ptx"
    if re.search(r"cooperative_groups|\bcg::|thread_block_tile|grid_group|coalesced_group|labeled_partition|"
                 r"memcpy_async|cluster_group", m + " " + c):
        return "cooperative-groups"
    if re.search(r"\btex(?:1D|2D|3D|1Dfetch|Cubemap)\w*|surf\dD|texture<|TextureObject|SurfaceObject|"
                 r"Bind(?:Texture|Surface)|image support|__hip_img_chk", m + " " + c):
        return "texture-surface"
    if re.search(r"\bthrust::|\bcub::|hipcub", m + " " + c):
        return "thrust-cub"
    if re.search(r"\b(?:cublas|cufft|curand|cusparse|cusolver|cudnn|hipblas|hipfft|hiprand|hipsparse|hipsolver|"
                 r"miopen|rocblas)\w*", m):
        return "library"
    if re.search(r"no member named '\w+' in '(?:struct )?hipDeviceProp", m):
        return "device-prop"
    if re.search(r"undeclared identifier '(?:cu[A-Z]\w*|CU\w+)'|unknown type name 'CU\w+'", m):
        return "driver-api"
    if re.search(r"(?:undeclared identifier|unknown type name|no member named) '(?:cuda\w+|CUDA\w+)'", m):
        return "cuda-left"
    if re.search(r"(?:undeclared identifier|unknown type name|no member named|no type named) '(?:hip|HIP)\w*'|"
                 r"no matching function for call to 'hip\w+'", m):
        return "missing-hip-api"
    if "device-side kernel call/launch is not supported" in m:
        return "dynamic-parallelism"
    if re.search(r"reference to __host__ function|__host__ function .* from .*__(?:global|device)__|"
                 r"no matching function for call to .* __host__", m):
        return "host-device"
    return "compile-error"


def first_error(log: str) -> tuple[str, str, int, str]:
    """(file, line, col text, message) of the first error, or ("", 0, "", tool error)."""
    m = _ERROR.search(log)
    if m:
        return m.group("file"), int(m.group("line")), f"{m.group('file')}:{m.group('line')}:{m.group('col')}", m.group("msg")
    lld = re.search(r"^lld: error: .*$", log, re.MULTILINE)
    if lld:
        return "", 0, "", lld.group(0).strip()
    t = _tool_error(log)
    return "", 0, "", (t.strip() if t else log.strip().splitlines()[-1] if log.strip() else "failed")


