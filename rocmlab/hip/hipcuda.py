"""HIP -> CUDA source translation, so HIP cells run on an NVIDIA GPU through nvcc.

Debian's HIP headers for NVIDIA do not compile against CUDA 13 (DESIGN.md), so instead of
``#include <hip/hip_runtime.h>`` on NVIDIA we rewrite the HIP source into CUDA:

1. names: the inverse of ``torch.utils.hipify``'s CUDA->HIP tables (``cuda_to_hip_mappings``).
   Only entries whose HIP name starts with ``hip``/``HIP`` are inverted (the tables also map
   e.g. ``nvtxRangeId_t`` to ``int``). Where several CUDA names map to one HIP name, the
   runtime-API ``cuda*`` spelling wins over the driver-API ``CU*``/``cu*`` one.
2. HIP-only constructs, by explicit rules (:data:`HIP_ONLY`): ``hipLaunchKernelGGL(k, g, b, shm,
   s, args...)`` -> ``k<<<g, b, shm, s>>>(args...)``; the mask-less ``__shfl*``/``__ballot``/
   ``__any``/``__all`` -> their ``_sync`` forms with a full 32-lane mask; ``hipThreadIdx_x`` and
   friends; ``HIP_DYNAMIC_SHARED``; headers.
3. Every HIP name the translation does not know is reported in ``unknown_names``: nothing HIP is
   passed through silently. A name the source ``#define``s itself (a ``HIP_CHECK`` macro) is the source's own,
   not the runtime's: it is left alone and not reported.

Line numbers are preserved (a translated line N is the HIP line N), so nvcc's diagnostics
point at the learner's own lines. :func:`hipify` is the forward direction (CUDA -> HIP) for
CUDA sources built for AMD targets; the porting lab uses torch's own hipify for teaching.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache

VERSION = 6   # part of the build cache key: bump when the translation changes
FULL_MASK = "0xffffffffu"

_IDENT = re.compile(r"[A-Za-z_]\w*")
# #include lines (rewritten on their own), comments, string and character literals: never translated
_OPAQUE = re.compile(r'^[ \t]*#[ \t]*include[^\n]*|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                     re.DOTALL | re.MULTILINE)
_INCLUDE = re.compile(r'^(\s*#\s*include\s*)([<"])([^>"]+)([>"])', re.MULTILINE)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)

HIP_HEADERS = {
    "hip/hip_runtime.h": "cuda_runtime.h",
    "hip/hip_runtime_api.h": "cuda_runtime_api.h",
    "hip/hip_fp16.h": "cuda_fp16.h",
    "hip/hip_bf16.h": "cuda_bf16.h",
    "hip/hip_bfloat16.h": "cuda_bf16.h",
    "hip/hip_complex.h": "cuComplex.h",
    "hip/hip_vector_types.h": "vector_types.h",
    "hip/hip_cooperative_groups.h": "cooperative_groups.h",
    "hip/device_functions.h": "device_functions.h",
    "hip/math_functions.h": "math_functions.h",
    # hipBLAS mirrors cuBLAS's v2 (handle) API, not the legacy cublas.h the inverted tables give.
    "hipblas/hipblas.h": "cublas_v2.h",
    "hipblas.h": "cublas_v2.h",
    # every library header the forward port (rocmlab port, torch's hipify, hipify-perl) writes, back to CUDA's
    "hipblaslt/hipblaslt.h": "cublasLt.h",
    "hiprand/hiprand.h": "curand.h",
    "hiprand.h": "curand.h",
    "hiprand/hiprand_kernel.h": "curand_kernel.h",
    "hiprand_kernel.h": "curand_kernel.h",
    "hipfft/hipfft.h": "cufft.h",
    "hipfft.h": "cufft.h",
    "hipfft/hipfftXt.h": "cufftXt.h",
    "hipsparse/hipsparse.h": "cusparse.h",
    "hipsparse.h": "cusparse.h",
    "hipsolver/hipsolver.h": "cusolverDn.h",       # the port maps cusolverDn.h (and cusolver_common.h) here
    "hipsolver.h": "cusolverDn.h",
    "hipcub/hipcub.hpp": "cub/cub.cuh",
    "hipcub/hipcub.h": "cub/cub.cuh",
}
#: Library names the inverted tables do not hold (the port writes them from CUDA's by prefix: CUSOLVER_STATUS_SUCCESS
#: -> HIPSOLVER_STATUS_SUCCESS): back by the same prefix.
_LIBRARY_PREFIX = re.compile(r"^(?:(hip)(solver|blas|rand|fft|sparse)([A-Z]\w*)|(HIP)(SOLVER|BLAS|RAND|FFT|SPARSE)(_\w+))$")

# HIP-only names with a direct CUDA spelling (not in torch's tables, which go CUDA -> HIP).
HIP_ONLY = {
    **{f"hip{a}_{d}": f"{b}.{d}" for a, b in (("ThreadIdx", "threadIdx"), ("BlockIdx", "blockIdx"),
                                             ("BlockDim", "blockDim"), ("GridDim", "gridDim"))
       for d in "xyz"},
    "__HIP_DEVICE_COMPILE__": "__CUDA_ARCH__",
    "__HIPCC__": "__CUDACC__",
    "__HIP_PLATFORM_NVIDIA__": "__CUDACC__",
    "__HIP_PLATFORM_NVCC__": "__CUDACC__",
    "HIP_KERNEL_NAME": "",          # unwrapped by the launch rule
    "HIP_SYMBOL": "",               # HIP_SYMBOL(sym) -> (sym): CUDA's *Symbol calls take the symbol itself
    "hipKernelNodeParams": "cudaKernelNodeParams",   # not in torch's tables
    # HIP's header guards, which a port tests where CUDA code tested CUDA's (rocmlab port's MACRO_FIXES)
    "HIP_INCLUDE_HIP_HIP_RUNTIME_H": "__CUDA_RUNTIME_H__",
    "HIP_INCLUDE_HIP_HIP_RUNTIME_API_H": "__CUDA_RUNTIME_API_H__",
    "HIP_INCLUDE_HIP_DRIVER_TYPES_H": "__DRIVER_TYPES_H__",
    "HIP_INCLUDE_HIP_HIP_FP16_H": "__CUDA_FP16_H__",
    "unsafeAtomicAdd": "atomicAdd",  # the hardware float atomic on AMD; atomicAdd is one already on NVIDIA
    "safeAtomicAdd": "atomicAdd",
    "hipcub": "cub",                 # hipCUB's namespace (hipcub::DeviceReduce) is CUB's
}
# Mask-less warp functions: CUDA removed them (CUDA 9+ needs the _sync forms with a mask).
MASKLESS = {"__shfl": "__shfl_sync", "__shfl_up": "__shfl_up_sync", "__shfl_down": "__shfl_down_sync",
            "__shfl_xor": "__shfl_xor_sync", "__ballot": "__ballot_sync", "__any": "__any_sync",
            "__all": "__all_sync"}
# HIP names that keep their meaning untranslated under nvcc (undefined there, as on NVIDIA).
PASSTHROUGH = {"__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__HIP__"}
# AMD-only names with no CUDA equivalent: always reported.
_AMD_ONLY = re.compile(r"^(?:__builtin_amdgcn_\w+|__AMDGCN_\w+|__lane_id|__amdgcn\w*|__ockl_\w+|__ocml_\w+)$")
_HIPISH = re.compile(r"^(?:hip|HIP|__hip|__HIP)")


@dataclass(frozen=True)
class Translation:
    cuda_source: str
    unknown_names: list[str]                 # HIP names left untranslated (first occurrence order)
    notes: list[str] = field(default_factory=list)    # behaviour that differs on NVIDIA
    replaced: dict[str, str] = field(default_factory=dict)   # HIP name -> CUDA name actually used

    @property
    def ok(self) -> bool:
        return not self.unknown_names

    def explain(self) -> str:
        if self.ok:
            return f"translated {len(self.replaced)} HIP names to CUDA"
        return ("HIP names with no CUDA translation: " + ", ".join(self.unknown_names) +
                ". Rewrite them with portable HIP (or guard AMD-only code with #ifdef __HIP_PLATFORM_AMD__)")


def _load_tables():
    """torch's CUDA->HIP tables, without importing torch itself (the module is plain Python)."""
    spec = importlib.util.find_spec("torch")
    if spec and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], "utils", "hipify", "cuda_to_hip_mappings.py")
        try:
            s = importlib.util.spec_from_file_location("_rocmlab_cuda_to_hip", path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
            return mod.CUDA_TO_HIP_MAPPINGS
        except Exception:   # older torch: tuples and a relative import; import it properly
            pass
    try:
        return importlib.import_module("torch.utils.hipify.cuda_to_hip_mappings").CUDA_TO_HIP_MAPPINGS
    except Exception as exc:  # pragma: no cover - torch is a dependency
        raise RuntimeError("the HIP<->CUDA tables come from torch.utils.hipify, which did not import "
                           f"({exc}); fix: pip install torch (any build)") from exc


def _hip_name(v) -> str:
    return v[0] if isinstance(v, tuple) else v


def _rank(cuda_name: str) -> int:
    if cuda_name.startswith("cuda"):
        return 0                     # runtime API: cudaMalloc
    if cuda_name.startswith(("CU", "cu")):
        return 2                     # driver API: cuMemAlloc, CUDA_ERROR_*
    return 1


@lru_cache(maxsize=1)
def tables() -> tuple[dict[str, str], dict[str, str], dict[str, str], dict[str, str]]:
    """(hip->cuda names, hip->cuda headers, cuda->hip names, cuda->hip headers)."""
    inv: dict[str, tuple[int, str]] = {}
    inv_h: dict[str, str] = {}
    fwd: dict[str, str] = {}
    fwd_h: dict[str, str] = {}
    header = re.compile(r"^[\w/.]+\.(?:h|cuh|hpp)$")
    for table in _load_tables():
        for cuda, v in table.items():
            hip = _hip_name(v)
            if not isinstance(hip, str):
                continue
            if _IDENT.fullmatch(cuda) and _IDENT.fullmatch(hip):
                fwd.setdefault(cuda, hip)
                if hip.startswith(("hip", "HIP")):
                    r = _rank(cuda)
                    if hip not in inv or r < inv[hip][0]:
                        inv[hip] = (r, cuda)
            elif header.match(cuda) and header.match(hip):
                fwd_h.setdefault(cuda, hip)
                if hip.startswith("hip") and hip not in inv_h:
                    inv_h[hip] = cuda
    inv_h.update(HIP_HEADERS)
    return {k: v for k, (_, v) in inv.items()}, inv_h, fwd, fwd_h


def _segments(text: str):
    """(is_code, piece) pieces: comments and literals are not code."""
    pos = 0
    for m in _OPAQUE.finditer(text):
        if m.start() > pos:
            yield True, text[pos:m.start()]
        yield False, m.group(0)
        pos = m.end()
    if pos < len(text):
        yield True, text[pos:]


def _split_call(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """Top-level comma-separated arguments of the call whose '(' is at ``open_paren``."""
    depth, args, start, i = 0, [], open_paren + 1, open_paren
    while i < len(text):
        c = text[i]
        if c in "\"'":
            m = _OPAQUE.match(text, i)
            i = m.end() if m else i + 1
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return None


def _rewrite_launches(text: str, notes: list[str]) -> str:
    out, pos = [], 0
    for m in re.finditer(r"\bhipLaunchKernelGGL\s*\(", text):
        if m.start() < pos:
            continue
        split = _split_call(text, m.end() - 1)
        if split is None or len(split[0]) < 5:
            notes.append("hipLaunchKernelGGL needs (kernel, grid, block, shared bytes, stream, args...)")
            continue
        args, close = split
        kern = args[0].strip()
        km = re.fullmatch(r"HIP_KERNEL_NAME\s*\((.*)\)", kern, re.DOTALL)
        if km:
            kern = km.group(1).strip()
        lead = args[0][: len(args[0]) - len(args[0].lstrip())]
        out.append(text[pos:m.start()])
        out.append(f"{lead}{kern}<<<{','.join(args[1:5])}>>>({','.join(args[5:])})")
        pos = close + 1
    out.append(text[pos:])
    return "".join(out)


def _rewrite_includes(text: str, headers: dict[str, str], unknown: list[str], hip_side: bool) -> str:
    def sub(m):
        name = m.group(3)
        if name in headers:
            return f"{m.group(1)}{m.group(2)}{headers[name]}{m.group(4)}"
        if hip_side and name.startswith("hip/") and name not in unknown:
            unknown.append(name)
        return m.group(0)

    return _INCLUDE.sub(sub, text)


def translate(hip_source: str) -> Translation:
    """HIP source -> CUDA source for nvcc. Lines keep their numbers."""
    inv, inv_h, _, _ = tables()
    unknown: list[str] = []
    notes: list[str] = []
    replaced: dict[str, str] = {}
    own = set(_DEFINE.findall(hip_source))      # the source's own macros (HIP_CHECK): not runtime names
    text = _rewrite_includes(hip_source, inv_h, unknown, hip_side=True)
    text = _rewrite_launches(text, notes)
    if "hipLaunchKernelGGL" in hip_source:
        replaced["hipLaunchKernelGGL"] = "<<<...>>>"

    def name(m: re.Match, piece: str) -> str:
        w = m.group(0)
        if w in MASKLESS:
            rest = piece[m.end():]
            if re.match(r"\s*\(", rest):
                replaced[w] = MASKLESS[w]
                return f"{MASKLESS[w]}({FULL_MASK}, " + "\x00"   # the "(" that follows is dropped below
            return w
        if w in HIP_ONLY:
            replaced[w] = HIP_ONLY[w]
            return HIP_ONLY[w]
        if w in inv:
            replaced[w] = inv[w]
            return inv[w]
        if w in PASSTHROUGH or w in own:
            return w
        lib = _LIBRARY_PREFIX.match(w)
        if lib:
            cuda = "cu" + lib.group(2) + lib.group(3) if lib.group(1) else "CU" + lib.group(5) + lib.group(6)
            replaced[w] = cuda
            return cuda
        if (_HIPISH.match(w) or _AMD_ONLY.match(w)) and w not in unknown:
            unknown.append(w)
        return w

    parts = []
    for is_code, piece in _segments(text):
        if is_code:
            piece = _IDENT.sub(lambda m, p=piece: name(m, p), piece)
            piece = re.sub(r"\x00(\s*)\(", lambda m: "\n" * m.group(1).count("\n"), piece)
        parts.append(piece)
    out = "".join(parts)
    if any(w in replaced for w in ("__ballot", "__any", "__all")):
        notes.append("__ballot returns a 64-bit mask on AMD (wavefront 64) but a 32-bit one on NVIDIA (warp 32)")
    if any(w in replaced for w in ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor")):
        notes.append(f"mask-less shuffles became _sync forms with the full warp mask {FULL_MASK}")
    if "warpSize" in hip_source:
        notes.append("warpSize is 32 on NVIDIA and 64 on MI300X: results that depend on it differ")
    assert out.count("\n") == hip_source.count("\n"), "translation must keep line numbers"
    return Translation(out, unknown, notes, replaced)


def hipify(cuda_source: str) -> Translation:
    """CUDA source -> HIP (the forward tables), for CUDA cells built for AMD targets.

    ``<<<>>>`` launches stay (hip-clang accepts them). ``unknown_names`` lists ``cuda*`` names
    the tables do not know.
    """
    _, _, fwd, fwd_h = tables()
    unknown: list[str] = []
    replaced: dict[str, str] = {}
    own = set(_DEFINE.findall(cuda_source))     # the source's own macros (CUDA_CHECK): not runtime names
    text = _rewrite_includes(cuda_source, fwd_h, unknown, hip_side=False)

    def name(m: re.Match) -> str:
        w = m.group(0)
        if w in fwd:
            replaced[w] = fwd[w]
            return fwd[w]
        if re.match(r"^(?:cuda|CUDA_|cu[A-Z])", w) and w not in unknown and w not in own:
            unknown.append(w)
        return w

    out = "".join(_IDENT.sub(name, p) if c else p for c, p in _segments(text))
    notes = []
    if re.search(r"__shfl\w*_sync|__ballot_sync", cuda_source):
        notes.append("_sync warp functions take a 64-bit mask on AMD, and are missing before ROCm 6.2")
    if re.search(r"\b(?:16|32|31|0x1f)\b", cuda_source) and re.search(r"__shfl|lane|warp", cuda_source):
        notes.append("literal 16/32 lane counts assume a 32-wide warp; MI300X wavefronts are 64 wide")
    return Translation(out, unknown, notes, replaced)
