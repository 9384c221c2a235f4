"""Compile every translation unit of a port (in parallel), link where there is a main, and
name the first error of each file with a category a developer can act on.

Every compile, archive and link goes through the one compiler driver,
:mod:`rocmlab.hip.compile` (and so through the sandbox): ``rocm`` (hipcc) when there is a ROCm
install, else ``offline`` (the ROCm 7.2.4 root). Objects are built with ``-c``; the objects
without a ``main`` go into one static archive, and each file with a ``main`` is linked against
it (the linker takes only the members it needs).
"""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import settings
from rocmlab.hip import compile as driver
from rocmlab.hip.traps import strip_comments_and_strings

COMPILE_TIMEOUT_S = settings.COMPILE_TIME_LIMIT_S
_MAIN = re.compile(r"\bint\s+main\s*\(")
_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?:fatal )?error: (?P<msg>.*)$", re.MULTILINE)
_TOOL_ERROR = re.compile(r"^(?:.*undefined (?:reference to|symbol:?) .*|ld(?:\.lld)?: error: .*|\S*clang\S*: error: .*)$",
                         re.MULTILINE)

# category -> (what it means, what to do). Order of the rules in categorise() matters.
CATEGORIES = {
    "ok": ("compiled", ""),
    "missing-header": ("a header the file includes is not found",
                       "check the include paths (--include DIR) and that hipify renamed the header consistently"),
    "cuda-left": ("a CUDA name or header is left that hipify did not translate",
                  "rename it by hand to its HIP equivalent (see the HIP API reference), or include <hip/hip_runtime.h>"),
    "missing-hip-api": ("a HIP API this HIP version does not have (the offline headers are ROCm 7.2's HIP)",
                        "newer ROCm releases add many of these: check the ROCm version you deploy on, or use "
                        "an older equivalent"),
    "warp-sync": ("a warp-sync builtin (__shfl_*_sync, __ballot_sync, ...) is missing or its mask is 32-bit",
                  "ROCm 6.2+ declares them with 64-bit masks: pass 0xffffffffffffffffull or __activemask(), or "
                  "use the mask-less __shfl_down/__ballot"),
    "cooperative-groups": ("a cooperative-groups feature HIP lacks (e.g. cg::reduce, labeled_partition, "
                           "memcpy_async, clusters)",
                           "write the collective with tile.shfl_down / __shfl_down over warpSize lanes, or check "
                           "newer ROCm's hip_cooperative_groups.h"),
    "texture-surface": ("texture or surface use that does not port (texture references are gone; MI300X/MI200 "
                        "have no image hardware, so tex*/surf* fetches do not compile for gfx942/gfx90a)",
                        "read through plain global loads (__ldg / const __restrict__) instead of textures"),
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
    "offline-toolchain": ("a mismatch inside the offline toolchain, not in the port (an LLVM intrinsic the "
                          "compiler does not know)",
                          "nothing to fix in the code: check it with a ROCm install's hipcc"),
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
}
_LIB_NEEDLES = {
    "cublas": r"\b(?:cublas|hipblas)\w*", "cufft": r"\b(?:cufft|hipfft)\w*", "curand": r"\b(?:curand|hiprand)\w*",
    "cusparse": r"\b(?:cusparse|hipsparse)\w*", "cusolver": r"\b(?:cusolver|hipsolver)\w*",
    "cudnn": r"\b(?:cudnn|miopen)\w*", "thrust": r"\bthrust::|[<\"]thrust/", "cub": r"\bcub::|[<\"](?:cub|hipcub)/",
    "nccl": r"\b(?:nccl|rccl)[A-Z]\w*|[<\"](?:nccl|rccl)",
}


