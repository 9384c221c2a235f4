"""THE compiler driver: every HIP/CUDA compile, link and archive in rocmlab goes through here.

It does four jobs, each in one place:

1. **Chooses the toolchain** (:func:`choose`): ROCm's hipcc on an AMD machine or in a ROCm image;
   the offline ROCm 7.2.4 root (``scripts/setup/20-rocm-root.sh``) for AMD targets without a GPU;
   nvcc for NVIDIA targets (HIP sources go through :mod:`rocmlab.hip.hipcuda` first, see
   :func:`prepare_source`).
2. **Builds every command line** (:func:`command`): ``exe`` (compile and link), ``obj`` (``-c``),
   ``asm`` (device code only, AMDGCN assembly with the ``; Kernel info`` block and code-object
   metadata), ``cubin``/``ptx`` (nvcc), ``link`` (objects to a program) and ``archive``.
3. **Runs the compiler through** :mod:`rocmlab.sandbox` (:func:`run`): read-only system,
   only the build folder writable, no network, time/memory/output limits. The offline compiler
   runs *inside* the ROCm root (it becomes ``/``); folders the command names (``-I DIR``, the
   sources) are bound in read-only at the same path.
4. **Parses diagnostics** (:func:`parse_diagnostics`): clang and nvcc messages mapped to the
   cell's or file's own lines; and keeps **one cache** (:func:`compile_source`, under
   ``rocmlab.paths.cache_dir()/hip-builds``).

Public API
----------
For cells (``%%hip``, the grader, ``rocmlab hip``): :func:`compile_source` (used by
:func:`rocmlab.hip.build.compile` and :func:`rocmlab.hip.inspector.inspect`).

For whole projects (``rocmlab port``)::

    tc, fix = compile.choose("hip", "gfx942")                 # or compile.find_toolchain("offline")
    r = compile.compile_file(tc, "src/a.hip", "build/a.o", targets=("gfx942", "gfx950"),
                             include_dirs=["include"], defines=["N=4"], flags=["-O2"], cwd="proj")
    r.ok, r.log, r.diagnostics, r.command, r.timed_out
    compile.archive(tc, ["build/a.o"], "build/liba.a", cwd="proj")
    compile.link(tc, ["build/main.o", "build/liba.a"], "build/main", libs=["-lhipblas"], cwd="proj")

``cwd`` is the project folder; relative paths are relative to it. The compiler reads the project
read-only and writes into a private scratch folder beside the output, which is then moved into
place. Every call returns a :class:`FileResult`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rocmlab import sandbox, settings
from rocmlab.hip import hipcuda, runtime_pch, simulate
from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX, Toolchain, discover, offline_problem
from rocmlab.machine.detect import current
from rocmlab.paths import cache_dir

OUTPUTS = ("exe", "obj", "asm", "cubin", "ptx", "link", "archive", "check", "pre-device", "pre-host")
#: ``check``: what a machine that cannot run the program needs, in half the time of ``exe``: the device code
#: compiled (``--cuda-device-only -c``, with the resource remarks) and, at the same time, the host code checked
#: (``--cuda-host-only -fsyntax-only``). Same diagnostics and resources as a full build; no program is linked.
CACHE_FORMAT = 6
#: Bytes of compiler output kept (remarks for many kernels are long).
COMPILER_OUTPUT_BYTES = 4 << 20
#: The largest file a compiler may write (an object, a program, a listing): a source with a 400 MB static array
#: fails to build instead of filling the disk (RLIMIT_FSIZE; the compiler's own temporary files are in its tmpfs).
COMPILER_FILE_BYTES = 128 << 20

#: How many compilers one process (one grade) runs at once: a check build's device and host halves, or a compile
#: beside the grader's CPU-simulator build. A third waits for a slot (the wait is not its compile time).
COMPILE_SLOTS = 2
_slots = threading.BoundedSemaphore(COMPILE_SLOTS)


def compile_memory() -> int:
    """The memory of one compiler run (the whole run: a cgroup of its own, else the watchdog): an equal share of
    ``settings.COMPILE_MEMORY_BYTES`` per slot, so that the compiles one grade runs at once never hold more than
    that in all. (Two halves of a 2^23-element initializer, each given the whole budget, took 13.9 GB together.)"""
    return settings.COMPILE_MEMORY_BYTES // COMPILE_SLOTS


#: The build cache's size cap: after each new entry the least recently used ones go until it is under this.
CACHE_MAX_BYTES = 2 << 30
#: The PATH the offline compiler sees inside the root.
#: HIP_PATH: hipcc finds its install from /proc/self/exe, which a chroot without /proc (the sandbox's fallback in a
#: container) lacks; /usr is what it finds there anyway.
_ROOT_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp", "HIP_PATH": "/usr"}


# --- toolchain choice ------------------------------------------------------------------------

_FOUND: dict[str, Toolchain | None] = {}


def find_toolchain(kind: str, refresh: bool = False) -> Toolchain | None:
    """:func:`rocmlab.hip.toolchain.discover`, remembered for this process (a warm cache hit must
    not spend its time asking compilers for their versions)."""
    if refresh or kind not in _FOUND:
        _FOUND[kind] = simulate.discover() if kind == simulate.KIND else discover(kind)
    return _FOUND[kind]


def forget_toolchains() -> None:
    """Forget the toolchains found in this process (after installing one, or in tests that hide one)."""
    _FOUND.clear()


def resolve_platform(plat):
    """``plat``, or this machine's platform (:func:`rocmlab.machine.detect.current`) when it is None."""
    if plat is not None:
        return plat

    return current()


