"""The fourth way to build and run HIP: ``cpu``, a simulator with MI300X's wavefront of 64.

The learner's HIP source is compiled for the host, as C++, by the offline ROCm root's clang (inside the
sandbox, like every compile), against rocmlab's own ``hip/hip_runtime.h`` (``sim/include``) and runtime
(``sim/runtime.cpp``): each block runs on a CPU thread, each of its threads as a fiber, in wavefronts of 64
lanes that meet at every cross-lane operation and barrier (the runtime's header comment has the rules).
Every result says ``[cpu: wave64 simulator]``; times are never measured.

Three steps, each one function:

- :func:`unsupported`: what the simulator cannot run faithfully (MFMA and other ``__builtin_amdgcn_*``
  intrinsics, hipBLAS and other libraries, textures, device clocks, inline assembly). The build then fails
  with one ``#error`` per problem at the learner's own line: never a wrong result.
- :func:`rewrite`: the two constructs C++ cannot parse, with line numbers kept:
  ``k<<<g, b, shm, s>>>(args)`` -> ``::hipsim::Launch(k, "k", LINE, g, b, shm, s)(args)``, and
  ``extern __shared__ T x[];`` -> a per-block pointer to the dynamic shared memory.
- :func:`command`: the compile line (the runtime is compiled once per version into the cache by
  :func:`rocmlab.hip.compile.simulator_runtime`).

:mod:`rocmlab.hip.compile` treats ``cpu`` as a toolchain kind (:func:`discover`), so builds are cached and
diagnostics mapped like any other; :mod:`rocmlab.hip.build` runs on it when no GPU is here.
"""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from pathlib import Path

from rocmlab.hip.hipcuda import Translation
from rocmlab.hip.toolchain import Toolchain, discover_offline, offline_problem

LABEL = "cpu: wave64 simulator"
KIND = "cpu"
SIM_DIR = Path(__file__).parent / "sim"
INCLUDE_DIR = SIM_DIR / "include"
RUNTIME_SOURCE = SIM_DIR / "runtime.cpp"
#: The compiler inside the offline root.
COMPILER = "/usr/bin/clang++-22"
#: Targets whose semantics it simulates (wavefronts of 64).
TARGETS = ("gfx942", "gfx950", "gfx90a")
#: Exit status of a program the simulator stopped (deadlock, divergent wave operation, bad mask).
STOPPED_EXIT = 86
#: Seconds before the sandbox's limit at which the runtime names the thread that is still running.
WATCHDOG_MARGIN_S = 1.0
#: CPU threads that run blocks (the sandbox allows SANDBOX_CPU_PER_WALL x the wall time of CPU).
WORKERS = 2

_PROVIDED_HEADERS = {"hip/hip_runtime.h", "hip/hip_runtime_api.h", "hip/hip_cooperative_groups.h"}
_LIBRARY_PREFIXES = ("hipblas", "rocblas", "hipcub", "rocprim", "rocwmma", "hipfft", "rocfft", "hiprand", "rocrand",
                     "hipsparse", "rocsparse", "hipsolver", "rocsolver", "rccl", "miopen", "thrust", "rocthrust",
                     "hiprtc", "composable_kernel", "ck/")
#: Compiler flags for the GPU compile that mean nothing on the host (dropped, with a note).
_DEVICE_FLAGS = re.compile(r"^(--offload-arch=.*|--cuda-.*|-munsafe-fp-atomics|-mno-unsafe-fp-atomics|-m(no-)?cumode|"
                           r"-f(no-)?gpu-rdc|-save-temps|--save-temps|-Rpass.*|-mwavefrontsize64|-mno-wavefrontsize64|"
                           r"-fgpu-.*|-mllvm|--rocm-path=.*|-x|hip)$")

# comments, string and character literals: masked before anything is searched or rewritten
_OPAQUE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)

_NOT_SIMULATED = [
    (re.compile(r"\b__builtin_amdgcn_mfma\w*|\b__builtin_amdgcn_smfmac\w*"),
     "MFMA matrix-core intrinsics ({name}) are not simulated: their results depend on the matrix cores' "
     "operand layouts, which the simulator does not model. Run it on an AMD GPU (MI300X); the ISA view still "
     "shows the v_mfma instructions"),
    (re.compile(r"\b__builtin_amdgcn_\w+"),
     "the AMD GPU builtin {name} is not simulated: run it on an AMD GPU, or use the HIP intrinsic it implements "
     "(__shfl, __ballot, __lane_id, ...)"),
    (re.compile(r"\b(?:hipblas|rocblas)\w*"),
     "hipBLAS/rocBLAS ({name}) is not simulated (it is a GPU library): run it on an AMD GPU, or compare with a "
     "kernel of your own"),
    (re.compile(r"\b(?:hipTextureObject_t|hipCreateTextureObject|hipSurfaceObject_t|tex1Dfetch|tex[123]D\w*|"
                r"surf[123]D\w*|texture\s*<)"),
     "texture and surface objects ({name}) are not simulated: read the buffer with plain loads, or run on a GPU"),
    (re.compile(r"\b(?:clock64|wall_clock64|__clock64|__clock|__builtin_readcyclecounter)\s*\("),
     "device clocks ({name}) are not simulated: the simulator never measures time; time kernels on a GPU"),
    (re.compile(r"\b(?:asm|__asm__|__asm)\s*(?:volatile\s*|__volatile__\s*)?\("),
     "inline GPU assembly ({name}) is not simulated: run it on an AMD GPU"),
    (re.compile(r"\b(?:this_grid|grid_group|hipLaunchCooperativeKernel\w*|multi_grid_group)\b"),
     "grid-wide cooperative groups ({name}) are not simulated (only thread_block and tiles of up to 64 lanes)"),
    (re.compile(r"\bhipModule\w+|\bhiprtc\w+"),
     "loading code objects at run time ({name}) is not simulated: launch the kernel from the same source"),
]