@dataclass
class UnitResult:
    path: str                 # ported file, relative to OUT
    source: str               # original file, relative to SRC
    status: str               # ok | failed | timeout
    category: str
    error: str = ""           # the first error, "file:line:col: message"
    error_file: str = ""
    error_line: int = 0
    has_main: bool = False
    duration_s: float = 0.0
    command: list[str] = field(default_factory=list)
    log_tail: str = ""

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class LinkResult:
    program: str              # output binary, relative to OUT
    main: str                 # the ported file with main()
    status: str               # ok | failed | not-linked
    category: str
    error: str = ""
    duration_s: float = 0.0
    command: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return asdict(self)


def choose_toolchain(kind: str = "auto"):
    """The Toolchain for the port: ROCm's hipcc when present, else the offline ROCm root."""
    from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX, offline_problem

    kinds = ("rocm", "offline") if kind == "auto" else (kind,)
    for k in kinds:
        tc = driver.find_toolchain(k)
        if tc is not None:
            return tc
    fixes = "; or ".join(offline_problem() if k == "offline" else NO_TOOLCHAIN_FIX[k] for k in kinds)
    raise RuntimeError(f"no HIP compiler found ({', '.join(kinds)}): {fixes}")


def has_main(text: str) -> bool:
    return bool(_MAIN.search(strip_comments_and_strings(text)))


def libraries_needed(texts) -> list[str]:
    """Keys of LIBRARIES the sources use (CUDA or HIP spelling)."""
    found = []
    joined = "\n".join(texts)
    for key, rx in _LIB_NEEDLES.items():
        if re.search(rx, joined):
            found.append(key)
    return found


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
    t = _TOOL_ERROR.search(log)
    return "", 0, "", (t.group(0).strip() if t else log.strip().splitlines()[-1] if log.strip() else "failed")


PORT_FLAGS = ("-O2", "-std=c++17", "-w", "-ferror-limit=5")


def compile_command(tc, src: Path, obj: Path, archs: tuple[str, ...], include_dirs, extra_flags=()) -> list[str]:
    """The driver's object command line for one ported file."""
    return driver.command(tc, [src], obj, output_kind="obj", targets=archs, flags=(*PORT_FLAGS, *extra_flags),
                          include_dirs=include_dirs)


def link_command(tc, objs: list[Path], archive: Path | None, out: Path, libs=()) -> list[str]:
    return driver.command(tc, [*objs, *([archive] if archive else [])], out, output_kind="link", libs=libs)


def _inside(f: str, root: Path) -> bool:
    p = Path(f) if os.path.isabs(f) else root / f
    try:
        p.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _compile_one(tc, out_root: Path, build_dir: Path, rel: str, src_rel: str, archs, include_dirs, extra_flags,
                 main: bool) -> UnitResult:
    obj = build_dir / "obj" / (rel + ".o")
    r = driver.compile_file(tc, out_root / rel, obj, targets=archs, include_dirs=include_dirs,
                            flags=(*PORT_FLAGS, *extra_flags), cwd=out_root, time_limit=COMPILE_TIMEOUT_S)
    cmd, dt, log = r.command, r.duration_s, r.log
    (build_dir / "logs").mkdir(parents=True, exist_ok=True)
    (build_dir / "logs" / (rel.replace("/", "__") + ".log")).write_text(" ".join(cmd) + "\n\n" + log)
    if r.timed_out:
        return UnitResult(rel, src_rel, "timeout", "timeout", f"stopped after {COMPILE_TIMEOUT_S:.0f} s", has_main=main,
                          duration_s=dt, command=cmd)
    if r.ok:
        return UnitResult(rel, src_rel, "ok", "ok", has_main=main, duration_s=dt, command=cmd)
    efile, eline, where, msg = first_error(log)
    if efile and not _inside(efile, out_root):
        # e.g. a static_assert in a system or compat header: point at the project line that led there
        for m in re.finditer(r"^(?P<file>[^:\n]+):(?P<line>\d+):\d+: note: (?P<msg>.*)$", log, re.MULTILINE):
            if _inside(m.group("file"), out_root):
                msg = f"{msg} [in {Path(efile).name}; from here: {m.group('msg')}]"
                efile, eline = m.group("file"), int(m.group("line"))
                break
    code_line = ""
    if efile and eline:
        p = Path(efile) if os.path.isabs(efile) else out_root / efile
        try:
            code_line = p.read_text(errors="replace").split("\n")[eline - 1]
        except (OSError, IndexError):
            pass
        try:
            efile = str(Path(p).resolve().relative_to(out_root))
        except ValueError:
            pass
    cat = categorise(msg, code_line)
    text = f"{efile}:{eline}: {msg}" if efile else msg
    return UnitResult(rel, src_rel, "failed", cat, text, efile, eline, main, dt, cmd, log[-3000:])