def choose(lang: str, target: str, plat=None, toolchain=None) -> tuple[Toolchain | None, str]:
    """(toolchain, "") or (None, the fix). ``toolchain``: a :class:`Toolchain`, a kind
    (``"rocm"``, ``"offline"``, ``"nvcc"``) or None (the machine decides)."""
    if isinstance(toolchain, Toolchain):
        return toolchain, ""
    base = target.split(":")[0]
    if isinstance(toolchain, str):
        kinds = [toolchain]
    elif base.startswith(("sm_", "compute_")):
        kinds = ["nvcc"]
    elif resolve_platform(plat).backend == "rocm":
        kinds = ["rocm", "offline"]
    else:
        kinds = ["offline"]
    for k in kinds:
        tc = find_toolchain(k)
        if tc is not None:
            if not tc.supports(base):
                return None, (f"target {base} is not one {tc.label} builds (it has {', '.join(tc.targets)}): "
                              f"use one of {', '.join(settings.AMD_TARGETS)}")
            return tc, ""
    if "offline" in kinds:
        fixes = [NO_TOOLCHAIN_FIX[k] for k in kinds if k != "offline"] + [offline_problem()]
    else:
        fixes = [NO_TOOLCHAIN_FIX[k] for k in kinds]
    want = "NVIDIA compiler (nvcc)" if kinds == ["nvcc"] else "HIP compiler for AMD targets"
    return None, f"no {want} found for target {target}: " + "; or ".join(f for f in fixes if f)


def gpu_target(kind: str, plat=None) -> str:
    """The target a ``kind`` toolchain builds for when none is given: the GPU here where it is one that toolchain
    builds for (AMD: its gfx; NVIDIA: its sm), else settings.DEFAULT_NVIDIA_TARGET (nvcc) or DEFAULT_TARGET."""
    plat = resolve_platform(plat)
    dev = plat.device
    if kind == "nvcc":
        here = dev.target_id if plat.backend == "cuda" and dev and dev.target_id.startswith("sm_") else ""
        return here or settings.DEFAULT_NVIDIA_TARGET
    if plat.backend == "rocm" and dev and dev.target.startswith("gfx"):
        return dev.target
    return settings.DEFAULT_TARGET


def available(target: str | None = None) -> str:
    """'' when this machine can compile for the AMD ``target`` (default: settings.DEFAULT_TARGET),
    else the reason and the fix. Labs ask this before a cell that needs an AMD compiler."""
    _, fix = choose("hip", target or settings.DEFAULT_TARGET)
    return fix


def prepare_source(source: str, lang: str, tc: Toolchain) -> hipcuda.Translation | None:
    """What the compiler must see: HIP through nvcc is translated to CUDA, CUDA for an AMD
    compiler is hipified. None when the source goes in as it is."""
    if tc.kind == simulate.KIND:    # the CPU simulator: C++ with its own header, or #error for what it cannot run
        return simulate.translate(hipcuda.hipify(source).cuda_source if lang == "cuda" else source)
    if tc.kind == "nvcc" and lang == "hip":
        return hipcuda.translate(source)
    if tc.kind != "nvcc" and lang == "cuda":
        return hipcuda.hipify(source)
    return None


# --- command lines ---------------------------------------------------------------------------

def _opt(flags) -> list[str]:
    return [] if any(str(f).startswith("-O") for f in flags) else ["-O3"]


def command(tc: Toolchain, inputs, output, *, output_kind: str, targets=(), flags=(), include_dirs=(),
            defines=(), libs=(), remarks: bool = False) -> list[str]:
    """The one command line for every output kind (see the module docstring)."""
    if output_kind not in OUTPUTS:
        raise ValueError(f"output_kind={output_kind!r} is not one of {OUTPUTS}")
    inputs = [str(i) for i in ([inputs] if isinstance(inputs, (str, Path)) else inputs)]
    targets = [t for t in ([targets] if isinstance(targets, str) else targets)]
    flags = [str(f) for f in flags]
    pre = [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines]
    if output_kind == "archive":
        return [archiver(tc), "rcs", str(output), *inputs]
    if output_kind == "link":
        return [tc.compiler, *flags, *inputs, *libs, "-o", str(output)]
    if tc.kind == simulate.KIND:
        runtime = simulator_runtime(tc) if output_kind == "exe" else ""
        return simulate.command(tc, inputs, output, output_kind=output_kind, flags=flags, pre=pre, libs=libs,
                                runtime=runtime, target=targets[0] if targets else "")
    if tc.kind == "nvcc":
        if len(targets) != 1:
            raise ValueError("nvcc builds for one target at a time here: pass one sm_XX")
        what = {"exe": [], "obj": ["-c"], "cubin": ["-cubin"], "ptx": ["-ptx"]}.get(output_kind)
        if what is None:
            raise ValueError(f"output_kind={output_kind!r} is for AMD targets; nvcc makes exe, obj, cubin or ptx")
        verbose = ["-Xptxas", "-v"] if output_kind != "ptx" else []
        lineinfo = ["-lineinfo"] if output_kind in ("exe", "obj") else []
        return [tc.compiler, f"-arch={targets[0]}", *_opt(flags), *verbose, *lineinfo, *pre, *flags, *what,
                *inputs, *libs, "-o", str(output)]
    if not targets:
        raise ValueError("no AMD target given: pass targets=('gfx942',) or another of " + ", ".join(settings.AMD_TARGETS))
    what = {"exe": [], "obj": ["-c"], "asm": ["--cuda-device-only", "-S"],
            # clang's own preprocessor output of one pass, with #define/#undef and #include kept (-dD -dI)
            "pre-device": ["--cuda-device-only", "-E", "-dD", "-dI"],
            "pre-host": ["--cuda-host-only", "-E", "-dD", "-dI"]}.get(output_kind)
    if what is None:
        raise ValueError(f"output_kind={output_kind!r} is for nvcc; an AMD compiler makes exe, obj or asm "
                         "(check: see check_commands)")
    if output_kind == "asm" and len(targets) != 1:
        raise ValueError("device assembly is for one target at a time: pass one gfx target")
    rem = ["-Rpass-analysis=kernel-resource-usage"] if remarks else []
    return [tc.compiler, "-x", "hip", *[f"--offload-arch={t}" for t in targets], *_opt(flags), *rem,
            "-Wno-unused-result", *pre, *flags, *what, *inputs,
            *(libs if output_kind == "exe" else []), "-o", str(output)]


