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

from rocmlab import settings, targets
from rocmlab.hip.hipcuda import Translation
from rocmlab.hip.toolchain import Toolchain, discover_offline, offline_problem

LABEL = "cpu: wave64 simulator"
KIND = "cpu"
SIM_DIR = Path(__file__).parent / "sim"
INCLUDE_DIR = SIM_DIR / "include"
RUNTIME_SOURCE = SIM_DIR / "runtime.cpp"
#: The compiler inside the offline root.
COMPILER = "/usr/bin/clang++-22"
#: Targets whose semantics it simulates: the course's AMD targets with wavefronts of 64 (all of them), in its order.
TARGETS = tuple(t for t in settings.AMD_TARGETS if targets.get(t).wave == 64)
#: Exit status of a program the simulator stopped (deadlock, divergent wave operation, bad mask).
STOPPED_EXIT = 86
#: Seconds before the sandbox's limit at which the runtime names the thread that is still running.
WATCHDOG_MARGIN_S = 1.0
#: Learner code calls the runtime's sanitizer at every load and store (initcheck, racecheck, memcheck), and
#: carries line tables so that a finding names its source line (runtime.cpp, "the sanitizer").
#: (The compiler front end's own options: the driver's -fsanitize-coverage would also link UBSan's runtime, whose
#: signal handler would take over the simulator's fault messages; the callbacks are the runtime's own.)
#: Two more front-end instrumentations call the runtime, never a sanitizer library: the array-bounds check (an index
#: outside a fixed extent: static __shared__ arrays are bounds-checked) and ThreadSanitizer's instrumentation of
#: memcpy/memmove/memset alone (struct copies the compiler leaves as memcpy are traced as the ISA's accesses).
SANITIZER_FLAGS = ("-Xclang", "-fsanitize-coverage-type=1", "-Xclang", "-fsanitize-coverage-trace-loads",
                   "-Xclang", "-fsanitize-coverage-trace-stores", "-gline-tables-only",
                   "-Xclang", "-fsanitize=array-bounds,thread", "-Xclang", "-fsanitize-recover=array-bounds",
                   "-mllvm", "-tsan-instrument-memory-accesses=0", "-mllvm", "-tsan-instrument-atomics=0",
                   "-mllvm", "-tsan-instrument-func-entry-exit=0",
                   # host-only functions (main) call no load/store callback: the simulator never checks host accesses
                   "-Xclang", f"-fsanitize-coverage-ignorelist={INCLUDE_DIR / 'hipsim' / 'coverage_ignore.txt'}")
#: A flag only benchmarks give (benchmarks/sim_cost.py): the learner's code compiled without the sanitizer's calls
#: ("bare": no checks, no counters, no lockstep), the baseline the instrumented build is measured against.
BARE_FLAG = "--hipsim-bare"
#: The symbolizer inside the offline root that turns a finding's code address into the learner's line.
SYMBOLIZER = "/usr/bin/llvm-symbolizer-22"
#: The sanitizer's finding lines on stderr: "[cpu: wave64 simulator] racecheck: line 12: ...".
FINDING = re.compile(r"^\[cpu: wave64 simulator\] (initcheck|racecheck|memcheck|synccheck): (.*)$", re.MULTILINE)
#: CPU threads that run blocks (the sandbox allows SANDBOX_CPU_PER_WALL x the wall time of CPU).
WORKERS = 2

_PROVIDED_HEADERS = {"hip/hip_runtime.h", "hip/hip_runtime_api.h", "hip/hip_cooperative_groups.h"}
#: GPU library headers the simulator provides (a CPU reference of the calls the course uses: sim/include/hipblas).
_PROVIDED_LIBRARIES = {"hipblas/hipblas.h", "hipblas.h"}
#: The hipBLAS names that header provides.
HIPBLAS_PROVIDED = ("hipblasCreate", "hipblasDestroy", "hipblasSetStream", "hipblasGetStream", "hipblasSgemm",
                    "hipblasHandle_t", "hipblasStatus_t", "hipblasOperation_t")
_LIBRARY_PREFIXES = ("hipblas", "rocblas", "hipcub", "rocprim", "rocwmma", "hipfft", "rocfft", "hiprand", "rocrand",
                     "hipsparse", "rocsparse", "hipsolver", "rocsolver", "rccl", "miopen", "thrust", "rocthrust",
                     "hiprtc", "composable_kernel", "ck/")
#: Compiler flags for the GPU compile that mean nothing on the host (dropped, with a note).
_DEVICE_FLAGS = re.compile(r"^(-lhipblas|-lrocblas|--offload-arch=.*|--cuda-.*|-munsafe-fp-atomics|-mno-unsafe-fp-atomics|-m(no-)?cumode|"
                           r"-f(no-)?gpu-rdc|-save-temps|--save-temps|-Rpass.*|-mwavefrontsize64|-mno-wavefrontsize64|"
                           r"-fgpu-.*|-mllvm|--rocm-path=.*|-x|hip)$")