def compile_all(tc, out_root: Path, units: dict[str, str], mains: set[str], archs=settings.AMD_TARGETS[:1],
                include_dirs=(), compat: bool = False, workers: int | None = None, extra_flags=(),
                build_dir: Path | None = None, progress=None) -> list[UnitResult]:
    """Compile ``units`` ({ported rel: source rel}) in parallel; results in the order of ``units``.

    ``compat`` is accepted for old callers and ignored: ROCm 7.2's own headers have the warp-sync
    builtins, so there is no compatibility header any more."""
    build_dir = build_dir or out_root / ".rocmlab-port"
    build_dir.mkdir(parents=True, exist_ok=True)
    workers = max(1, workers or os.cpu_count() or 1)
    inc = [str(out_root / d) if not os.path.isabs(d) else d for d in include_dirs]

    def one(item):
        rel, src_rel = item
        r = _compile_one(tc, out_root, build_dir, rel, src_rel, archs, inc, extra_flags, rel in mains)
        if progress:
            progress(r)
        return r

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, units.items()))


def link_all(tc, out_root: Path, results: list[UnitResult], libs=(), build_dir: Path | None = None) -> list[LinkResult]:
    """Archive every compiled object without a main; link each compiled main against it."""
    build_dir = build_dir or out_root / ".rocmlab-port"
    obj = lambda r: build_dir / "obj" / (r.path + ".o")  # noqa: E731
    lib_objs = [obj(r) for r in results if r.status == "ok" and not r.has_main]
    failed = [r.path for r in results if r.status != "ok" and not r.has_main]
    archive = None
    if lib_objs:
        archive = build_dir / "libport.a"
        if not driver.archive(tc, lib_objs, archive, cwd=out_root).ok:
            archive = None
    links = []
    for r in results:
        if not r.has_main:
            continue
        prog_rel = str(Path(r.path).with_suffix(""))
        program = build_dir / "bin" / prog_rel
        program.parent.mkdir(parents=True, exist_ok=True)
        if r.status != "ok":
            links.append(LinkResult(f".rocmlab-port/bin/{prog_rel}", r.path, "not-linked", "not-linked",
                                    f"{r.path} itself did not compile"))
            continue
        done = driver.link(tc, [obj(r), *([archive] if archive else [])], program, libs=libs, cwd=out_root,
                           time_limit=COMPILE_TIMEOUT_S)
        cmd, dt, log = done.command, done.duration_s, done.log
        if done.ok:
            links.append(LinkResult(f".rocmlab-port/bin/{prog_rel}", r.path, "ok", "ok", "", dt, cmd))
            continue
        m = re.search(r"undefined (?:reference to|symbol:?) [`'\"]?([^`'\"\n]+)", log)
        if m:
            msg = f"undefined symbol {m.group(1).strip()}"
            if failed:
                msg += f" (files that failed to compile: {', '.join(failed[:5])})"
            cat = "link-undefined"
        else:
            msg, cat = first_error(log)[3], "link-error"
        links.append(LinkResult(f".rocmlab-port/bin/{prog_rel}", r.path, "failed", cat, msg, dt, cmd))
    return links