def check_commands(tc: Toolchain, source: str, output: str, *, target: str, flags=(), libs=(),
                   pch=(None, None)) -> list[list[list[str]]]:
    """The two halves of a ``check`` build, run at the same time: [the device code compiled to an object with
    the resource remarks], and [the host code compiled, then linked with unresolved symbols as warnings]. The
    link finds what a full link finds (a missing ``main``, an undefined function) without the device image:
    its only expected unresolved symbol is the ``__hip_fatbin_*`` the device half would have provided.
    ``pch``: each half's precompiled runtime header (:mod:`rocmlab.hip.runtime_pch`), or None."""
    rem = ["-Rpass-analysis=kernel-resource-usage"]
    flags = [str(f) for f in flags]
    base = [tc.compiler, "-x", "hip", f"--offload-arch={target}", *_opt(flags)]
    dev_pch, host_pch = (["-include-pch", str(p)] if p else [] for p in pch)
    host_obj = output + ".host.o"
    return [[[*base, *rem, "-Wno-unused-result", *flags, *dev_pch, "--cuda-device-only", "-c", source, "-o", output]],
            [[*base, "-Wno-unused-result", *flags, *host_pch, "--cuda-host-only", "-c", source, "-o", host_obj],
             [tc.compiler, *flags, host_obj, *libs, "-Wl,--warn-unresolved-symbols", "-o", output + ".linkcheck"]]]


def exe_commands(tc: Toolchain, source: str, output: str, *, target: str, flags=(), remarks: bool = True,
                 pch=(None, None), cuid: str) -> list[list[str]]:
    """A program built in three steps instead of hipcc's one, so that each half can read its precompiled
    runtime header: [the device code to an offload bundle], [the host code with that bundle embedded
    (``-fcuda-include-gpubinary``)], [the link]. With the same ``-cuid`` the program is byte for byte the
    one ``hipcc -cuid=X src -o exe`` makes (``tests/hip/whole/test_compile_fast_path.py``)."""
    rem = ["-Rpass-analysis=kernel-resource-usage"] if remarks else []
    flags = [str(f) for f in flags]
    base = [tc.compiler, "-x", "hip", f"--offload-arch={target}", *_opt(flags), f"-cuid={cuid}"]
    dev_pch, host_pch = (["-include-pch", str(p)] if p else [] for p in pch)
    dev_obj, host_obj = output + ".device.o", output + ".host.o"
    return [[*base, *rem, "-Wno-unused-result", *flags, *dev_pch, "--cuda-device-only", "-c", source, "-o", dev_obj],
            [*base, "-Wno-unused-result", *flags, *host_pch, "--cuda-host-only", "-Xclang", "-fcuda-include-gpubinary",
             "-Xclang", dev_obj, "-c", source, "-o", host_obj],
            [tc.compiler, *_opt(flags), *flags, host_obj, "-o", output]]



def pch_command(tc: Toolchain, side: str, target: str, flags, header, output) -> list[str]:
    """The compiler call that writes one half's precompiled runtime header (:mod:`rocmlab.hip.runtime_pch`):
    ``-S`` with ``-emit-pch`` (no object, no link), with the optimization and flags of the builds it serves;
    the simulator's (side ``sim``) is a C++ header PCH of its own runtime."""
    if side == runtime_pch.SIM:
        return simulate.pch_command(tc, header, output, flags=flags)
    flags = [str(f) for f in flags]
    only = "--cuda-device-only" if side == "device" else "--cuda-host-only"
    return [tc.compiler, "-x", "hip", f"--offload-arch={target}", *_opt(flags), "-Wno-unused-result",
            "-Wno-unused-command-line-argument", *flags, only, "-S", str(header), "-Xclang", "-emit-pch",
            "-o", str(output)]


def _pch(tc: Toolchain, side: str, target: str, flags) -> Path | None:
    """One half's PCH (runtime_pch decides when and where; built here, through :func:`run`)."""
    return runtime_pch.pch_for(tc, side, target, flags, build=lambda header, out, cwd: run(
        tc, pch_command(tc, side, target, flags, header, out), cwd=cwd))

_UNRESOLVED = re.compile(r"^(?P<head>.*?)warning: (?P<what>undefined (?:reference to|symbol:?) .*)$")


def link_check_log(log: str) -> tuple[str, bool]:
    """A ``--warn-unresolved-symbols`` link's log as a full link reports it: (log, ok). Unresolved symbols
    other than the device image's ``__hip_fatbin_*`` become errors, with the driver's closing line."""
    out, failed = [], False
    for line in log.splitlines():
        m = _UNRESOLVED.match(line)
        if m:
            if "__hip_fatbin" in m.group("what"):
                continue
            line, failed = m.group("head") + m.group("what"), True
        out.append(line)
    if failed:
        out.append("clang++: error: linker command failed with exit code 1 (use -v to see invocation)")
    return "\n".join(out) + ("\n" if out else ""), not failed


_RUNTIME_LOCK = threading.Lock()     # a build started ahead (rocmlab.course.labs.lab01_hip_programming_model.lab) is waited for, not repeated