def _mask(source: str) -> str:
    """The source with comments and literals blanked (newlines kept): same length, same lines."""
    return _OPAQUE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source)


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def unsupported(source: str) -> list[tuple[int, str]]:
    """(line, message) for each construct the simulator cannot run faithfully (first of each kind per line)."""
    code = _mask(source)
    found: dict[tuple[int, str], str] = {}
    for m in _INCLUDE.finditer(source):
        header = m.group(1).strip()
        line = _line_of(source, m.start())
        low = header.lower()
        if low.startswith(_LIBRARY_PREFIXES):
            found[(line, "include")] = (f"<{header}> is a GPU library the simulator does not provide: run this program "
                                        "on an AMD GPU (the static checks and the ISA view work here)")
        elif low.startswith("hip/") and header not in _PROVIDED_HEADERS:
            found[(line, "include")] = (f"<{header}> is not part of the simulator (it provides "
                                        f"{', '.join(sorted(_PROVIDED_HEADERS))}): run this program on an AMD GPU")
    code_no_includes = re.sub(r"^[ \t]*#[ \t]*include[^\n]*", lambda m: " " * len(m.group(0)), code, flags=re.M)
    for rx, text in _NOT_SIMULATED:
        for m in rx.finditer(code_no_includes):
            line = _line_of(code, m.start())
            key = (line, text[:20])
            if not any(k[1] == key[1] or k[0] == line for k in found):   # the first place of each kind
                found[key] = text.format(name=m.group(0).rstrip("( \t"))
    return sorted((line, msg) for (line, _), msg in found.items())


def _launch_start(code: str, pos: int) -> int:
    """Where the kernel expression before ``<<<`` at ``pos`` begins: a name, qualified, maybe with template
    arguments (``ns::k<float, 4>``)."""
    i = pos
    while i > 0 and code[i - 1] in " \t":
        i -= 1
    if i > 0 and code[i - 1] == ">":
        depth = 0
        while i > 0:
            i -= 1
            if code[i] == ">":
                depth += 1
            elif code[i] == "<":
                depth -= 1
                if depth == 0:
                    break
    while i > 0 and (code[i - 1].isalnum() or code[i - 1] in "_:"):
        i -= 1
    return i


_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\s+(?P<type>[^;{}()]*?(?:\([^;{}]*?\)[^;{}()]*?)*?)\s*"
                            r"\b(?P<name>[A-Za-z_]\w*)\s*\[\s*\]\s*;")
_ATTRS = re.compile(r"__align__\s*\(\s*\w+\s*\)|alignas\s*\([^)]*\)|__attribute__\s*\(\(.*?\)\)|\b__shared__\b")


def rewrite(source: str) -> str:
    """The source C++ can compile against the simulator's header, line for line."""
    code = _mask(source)
    out = source
    # launches, right to left so earlier positions stay valid
    starts = [m.start() for m in re.finditer(r"<<<", code)]
    for pos in reversed(starts):
        end = code.find(">>>", pos + 3)
        if end < 0:
            continue
        begin = _launch_start(code, pos)
        name = code[begin:pos].strip()
        if not name:
            continue
        line = _line_of(code, pos)
        cfg = out[pos + 3:end]
        label = re.sub(r"\s+", "", name).replace('"', "")
        out = f'{out[:begin]}::hipsim::Launch({name}, "{label}", {line}, {cfg}){out[end + 3:]}'
        code = f'{code[:begin]}::hipsim::Launch({name}, "{label}", {line}, {code[pos + 3:end]}){code[end + 3:]}'
    # extern __shared__ T x[];  ->  thread_local T* const x = (T*) the block's dynamic shared memory;
    pieces, last = [], 0
    for m in _EXTERN_SHARED.finditer(_mask(out)):
        typ = re.sub(r"\s+", " ", _ATTRS.sub(" ", out[m.start("type"):m.end("type")])).strip()
        name = m.group("name")
        newlines = out[m.start():m.end()].count("\n")
        pieces += [out[last:m.start()],
                   f"thread_local {typ}* const {name} = reinterpret_cast<{typ}*>(::hipsim::dynamic_shared_base());"
                   + "\n" * newlines]
        last = m.end()
    pieces.append(out[last:])
    return "".join(pieces)