#: Compiler sanitizers (-fsanitize=address, -shared-libsan, ...): a simulator build refuses them with the reason
#: (sim/include/hipsim/sanitizer_refused.h); the simulator's own sanitizer checks every device access.
_COMPILER_SANITIZER = re.compile(r"^(-fsanitize=.*|-shared-libsan|-static-libsan|-shared-libasan|-fsanitize-.*)$")

# comments, string and character literals: masked before anything is searched or rewritten
_OPAQUE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)

#: The AMD builtins the simulator runs (sim/include/hip/hip_runtime.h: the MFMA the course uses, its lane layout).
SIMULATED_BUILTINS = ("__builtin_amdgcn_mfma_f32_16x16x16f16",)
_SIMULATED_BUILTIN = "|".join(SIMULATED_BUILTINS)

_NOT_SIMULATED = [
    (re.compile(rf"\b(?!(?:{_SIMULATED_BUILTIN})\b)__builtin_amdgcn_mfma\w*|\b__builtin_amdgcn_smfmac\w*"),
     "MFMA matrix-core intrinsics ({name}) are not simulated: their results depend on the matrix cores' "
     "operand layouts, which the simulator does not model. Run it on an AMD GPU (MI300X); the ISA view still "
     "shows the v_mfma instructions"),
    (re.compile(rf"\b(?!(?:{_SIMULATED_BUILTIN})\b)__builtin_amdgcn_\w+"),
     "the AMD GPU builtin {name} is not simulated: run it on an AMD GPU, or use the HIP intrinsic it implements "
     "(__shfl, __ballot, __lane_id, ...)"),
    (re.compile(rf"\b(?!(?:{'|'.join(HIPBLAS_PROVIDED)})\b)(?:hipblas|rocblas)\w*"),
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
    (re.compile(r"\b(?:__)?(?:no_sanitize\w*|disable_sanitizer_instrumentation)\b|\b(?:push|pop)_macro\b"),
     "{name} is refused here: it would take code out of the simulator's sanitizer, which checks every access of "
     "graded code (remove the attribute or pragma)"),
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
        if header in _PROVIDED_LIBRARIES:
            continue
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
    return note_shared("".join(pieces))


_STATIC_SHARED = re.compile(r"\b__shared__\b")


def _top_level_parts(decl: str) -> list[str]:
    """``decl`` split at its top-level commas (a comma inside brackets stays with its declarator)."""
    parts, depth, cur = [], 0, ""
    for ch in decl:
        depth += ch in "([<{"
        depth -= ch in ")]>}"
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def _declarators(decl: str) -> list[str]:
    """The names a declaration (``float a[4][5], b[8]``, no ``;``) declares: split at top-level commas."""
    names = []
    for part in _top_level_parts(decl):
        m = re.search(r"([A-Za-z_]\w*)\s*(?:\[|=|$)", part.strip())
        if m and m.group(1) not in ("__shared__", "thread_local", "static"):
            names.append(m.group(1))
    return names


def _one_per_declaration(decl: str) -> list[str] | None:
    """``float a[16], b[16]`` (the text after ``__shared__``, no ``;``) as one declaration per name
    (``["float a[16]", "float b[16]"]``), so that each variable gets its own pad right after it; None where the
    declaration declares one name, or is not split simply (a comma inside brackets stays with its declarator)."""
    parts = _top_level_parts(decl)
    if len(parts) < 2:
        return None
    first = re.search(r"[*&\s]*([A-Za-z_]\w*)\s*(?:\[[^;]*)?$", parts[0])
    if first is None or not parts[0][:first.start()].strip():
        return None
    prefix = parts[0][:first.start()]
    return [parts[0], *(prefix + " " + part.strip() for part in parts[1:])]


def _function_scopes(code: str) -> list[tuple[int, int]]:
    """(start, end) of each outermost brace pair of ``code`` (masked) that is not a namespace's or an ``extern "C"``
    block's: a function body, where a static ``__shared__`` is a function-scope static; outside them it is at
    namespace scope."""
    scopes, stack, last = [], [], 0
    for m in re.finditer(r"[{};]", code):
        ch = m.group(0)
        if ch == "{":
            header = code[last:m.start()]
            # (the mask blanks "C": an extern "C" block's header is the word extern alone)
            kind = "ns" if re.search(r"\bnamespace\b", header) or re.fullmatch(r"\s*extern\s*", header) else "code"
            if kind == "code" and "code" not in stack:
                scopes.append([m.start(), len(code)])
            stack.append(kind)
        elif ch == "}" and stack:
            kind = stack.pop()
            if kind == "code" and "code" not in stack:
                scopes[-1][1] = m.end()
        last = m.end()
    return [(a, b) for a, b in scopes]


def note_shared(source: str) -> str:
    """Each static ``__shared__`` declaration followed, on its own line, by a note (once per CPU thread: a
    ``thread_local`` static, whose first-use guard takes no lock, so lanes in lockstep never wait on one another
    there) of where the variable lives (``::hipsim::lds_note``): the sanitizer then knows which bytes are LDS.
    Before the note, a pad that nothing uses (``hipsim_pad_*``), laid out right after the variable: an access there
    is one past the variable's end. A declaration of several names (``__shared__ float a[16], b[16];``) becomes one
    declaration per name, each followed by its pad (else one past ``a`` would be ``b``). At namespace scope the note
    runs once before ``main``. Line numbers kept."""
    code = _mask(source)
    functions = _function_scopes(code)
    edits = []
    for m in _STATIC_SHARED.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        if code[line_start:m.start()].lstrip().startswith("#"):      # inside a macro: left alone
            continue
        end = code.find(";", m.end())
        if end < 0 or "{" in code[m.end():end] or "}" in code[m.end():end]:
            continue
        names = _declarators(code[m.end():end])
        if not names:
            continue
        # at namespace scope the note is a plain static, run once before main (a namespace-scope thread_local's
        # initialiser would run only where something uses it, which nothing does); where the variable lies is the
        # same offset from every CPU thread's thread pointer, so one note serves all
        local = any(a < m.start() < b for a, b in functions)
        notes = [f"thread_local unsigned char hipsim_pad_{end}_{k}"
                 f"[::hipsim::lds_pad_bytes<decltype({name})>()]; "
                 f"[[maybe_unused]] static {'thread_local ' if local else ''}const int hipsim_lds_{end}_{k} = "
                 f'::hipsim::lds_note(&{name}, sizeof({name}), "{name}", '
                 f"hipsim_pad_{end}_{k}, sizeof(hipsim_pad_{end}_{k}));"
                 for k, name in enumerate(names)]
        split = _one_per_declaration(code[m.end():end]) if len(names) > 1 else None
        if split is not None and len(split) == len(names):
            # qualifiers before __shared__ in this statement (static, volatile) go with every declaration
            lead_from = max(code.rfind(c, 0, m.start()) for c in ";{}") + 1
            lead = code[lead_from:m.start()]
            lines = source[m.start():end].count("\n")
            text = " ".join(f"{'' if k == 0 else lead.strip() + ' '}__shared__ {d}; {note}"
                            for k, (d, note) in enumerate(zip(split, notes, strict=True)))
            edits.append((m.start(), end + 1, text.replace("\n", " ") + "\n" * lines))
        else:
            edits.append((end + 1, end + 1, " " + " ".join(notes)))
    for start, stop, text in reversed(edits):
        source = source[:start] + text + source[stop:]
    return source


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
    """A hash of the runtime, its headers and this module (its compile line: the sanitizer's flags, the macros):
    part of the toolchain's version, so the build cache sees changes."""
    h = hashlib.sha256()
    for p in sorted([RUNTIME_SOURCE, *INCLUDE_DIR.rglob("*.h"), *INCLUDE_DIR.rglob("*.txt"), Path(__file__)]):
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
    return "" if discover() else f"the offline ROCm root has no {COMPILER}: rebuild it (rocmlab setup rocm-root)"


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
    bare = BARE_FLAG in kept          # the sanitizer's options are language options: a PCH must be built with them
    kept = [f for f in kept if f != BARE_FLAG]
    return [*_compiler_line(tc, kept), *([] if bare else SANITIZER_FLAGS), *kept, "-x", "c++-header", str(header),
            "-o", str(output)]


def _compiler_line(tc: Toolchain, kept) -> list[str]:
    """The start of every simulator compile line (a build's and its PCH's): the compiler, the language, the
    optimization (-O2 unless ``kept`` has one) and the warnings, against the simulator's headers."""
    opt = [] if any(f.startswith("-O") for f in kept) else ["-O2"]
    return [tc.compiler, "-std=c++17", *opt, "-pthread", "-fno-strict-aliasing", "-Wno-unused-result",
            "-Werror=vla-cxx-extension", "-Wno-macro-redefined", "-Wno-unknown-attributes", f"-I{INCLUDE_DIR}"]


def target_defines(target: str = "") -> list[str]:
    """The target's own predefined macros, as its device pass has them (the header has the rest)."""
    t = target if target in TARGETS else settings.DEFAULT_TARGET
    return [f"-D__{t}__=1", f'-D__amdgcn_processor__="{t}"', f'-D__amdgcn_target_id__="{t}"']


def command(tc: Toolchain, inputs, output, *, output_kind: str, flags=(), pre=(), libs=(), runtime: str = "",
            target: str = "") -> list[str]:
    """The host compile line: ``-x c++`` against the simulator's header, linked with its runtime (the object
    :func:`rocmlab.hip.compile.simulator_runtime` keeps in the cache). Learner code sees the gfx942 device
    pass's predefined macros (:func:`target_defines`, the header). Inline assembly in learner code is refused
    before the build (:func:`unsupported`) and, for a grade, in clang's preprocessed view (``.incbin`` and the
    like, :mod:`rocmlab.grader.static`): not with ``-fno-gnu-inline-asm``, which also refuses the file-scope
    ``__asm`` in libstdc++'s own ``<iostream>``."""
    kept, _ = host_flags(flags)
    own = [str(i) for i in inputs] == [str(RUNTIME_SOURCE)]     # the runtime itself: its fiber switch is assembly
    bare = BARE_FLAG in kept          # benchmarks/sim_cost.py: the same build without the sanitizer's calls
    kept = [f for f in kept if f != BARE_FLAG]
    learner = [] if own else [*([] if bare else SANITIZER_FLAGS), *target_defines(target)]
    if not own and any(_COMPILER_SANITIZER.match(f) for f in kept):   # the build stops with the reason (see the header)
        kept = [f for f in kept if not _COMPILER_SANITIZER.match(f)]
        learner = ["-include", "hipsim/sanitizer_refused.h", *learner]
    base = [*_compiler_line(tc, kept), "-include", "hip/hip_runtime.h", *learner, *pre, *kept]
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
    out.setdefault("HIPSIM_SYMBOLIZER", SYMBOLIZER)
    # ROCMLAB_SIM_CHECKS=0 turns the sanitizer off for this process's runs (benchmarks/sim_sanitizer_overhead.py)
    out.setdefault("HIPSIM_CHECKS", "0" if os.environ.get("ROCMLAB_SIM_CHECKS", "1") == "0" else "1")
    return out


_COUNTERS = re.compile(r"^\[cpu: wave64 simulator\] counters: kernel (?P<kernel>\S+) \(launched at line (?P<line>\d+), "
                       r"(?P<launches>\d+) launch\(es\)\):(?P<values>.*)$", re.MULTILINE)


def counters(stderr: str) -> dict[str, dict[str, int]]:
    """The counts a run with ``HIPSIM_COUNTERS=1`` printed, per kernel (``name@line`` where one name is launched
    from several lines): ``{"transpose": {"SQ_LDS_BANK_CONFLICT": 992, ...}}``. Counted by the simulator."""
    out: dict[str, dict[str, int]] = {}
    found = list(_COUNTERS.finditer(stderr))
    names = [m.group("kernel") for m in found]
    for m in found:
        key = m.group("kernel") if names.count(m.group("kernel")) == 1 else f"{m.group('kernel')}@{m.group('line')}"
        values = dict(kv.split("=", 1) for kv in m.group("values").split())
        out[key] = {k: int(v) for k, v in values.items()} | {"launches": int(m.group("launches"))}
    return out


_TRACE = re.compile(r"^\[cpu: wave64 simulator\] trace: line (?P<line>\d+) (?P<space>lds|global) (?P<rw>read|write) "
                    r"(?P<size>\d+) bytes:(?P<lanes>.*)$", re.MULTILINE)


def trace(stderr: str) -> list[dict]:
    """The wave instructions a run with ``HIPSIM_COUNTERS=1 HIPSIM_TRACE=1`` traced (wavefront 0 of block (0,0,0),
    in order): ``{"line", "space" (lds|global), "rw", "size", "lanes": {lane: address}}``; an LDS address is the
    byte offset in its variable (or in the dynamic shared memory)."""
    out = []
    for m in _TRACE.finditer(stderr):
        lanes = {int(a): int(b) for a, b in (kv.split(":") for kv in m.group("lanes").split())}
        out.append({"line": int(m.group("line")), "space": m.group("space"), "rw": m.group("rw"),
                    "size": int(m.group("size")), "lanes": lanes})
    return out


def findings(stderr: str) -> list[tuple[str, str]]:
    """(tool, text) of each sanitizer finding a simulated run printed (initcheck, racecheck, memcheck,
    synccheck), in order."""
    return [(m.group(1), m.group(2)) for m in FINDING.finditer(stderr)]


def stopped_message(stderr: str) -> str:
    """The simulator's own error (deadlock, divergence, out-of-bounds, time limit) from a run's stderr, or ''."""
    for line in stderr.splitlines():
        if line.startswith(f"[{LABEL}] error: "):
            return line[len(f"[{LABEL}] error: "):]
    return ""


def label(text: str = "") -> str:
    return f"[{LABEL}]" + (f" {text}" if text else "")