def simulator_runtime(tc: Toolchain) -> str:
    """The CPU simulator's runtime (rocmlab/hip/sim/runtime.cpp) compiled once per version, in the cache."""
    obj = cache_dir() / "hipsim" / tc.version / "runtime.o"
    with _RUNTIME_LOCK:
        if not obj.is_file():
            r = compile_file(tc, simulate.RUNTIME_SOURCE, obj, flags=["-O2"], cwd=simulate.SIM_DIR)
            if not r.ok:
                raise RuntimeError(f"the simulator's runtime does not compile (a rocmlab bug): {r.log[-2000:]}")
    return str(obj)


def archiver(tc: Toolchain) -> str:
    """The archiver for this toolchain's objects (inside the root for the offline one)."""
    if tc.kind == "offline":
        return "/usr/bin/llvm-ar-22" if tc.inside("/usr/bin/llvm-ar-22").exists() else "/usr/bin/ar"
    if tc.kind == "rocm":
        cand = Path(tc.compiler).resolve().parent.parent / "llvm" / "bin" / "llvm-ar"
        if cand.exists():
            return str(cand)
    for name in ("llvm-ar", "ar"):
        p = shutil.which(name)
        if p:
            return p
    raise RuntimeError("no archiver found (llvm-ar or ar): apt-get install binutils")


# --- running the compiler ----------------------------------------------------------------------

@dataclass(frozen=True)
class Diagnostic:
    line: int | None        # the cell's or file's own line (1-based); None for link or tool errors
    column: int | None
    severity: str           # error | warning | note
    message: str
    file: str = ""          # the file it is about ("" for the cell itself or a tool)

    def __str__(self) -> str:
        where = f"line {self.line}" + (f":{self.column}" if self.column else "") if self.line else "build"
        if self.file and self.line:
            where = f"{self.file}:{self.line}"
        return f"{where}: {self.severity}: {self.message}"


def _host_paths(cmd, tc: Toolchain, exclude=()) -> list[str]:
    """Existing host folders a command names (sources, -I/-L dirs) that the sandbox would not show:
    for the offline root, those the root lacks; on the host, those outside its system folders.
    They are bound in read-only at the same path."""
    out: list[str] = []
    for arg in cmd[1:]:
        s = str(arg)
        for pre in ("-I", "-L", "-isystem", "-include", "--rocm-path="):
            if s.startswith(pre) and len(s) > len(pre):
                s = s[len(pre):]
                break
        if not s.startswith("/"):
            continue
        p = Path(s)
        d = p if p.is_dir() else p.parent
        if not d.is_dir():
            continue
        if tc.root:
            if tc.inside(str(d)).exists():
                continue
        elif d.resolve().parts[1:2] and d.resolve().parts[1] in sandbox.SYSTEM_DIRS:
            continue
        d = str(d.resolve())
        if any(d == e or d.startswith(e.rstrip("/") + "/") for e in (*exclude, *out)):
            continue
        out.append(d)
    return out


def _env(tc_root: str | None, env: dict | None) -> dict:
    if tc_root:
        return dict(_ROOT_ENV, **(env or {}))
    base = {k: os.environ[k] for k in ("PATH", "CUDA_HOME", "CUDA_PATH", "ROCM_PATH", "HIP_PATH") if k in os.environ}
    return dict(base, **(env or {}))


def _unreadable_inputs(cmd, tc: Toolchain, work: Path) -> str:
    """'' when the compiler's user could read every folder and file the command names, else which one it could
    not and the fix (a fault of the machine: the build is not cached, and the grader does not score it)."""
    bad = sandbox.unreadable(_host_paths([str(c) for c in ["", *cmd]], tc, exclude=(str(work),)))
    if not bad:
        return ""
    return (f"the compiler's user cannot read {bad} (a fault of this machine, not of the source): make it readable "
            "by others (chmod o+r, and o+x for a folder), then build again")


def run(tc: Toolchain, cmd, *, cwd, time_limit: float | None = None, ro_binds=(), env=None,
        memory_bytes: int | None = None) -> sandbox.Completed:
    """Run one compiler (or archiver) command: THE place rocmlab starts a compiler. At most
    :data:`COMPILE_SLOTS` run at once in this process, each with :func:`compile_memory` (or ``memory_bytes``, at
    most that) for all its processes.

    ``cwd`` is the build folder, the only place it can write (a private folder: the sandbox hands
    it to its unprivileged user while the compiler runs). The offline toolchain runs inside its
    ROCm root; rocm and nvcc on the host's own system, read-only; either way ``/etc`` holds
    ``rocmlab.sandbox.TOOL_ETC`` only.
    """
    cwd = str(Path(cwd).resolve())
    cmd = [str(c) for c in cmd]
    share = compile_memory()
    limits = sandbox.Limits(wall_s=time_limit or settings.COMPILE_TIME_LIMIT_S, cpu_s=None,
                            memory_bytes=min(memory_bytes or share, share), processes=None,
                            file_bytes=COMPILER_FILE_BYTES, output_bytes=COMPILER_OUTPUT_BYTES)
    binds = tuple(dict.fromkeys([*map(str, ro_binds), *_host_paths(cmd, tc, exclude=(cwd,))]))
    with _slots:
        return sandbox.run(cmd, limits=limits, root=tc.root or "/", scratch=cwd, ro_binds=binds,
                           env=_env(tc.root, env), cwd=cwd, etc=sandbox.TOOL_ETC)


def run_program(tc_kind: str, root: str | None, cmd, *, scratch, time_limit: float, memory_bytes, output_bytes,
                stdin_data=None, env=None, gpu: bool = False, ro_binds=(), file_bytes: int | None = None,
                scratch_bytes: int | None = None, outputs=()) -> sandbox.Completed:
    """Run a program this driver built: an offline build runs inside the ROCm root it was
    linked against (its libamdhip64 and glibc live there); others on the host. ``scratch_bytes``
    and ``outputs``: a private scratch (see :func:`rocmlab.sandbox.run`)."""
    limits = sandbox.Limits(wall_s=time_limit, memory_bytes=memory_bytes, output_bytes=output_bytes,
                            scratch_bytes=scratch_bytes, **({"file_bytes": file_bytes} if file_bytes else {}))
    return sandbox.run([str(c) for c in cmd], limits=limits, root=root or "/", scratch=str(Path(scratch).resolve()),
                       ro_binds=tuple(dict.fromkeys(str(b) for b in ro_binds)), env=_env(root, env), gpu=gpu,
                       stdin_data=stdin_data, cwd=str(Path(scratch).resolve()), outputs=outputs)