def translate(source: str) -> Translation:
    """What the compiler sees: the rewritten source, or (when something is not simulated) only ``#error``
    lines at the learner's own line numbers, so the build fails with those messages and nothing else."""
    problems = unsupported(source)
    if problems:
        text = "".join(f"#line {line}\n#error {_pp_safe(msg)}\n" for line, msg in problems)
        return Translation(text, [], [f"line {line}: {msg}" for line, msg in problems])
    return Translation(rewrite(source), [], [])


def _pp_safe(msg: str) -> str:
    """A message #error prints as it is (no unmatched quotes for the preprocessor)."""
    return msg.replace("'", "").replace('"', "")


# --- the toolchain -------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def runtime_version() -> str:
    """A hash of the runtime and its headers: part of the toolchain's version, so the build cache sees changes."""
    h = hashlib.sha256()
    for p in sorted([RUNTIME_SOURCE, *INCLUDE_DIR.rglob("*.h")]):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def discover(probe=None) -> Toolchain | None:
    """The simulator's toolchain: the offline root's clang++-22 (None without the root)."""
    off = discover_offline(probe)
    if off is None or not off.inside(COMPILER).exists():
        return None
    return Toolchain(KIND, COMPILER, f"22+hipsim-{runtime_version()}", TARGETS, off.root, off.rocm_version)


def problem() -> str:
    """'' when the simulator can build here, else the reason and the fix."""
    why = offline_problem()
    if why:
        return f"the CPU simulator compiles with the offline ROCm root's clang: {why}"
    return "" if discover() else f"the offline ROCm root has no {COMPILER}: rebuild it (scripts/setup/20-rocm-root.sh)"


def host_flags(flags) -> tuple[list[str], list[str]]:
    """(flags kept, flags dropped) for a host compile: GPU-only flags mean nothing on the CPU."""
    kept, dropped = [], []
    for f in flags:
        (dropped if _DEVICE_FLAGS.match(str(f)) else kept).append(str(f))
    return kept, dropped


def pch_command(tc: Toolchain, header, output, *, flags=()) -> list[str]:
    """The precompiled simulator header for :func:`command`'s builds with these flags (``-include-pch`` there
    stands for its ``-include hip/hip_runtime.h``: the same header, read first either way)."""
    kept, _ = host_flags(flags)
    opt = [] if any(f.startswith("-O") for f in kept) else ["-O2"]
    return [tc.compiler, "-std=c++17", *opt, "-pthread", "-fno-strict-aliasing", "-Wno-unused-result",
            "-Werror=vla-cxx-extension", "-Wno-macro-redefined", f"-I{INCLUDE_DIR}", *kept,
            "-x", "c++-header", str(header), "-o", str(output)]


def command(tc: Toolchain, inputs, output, *, output_kind: str, flags=(), pre=(), libs=(), runtime: str = "") -> list[str]:
    """The host compile line: ``-x c++`` against the simulator's header, linked with its runtime (the object
    :func:`rocmlab.hip.compile.simulator_runtime` keeps in the cache)."""
    kept, _ = host_flags(flags)
    opt = [] if any(f.startswith("-O") for f in kept) else ["-O2"]
    base = [tc.compiler, "-std=c++17", *opt, "-pthread", "-fno-strict-aliasing", "-Wno-unused-result",
            "-Werror=vla-cxx-extension", "-Wno-macro-redefined", f"-I{INCLUDE_DIR}", "-include", "hip/hip_runtime.h",
            *pre, *kept]
    if output_kind == "obj":
        return [*base, "-x", "c++", *inputs, "-c", "-o", str(output)]
    if output_kind != "exe":
        raise ValueError(f"output_kind={output_kind!r}: the CPU simulator builds programs (exe) and objects (obj)")
    return [*base, "-x", "c++", *inputs, "-x", "none", runtime, *libs, "-o", str(output)]


def run_env(timeout_s: float, env: dict | None = None) -> dict:
    """The runtime's settings for one run: when to name a thread that never ends, how many CPU threads."""
    out = dict(env or {})
    out.setdefault("HIPSIM_DEADLINE_S", f"{max(timeout_s - WATCHDOG_MARGIN_S, timeout_s * 0.8):.2f}")
    out.setdefault("HIPSIM_WORKERS", str(min(WORKERS, os.cpu_count() or 1)))
    return out


def stopped_message(stderr: str) -> str:
    """The simulator's own error (deadlock, divergence, out-of-bounds, time limit) from a run's stderr, or ''."""
    for line in stderr.splitlines():
        if line.startswith(f"[{LABEL}] error: "):
            return line[len(f"[{LABEL}] error: "):]
    return ""


def label(text: str = "") -> str:
    return f"[{LABEL}]" + (f" {text}" if text else "")

