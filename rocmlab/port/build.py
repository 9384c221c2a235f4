"""Compile every translation unit of a port (in parallel), link where there is a main, and
name the first error of each file with a category a developer can act on.

Toolchains come from :func:`rocmlab.hip.toolchain.discover`: ``rocm`` (hipcc) when there is a
ROCm install, else ``offline`` (Debian's clang-19 with HIP 5.2 headers, gfx942/gfx90a). Objects
are built with ``-c``; the objects without a ``main`` go into one static archive, and each file
with a ``main`` is linked against it (the linker takes only the members it needs).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab.port.diagnose import (  # noqa: F401  (re-exported: build.CATEGORIES, build.categorise, ...)
    CATEGORIES, LIBRARIES, categorise, first_error, has_main, libraries_needed)

COMPAT_HEADER = Path(__file__).parent / "compat" / "rocmlab_hip_warp_sync_compat.h"
COMPILE_TIMEOUT_S = 300.0

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
    """(Toolchain, note) for the port: ROCm's hipcc when present, else the offline clang."""
    from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX, discover

    kinds = ("rocm", "offline") if kind == "auto" else (kind,)
    for k in kinds:
        tc = discover(k)
        if tc is not None:
            return tc
    fixes = "; or ".join(NO_TOOLCHAIN_FIX[k] for k in kinds)
    raise RuntimeError(f"no HIP compiler found ({', '.join(kinds)}): {fixes}")


def log_name(rel: str, limit: int = 200) -> str:
    """The compile log's file name for ``rel``: the path flattened, and when that is longer than one file
    name may be (255 bytes), its tail with a hash of the whole path in front."""
    import hashlib

    flat = rel.replace("/", "__") + ".log"
    if len(flat.encode()) <= limit:
        return flat
    digest = hashlib.sha256(rel.encode()).hexdigest()[:16]
    tail = flat.encode()[-(limit - 17):].decode(errors="ignore")
    return f"{digest}-{tail}"


def make_shim(build_dir: Path) -> Path:
    """A folder whose hip/hip_runtime.h includes the real one and then the compat header."""
    shim = build_dir / "rocmlab-compat-shim"
    (shim / "hip").mkdir(parents=True, exist_ok=True)
    (shim / "hip" / "hip_runtime.h").write_text(
        "// rocmlab port: offline compile shim (not part of the port). Adds ROCm 6.2+ warp-sync builtins.\n"
        "#ifndef ROCMLAB_SHIM_HIP_RUNTIME_H\n#define ROCMLAB_SHIM_HIP_RUNTIME_H\n"
        "#include_next <hip/hip_runtime.h>\n"
        f'#include "{COMPAT_HEADER}"\n#endif\n')
    return shim


def compile_command(tc, src: Path, obj: Path, archs: tuple[str, ...], include_dirs, shim: Path | None,
                    extra_flags=()) -> list[str]:
    flags = ["-c", "-O2", "-std=c++17", "-w", "-ferror-limit=5"]
    if shim is not None:
        flags.append(f"-I{shim}")
    flags += [f"-I{d}" for d in include_dirs]
    flags += list(extra_flags)
    if tc.kind == "offline":
        extra = [f"--offload-arch={a}" for a in archs[1:]]
        return tc.offline.compile_command(str(src), str(obj), archs[0], tuple(extra + flags))
    return [tc.compiler, "-x", "hip", *[f"--offload-arch={a}" for a in archs], *flags, str(src), "-o", str(obj)]


def _archiver(tc) -> str:
    for name in ("llvm-ar-19", "llvm-ar", "ar"):
        p = shutil.which(name)
        if p:
            return p
    if tc.kind == "rocm":
        cand = Path(tc.compiler).resolve().parent.parent / "llvm" / "bin" / "llvm-ar"
        if cand.exists():
            return str(cand)
    raise RuntimeError("no archiver found (llvm-ar or ar): apt-get install llvm-19 binutils")


def link_command(tc, objs: list[Path], archive: Path | None, out: Path, libs=()) -> list[str]:
    if tc.kind == "offline":
        base = [tc.compiler, f"--rocm-path={tc.offline.rocm_path}"]
    else:
        base = [tc.compiler]
    return [*base, *map(str, objs), *([str(archive)] if archive else []), "-lamdhip64", *libs, "-o", str(out)]


@dataclass
class _Ran:
    ok: bool
    timed_out: bool
    stdout: str
    stderr: str


def _run(cmd, timeout_s: float, cwd: Path, env=None, output_bytes: int = 256 << 10) -> _Ran:
    """Run a compiler in its own process group (killed whole on timeout). No preexec_fn, so it is
    safe from the compile thread pool."""
    try:
        proc = subprocess.Popen([str(c) for c in cmd], cwd=str(cwd), env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError as exc:
        return _Ran(False, False, "", f"cannot run {cmd[0]}: {exc.strerror}")
    try:
        out, err = proc.communicate(timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        timed_out = True
    dec = lambda b: b[-output_bytes:].decode(errors="replace")  # noqa: E731
    return _Ran(proc.returncode == 0 and not timed_out, timed_out, dec(out), dec(err))


def _inside(f: str, root: Path) -> bool:
    p = Path(f) if os.path.isabs(f) else root / f
    try:
        p.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _compile_one(tc, out_root: Path, build_dir: Path, rel: str, src_rel: str, archs, include_dirs, shim, extra_flags,
                 main: bool) -> UnitResult:
    obj = build_dir / "obj" / (rel + ".o")
    obj.parent.mkdir(parents=True, exist_ok=True)
    cmd = compile_command(tc, out_root / rel, obj, archs, include_dirs, shim, extra_flags)
    t0 = time.monotonic()
    done = _run(cmd, COMPILE_TIMEOUT_S, out_root, tc.env())
    dt = time.monotonic() - t0
    log = done.stderr + done.stdout
    (build_dir / "logs").mkdir(parents=True, exist_ok=True)
    (build_dir / "logs" / log_name(rel)).write_text(" ".join(cmd) + "\n\n" + log)
    if done.timed_out:
        return UnitResult(rel, src_rel, "timeout", "timeout", f"stopped after {COMPILE_TIMEOUT_S:.0f} s", has_main=main,
                          duration_s=dt, command=cmd)
    if done.ok and obj.exists():
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


def compile_all(tc, out_root: Path, units: dict[str, str], mains: set[str], archs=("gfx942",), include_dirs=(),
                compat: bool = False, workers: int | None = None, extra_flags=(), build_dir: Path | None = None,
                progress=None) -> list[UnitResult]:
    """Compile ``units`` ({ported rel: source rel}) in parallel; results in the order of ``units``."""
    build_dir = build_dir or out_root / ".rocmlab-port"
    build_dir.mkdir(parents=True, exist_ok=True)
    shim = make_shim(build_dir) if compat else None
    workers = max(1, workers or os.cpu_count() or 1)
    inc = [str(out_root / d) if not os.path.isabs(d) else d for d in include_dirs]

    def one(item):
        rel, src_rel = item
        r = _compile_one(tc, out_root, build_dir, rel, src_rel, archs, inc, shim, extra_flags, rel in mains)
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
        archive.unlink(missing_ok=True)
        done = _run([_archiver(tc), "rcs", str(archive), *map(str, lib_objs)], 120, out_root)
        if not done.ok:
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
        cmd = link_command(tc, [obj(r)], archive, program, libs)
        t0 = time.monotonic()
        done = _run(cmd, COMPILE_TIMEOUT_S, out_root, tc.env())
        dt = time.monotonic() - t0
        log = done.stderr + done.stdout
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