# --- diagnostics ----------------------------------------------------------------------------

_CLANG_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning|note): "
                         r"(?P<msg>.*)$", re.MULTILINE)
_NVCC_DIAG = re.compile(r"^(?P<file>[^(\n]+)\((?P<line>\d+)\): (?P<sev>error|warning|remark)(?: #[\w-]+)?: "
                        r"(?P<msg>.*)$", re.MULTILINE)
_TOOL_ERR = re.compile(r"^(?:.*undefined (?:reference to|symbol:?) .*|ptxas (?:error|fatal)\s*:.*|"
                       r"(?:ld|ld\.lld|lld|/usr/bin/ld): error: .*|.*error: linker command failed.*|nvlink error.*|"
                       r"bwrap: .*)$", re.MULTILINE)


def is_clang_error(line: str) -> bool:
    """``PROGRAM: error: ...`` where PROGRAM is a clang driver (``clang++-22: error: ...``), found by a split,
    not by ``\\S*clang\\S*``, which backtracks quadratically on a long line a submission can put into the log
    (e.g. a 400 KB undefined symbol)."""
    head, sep, _ = line.partition(": error: ")
    return bool(sep) and "clang" in head and not any(ch.isspace() for ch in head)


def _tool_errors(log: str) -> list[str]:
    """Tool errors of a log, in order: the lines _TOOL_ERR matches, and a clang driver's errors."""
    return [line for line in log.splitlines() if _TOOL_ERR.match(line) or is_clang_error(line)]


def parse_diagnostics(log: str, cell_file: str, line_offset: int = 0) -> list[Diagnostic]:
    """Compiler messages about ``cell_file`` with its own line numbers (remarks are left out);
    errors in other files (headers) keep their file and line; link and tool errors have no line."""
    out: list[Diagnostic] = []
    base = os.path.basename(cell_file)
    seen = set()
    for rx in (_CLANG_DIAG, _NVCC_DIAG):
        header_error = None      # an error inside a header waits for the note that points at the cell
        for m in rx.finditer(log):
            sev = "error" if m.group("sev") == "fatal error" else m.group("sev")
            if sev == "remark":
                continue
            msg = m.group("msg").strip()
            col = int(m.group("col")) if "col" in m.groupdict() and m.group("col") else None
            fname = m.group("file").strip()
            mine = os.path.basename(fname) == base
            if header_error is not None and (sev != "note" or mine):
                if sev == "note" and mine:   # e.g. a static_assert in HIP's headers, "requested here"
                    line = int(m.group("line")) - line_offset
                    header_error = Diagnostic(line if line >= 1 else None, col, "error",
                                              f"{header_error.message} [in {os.path.basename(header_error.file)}]",
                                              header_error.file)
                else:
                    header_error = Diagnostic(None, None, "error", f"{header_error.file}: {header_error.message}",
                                              header_error.file)
                if (header_error.line, "error", header_error.message) not in seen:
                    seen.add((header_error.line, "error", header_error.message))
                    out.append(header_error)
                header_error = None
                if sev == "note":
                    continue
            if mine:
                line = int(m.group("line")) - line_offset
                d = Diagnostic(line if line >= 1 else None, col, sev, msg)
            elif sev == "error":
                header_error = Diagnostic(None, None, sev, msg, f"{fname}:{m.group('line')}")
                continue
            else:
                continue
            if (d.line, d.severity, d.message) not in seen:
                seen.add((d.line, d.severity, d.message))
                out.append(d)
        if header_error is not None and (None, "error", header_error.message) not in seen:
            out.append(Diagnostic(None, None, "error", f"{header_error.file}: {header_error.message}",
                                  header_error.file))
    if not any(d.severity == "error" for d in out):
        for line in _tool_errors(log):
            text = line.strip()
            if "linker command failed" in text and any("undefined" in d.message for d in out):
                continue
            out.append(Diagnostic(None, None, "error", text))
    out.sort(key=lambda d: (d.line is None, d.line or 0))
    return out


def first_error(log: str) -> Diagnostic | None:
    """The first error of a log, wherever it is (file diagnostics first, then tool errors)."""
    m = _CLANG_DIAG.search(log.replace("fatal error:", "error:"))
    while m and m.group("sev") != "error":
        m = _CLANG_DIAG.search(log, m.end())
    if m:
        return Diagnostic(int(m.group("line")), int(m.group("col")), "error", m.group("msg").strip(), m.group("file"))
    t = _tool_errors(log)
    return Diagnostic(None, None, "error", t[0].strip()) if t else None


# --- files (rocmlab port) ---------------------------------------------------------------------

@dataclass
class FileResult:
    ok: bool
    output: str
    command: list[str]
    log: str
    duration_s: float
    timed_out: bool = False
    diagnostics: list[Diagnostic] = field(default_factory=list)
    explain: str = ""


def file_result(tc, cmd_for, out: Path, cwd: Path, time_limit, src_name: str = "") -> FileResult:
    """Run ``cmd_for(output path)`` with a private scratch folder beside ``out`` (so parallel
    compiles never share one), then move the output into place. ``cwd`` (the project) is bound
    read-only: sources and headers are read from there."""
    t0 = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=".rocmlab-cc-", dir=out.parent))
    cmd = cmd_for(scratch / out.name)
    shown = [c.replace(str(scratch), str(out.parent)) for c in cmd]
    try:
        try:
            done = run(tc, cmd, cwd=scratch, time_limit=time_limit, ro_binds=(str(cwd),))
        except (OSError, sandbox.SandboxError) as exc:
            return FileResult(False, str(out), shown, f"cannot run {cmd[0]}: {exc}", time.monotonic() - t0,
                              diagnostics=[Diagnostic(None, None, "error", f"cannot run {cmd[0]}: {exc}")])
        ok = done.ok and (scratch / out.name).exists()
        if ok:
            os.replace(scratch / out.name, out)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    log = (done.stderr + done.stdout).replace(str(scratch), str(out.parent))
    diags = parse_diagnostics(log, src_name) if src_name else []
    if not ok and not any(d.severity == "error" for d in diags):
        fe = first_error(log)
        diags.append(fe or Diagnostic(None, None, "error", f"the compiler {done.explain()}"))
    return FileResult(ok, str(out), shown, log, time.monotonic() - t0, done.timed_out, diags, done.explain())


def _abs(p, cwd: Path) -> Path:
    p = Path(p)
    return p if p.is_absolute() else cwd / p


def compile_file(tc: Toolchain, src, obj, *, targets=None, include_dirs=(), defines=(), flags=(), cwd=None,
                 time_limit: float | None = None) -> FileResult:
    """Compile one translation unit to an object (``-c``) for ``targets`` (default: the GPU here, else
    settings.DEFAULT_TARGET: :func:`gpu_target`), through the sandbox. ``cwd``: the project folder (writable)."""
    cwd = Path(cwd or Path(src).parent).resolve()
    obj = _abs(obj, cwd)
    targets = tuple(targets or (gpu_target(tc.kind),))
    return file_result(tc, lambda o: command(tc, [_abs(src, cwd)], o, output_kind="obj", targets=targets,
                                              flags=flags, include_dirs=[_abs(d, cwd) for d in include_dirs],
                                              defines=defines),
                        obj, cwd, time_limit, Path(src).name)


def link(tc: Toolchain, objects, output, *, libs=(), flags=(), cwd=None, time_limit: float | None = None) -> FileResult:
    """Link objects and archives into a program (hipcc adds the HIP runtime)."""
    cwd = Path(cwd or Path(output).parent).resolve()
    out = _abs(output, cwd)
    objs = [_abs(o, cwd) for o in objects]
    return file_result(tc, lambda o: command(tc, objs, o, output_kind="link", flags=flags, libs=libs),
                        out, cwd, time_limit)


def archive(tc: Toolchain, objects, output, *, cwd=None, time_limit: float | None = None) -> FileResult:
    """A static archive of objects (``ar rcs``), made with the toolchain's archiver."""
    cwd = Path(cwd or Path(output).parent).resolve()
    out = _abs(output, cwd)
    out.unlink(missing_ok=True)
    objs = [_abs(o, cwd) for o in objects]
    return file_result(tc, lambda o: command(tc, objs, o, output_kind="archive"), out, cwd, time_limit or 120.0)


# --- sources with a cache (cells) -------------------------------------------------------------

@dataclass
class Outcome:
    """One cached compile of a source text."""

    ok: bool
    log: str
    diagnostics: list[Diagnostic]
    directory: str            # where the source and output live (the cache entry)
    source_file: str          # file name of the source in ``directory``
    output_file: str          # file name of the output in ``directory``
    command: list[str]
    key: str
    cached: bool
    duration_s: float
    compiled_source: str
    translation: dict | None = None   # unknown_names, notes of the HIP<->CUDA step
    machine_fault: str = ""           # why a failure is the machine's, not the source's ('' otherwise): not cached

    @property
    def output(self) -> str:
        return str(Path(self.directory) / self.output_file)

    def read(self) -> str:
        return Path(self.output).read_text(errors="replace")


def builds_dir() -> Path:
    p = cache_dir() / "hip-builds"
    p.mkdir(parents=True, exist_ok=True)
    return p


def clear_cache() -> int:
    """Delete every cached build (and the precompiled runtime headers); returns how many were removed."""
    n = runtime_pch.clear()
    for child in builds_dir().iterdir():
        shutil.rmtree(child, ignore_errors=True)
        n += 1
    return n


def cache_key(**parts) -> str:
    return hashlib.sha256(json.dumps({"format": CACHE_FORMAT, **parts}, sort_keys=True,
                                     default=str).encode()).hexdigest()


_OUT_NAME = {"exe": "", "obj": ".o", "asm": ".s", "cubin": ".cubin", "ptx": ".ptx", "check": ".device.o",
             "pre-device": ".dev.i", "pre-host": ".host.i"}


def _run_check(tc: Toolchain, work: Path, src: Path, out: Path, target: str, flags,
               time_limit: float | None = None) -> tuple[sandbox.Completed, list[str]]:
    """Both halves of a ``check`` build at once, each in a folder of its own (the sandbox hands its scratch
    folder to the run's user); the device object is moved to ``out``. Each half reads the runtime headers
    from its precompiled header where :func:`runtime_pch.applies` (built first if missing; a half whose PCH
    clang refuses runs again without it). Returns one Completed for both: ok only when both are, their
    outputs joined (device first, as a full build prints them)."""
    from concurrent.futures import ThreadPoolExecutor

    use_pch = runtime_pch.applies(src.read_text(errors="replace"), flags)
    folders = []
    for side in runtime_pch.SIDES:
        d = work / side
        d.mkdir()
        shutil.copyfile(src, d / src.name)
        folders.append(d)
    used: list = [None, None]

    def build_half(i: int, pch) -> sandbox.Completed:
        plan = check_commands(tc, src.name, out.name, target=target, flags=flags,
                              pch=(pch, None) if i == 0 else (None, pch))[i]
        steps = []
        for j, cmd in enumerate(plan):
            done = run(tc, cmd, cwd=folders[i], time_limit=time_limit)
            if i == 1 and j == 1:     # the link check: unresolved symbols are warnings there, errors here
                stderr, linked = link_check_log(done.stderr)
                done = replace(done, stderr=stderr, returncode=done.returncode if not linked or done.returncode else 0)
                if not linked and done.returncode == 0:
                    done = replace(done, returncode=1)
            steps.append(done)
            if not done.ok:
                break
        last = steps[-1]
        here = str(folders[i]) + os.sep       # messages name the cell as a full build in ``work`` would
        return replace(last, stdout="".join(d.stdout for d in steps).replace(here, ""),
                       stderr="".join(d.stderr for d in steps).replace(here, ""),
                       duration_s=sum(d.duration_s for d in steps))

    def half(i: int) -> sandbox.Completed:
        pch = _pch(tc, runtime_pch.SIDES[i], target, flags) if use_pch else None
        done = build_half(i, pch)
        if pch and not done.ok and runtime_pch.refused(done.stdout + done.stderr):
            pch = None
            done = build_half(i, None)
        used[i] = pch
        return done

    with ThreadPoolExecutor(2) as pool:
        dev, host = pool.map(half, range(2))
    if (folders[0] / out.name).exists():
        os.replace(folders[0] / out.name, out)
    for d in folders:
        shutil.rmtree(d, ignore_errors=True)
    worst = dev if not dev.ok else host
    joined = replace(worst, stdout=dev.stdout + host.stdout, stderr=dev.stderr + host.stderr,
                     duration_s=max(dev.duration_s, host.duration_s), timed_out=dev.timed_out or host.timed_out,
                     stdout_truncated=dev.stdout_truncated or host.stdout_truncated,
                     stderr_truncated=dev.stderr_truncated or host.stderr_truncated)
    # one argument list, as a shell would read it: the device half '&' the host half '&&' its link check
    plan = check_commands(tc, src.name, out.name, target=target, flags=flags, pch=used)
    cmds = [*plan[0][0], "&", *plan[1][0], "&&", *plan[1][1]]
    return joined, cmds


def _run_exe(tc: Toolchain, work: Path, cmd: list[str], src_name: str, out_name: str, target: str, flags,
             remarks: bool, cuid: str, time_limit: float | None) -> tuple[sandbox.Completed, list[str]]:
    """A program from its halves, each reading its precompiled runtime header (:func:`exe_commands`), where
    both PCHs are there; else (or if clang refuses one) hipcc's own one-step build ``cmd``. Returns the run
    (the steps' outputs joined) and the commands that made the program."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:      # both built at once where this is their second use
        pch = tuple(pool.map(lambda side: _pch(tc, side, target, flags), runtime_pch.SIDES))
    if None in pch:
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    plan = exe_commands(tc, src_name, out_name, target=target, flags=flags, remarks=remarks, pch=pch, cuid=cuid)
    steps = []
    for step in plan:
        steps.append(run(tc, step, cwd=work, time_limit=time_limit))
        if not steps[-1].ok:
            break
    last = steps[-1]
    if not last.ok and runtime_pch.refused(last.stdout + last.stderr):
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    for leftover in (out_name + ".device.o", out_name + ".host.o"):
        (work / leftover).unlink(missing_ok=True)
    done = replace(last, stdout="".join(d.stdout for d in steps), stderr="".join(d.stderr for d in steps),
                   duration_s=sum(d.duration_s for d in steps))
    return done, [a for i, step in enumerate(plan) for a in ([*step, "&&"] if i < len(plan) - 1 else step)]


def _run_simulator_build(tc: Toolchain, work: Path, cmd: list[str], flags,
                         time_limit: float | None) -> tuple[sandbox.Completed, list[str]]:
    """A simulator build with its header read from a PCH (:data:`runtime_pch.SIM`) where there is one:
    ``-include hip/hip_runtime.h`` becomes ``-include-pch``; again without it if clang refuses it."""
    at = next((i for i in range(len(cmd) - 1) if cmd[i:i + 2] == ["-include", "hip/hip_runtime.h"]), None)
    pch = _pch(tc, runtime_pch.SIM, "", flags) if at is not None else None
    if pch is None:
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    with_pch = [*cmd[:at], "-include-pch", str(pch), *cmd[at + 2:]]
    done = run(tc, with_pch, cwd=work, time_limit=time_limit)
    if not done.ok and runtime_pch.refused(done.stdout + done.stderr):
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    return done, with_pch


def _run_asm(tc: Toolchain, work: Path, cmd: list[str], src_name: str, target: str, flags,
             time_limit: float | None) -> tuple[sandbox.Completed, list[str]]:
    """The device assembly with the device half's precompiled runtime header (again without it if clang
    refuses it). Returns the run and the command that made the output."""
    pch = _pch(tc, "device", target, flags)
    if pch is None:
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    at = cmd.index(src_name)
    with_pch = [*cmd[:at], "-include-pch", str(pch), *cmd[at:]]
    done = run(tc, with_pch, cwd=work, time_limit=time_limit)
    if not done.ok and runtime_pch.refused(done.stdout + done.stderr):
        return run(tc, cmd, cwd=work, time_limit=time_limit), cmd
    return done, with_pch


def compile_source(source: str, tc: Toolchain, *, lang: str = "hip", output_kind: str = "exe",
                   target: str, flags=(), stem: str = "cell", use_cache: bool = True,
                   remarks: bool | None = None, time_limit: float | None = None) -> Outcome:
    """Compile a source text (a cell) once per (source, toolchain, target, flags, output kind):
    a second call returns the cached outcome at once. Failures are cached too."""
    start = time.monotonic()
    tr = prepare_source(source, lang, tc)
    compiled = tr.cuda_source if tr else source
    trans = {"unknown_names": list(tr.unknown_names), "notes": list(tr.notes)} if tr else None
    remarks = output_kind in ("exe", "obj") if remarks is None else remarks
    key = cache_key(source=source, lang=lang, kind=output_kind, target=target, flags=list(flags),
                    toolchain=[tc.kind, tc.compiler, tc.version, tc.root], translation=hipcuda.VERSION,
                    remarks=remarks)
    final = builds_dir() / key[:24]
    meta = final / "outcome.json"
    if use_cache and meta.is_file():
        try:
            d = json.loads(meta.read_text())
            d["diagnostics"] = [Diagnostic(**x) for x in d["diagnostics"]]
            res = Outcome(**d)
            if not res.ok or Path(res.output).exists():
                os.utime(meta)           # recently used: the cache cap removes the least recently used first
                res.cached, res.duration_s = True, time.monotonic() - start
                return res
        except (OSError, ValueError, TypeError, KeyError):
            pass   # a damaged entry: build it again
    work = Path(tempfile.mkdtemp(prefix=f"tmp-{os.getpid()}-", dir=builds_dir()))   # the pid: see sandbox.processes.sweep_stale
    stem = re.sub(r"\W", "_", stem) or "cell"
    src = work / (stem + (".cu" if tc.kind == "nvcc" else ".hip"))
    src.write_text(compiled)
    out = work / (stem + _OUT_NAME[output_kind])
    base = target.split(":")[0] if tc.kind == "nvcc" else target
    if output_kind == "check" and tc.kind == "nvcc":
        raise ValueError("output_kind='check' is for AMD targets; nvcc builds exe, obj, cubin or ptx")
    cmd = [] if output_kind == "check" else command(tc, [src.name], out.name, output_kind=output_kind,
                                                    targets=(base,), flags=flags, remarks=remarks)
    try:
        if output_kind == "check":
            done, cmd = _run_check(tc, work, src, out, base, flags, time_limit)
        elif output_kind == "exe" and tc.kind not in ("nvcc", simulate.KIND) and runtime_pch.applies(compiled, flags):
            done, cmd = _run_exe(tc, work, cmd, src.name, out.name, base, flags, remarks, key[:16], time_limit)
        elif tc.kind == simulate.KIND:
            done, cmd = _run_simulator_build(tc, work, cmd, flags, time_limit)
        elif output_kind == "asm" and runtime_pch.applies(compiled, flags):
            done, cmd = _run_asm(tc, work, cmd, src.name, base, flags, time_limit)
        else:
            done = run(tc, cmd, cwd=work, time_limit=time_limit)
    except BaseException:      # an interrupt (or a sandbox that cannot start) leaves no half-built folder
        shutil.rmtree(work, ignore_errors=True)
        raise
    log = (done.stdout + done.stderr).replace(str(work) + os.sep, "")
    ok = done.ok and out.exists()
    if ok and done.shown and output_kind in ("asm", "pre-device", "pre-host"):
        # the sandbox's fallback showed the compiler a folder at another path: the listing names the host's
        out.write_text(done.host_paths(out.read_text(errors="replace")))
    diags = parse_diagnostics(log, src.name)
    if not ok and not any(d.severity == "error" for d in diags):
        diags.append(Diagnostic(None, None, "error", f"the compiler {done.explain()}" if not done.ok
                                else "the compiler made no output"))
    # a failure of the machine is not the source's: never cached. Told apart by what the machine refuses (a time
    # limit, a signal, the sandbox, a file the compiler's user may not read), never by the compiler's words alone
    fault = "" if ok else _unreadable_inputs(cmd, tc, work)
    if fault:
        diags.append(Diagnostic(None, None, "error", fault))
    res = Outcome(ok, log, diags, str(final), src.name, out.name, cmd, key, False, 0.0, compiled, trans, fault)
    machine_fault = bool(fault) or done.timed_out or done.returncode is None or done.returncode < 0 or "bwrap:" in log
    if use_cache and (ok or not machine_fault):
        (work / "outcome.json").write_text(json.dumps(_outcome_json(res)))
        try:
            os.replace(work, final)
        except OSError:   # a concurrent build of the same key won, or a stale entry: replace it
            shutil.rmtree(final, ignore_errors=True)
            try:
                os.replace(work, final)
            except OSError:
                shutil.rmtree(work, ignore_errors=True)
        prune_cache(keep=final)
    else:
        res.directory = str(work)
    res.duration_s = time.monotonic() - start
    return res


def _entry_bytes(entry: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(entry):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except OSError:
                pass
    return total


def prune_cache(max_bytes: int | None = None, keep: Path | None = None) -> int:
    """Remove the least recently used cache entries until the cache holds at most ``max_bytes``
    (default CACHE_MAX_BYTES); ``keep`` (the entry just made) stays. Returns how many were removed."""
    limit = CACHE_MAX_BYTES if max_bytes is None else max_bytes
    entries = []
    for child in builds_dir().iterdir():
        if child.name.startswith("tmp-"):        # a build in progress (here or in a parallel grader)
            continue
        meta = child / "outcome.json"
        try:
            used = meta.stat().st_mtime if meta.exists() else child.stat().st_mtime
        except OSError:
            continue
        entries.append((used, child, _entry_bytes(child)))
    total = sum(b for _, _, b in entries)
    removed = 0
    for _, child, size in sorted(entries, key=lambda e: e[0]):
        if total <= limit:
            break
        if keep is not None and child == keep:
            continue
        shutil.rmtree(child, ignore_errors=True)
        total -= size
        removed += 1
    return removed


def _outcome_json(o: Outcome) -> dict:
    d = asdict(o)
    d["diagnostics"] = [asdict(x) for x in o.diagnostics]
    return d
