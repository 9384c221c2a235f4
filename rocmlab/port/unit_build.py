"""Compile every translation unit of a port (in parallel), link where there is a main, and
name the first error of each file with a category a developer can act on.

Every compile, archive and link goes through the one compiler driver,
:mod:`rocmlab.hip.compile` (and so through the sandbox): ``rocm`` (hipcc) when there is a ROCm
install, else ``offline`` (the ROCm 7.2.4 root). Objects are built with ``-c``; the objects
without a ``main`` go into one static archive, and each file with a ``main`` is linked against
it (the linker takes only the members it needs).
"""

from __future__ import annotations

import hashlib
import os
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import settings
from rocmlab.hip import compile as driver
from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX, offline_problem
from rocmlab.port.diagnose import categorise, first_error
from rocmlab.status import BUILD, check_status

COMPILE_TIMEOUT_S = settings.COMPILE_TIME_LIMIT_S


@dataclass
class UnitResult:
    path: str                 # ported file, relative to OUT
    source: str               # original file, relative to SRC
    status: str               # a build step: ok | failed | timeout
    category: str
    error: str = ""           # the first error, "file:line:col: message"
    error_file: str = ""
    error_line: int = 0
    has_main: bool = False
    duration_s: float = 0.0
    command: list[str] = field(default_factory=list)
    log_tail: str = ""

    def __post_init__(self):
        check_status(self.status, BUILD, f"{self.path}: status")

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class LinkResult:
    program: str              # output binary, relative to OUT
    main: str                 # the ported file with main()
    status: str               # a build step: ok | failed | not-linked
    category: str
    error: str = ""
    duration_s: float = 0.0
    command: list[str] = field(default_factory=list)

    def __post_init__(self):
        check_status(self.status, BUILD, f"{self.program}: status")

    def to_json(self) -> dict:
        return asdict(self)


def choose_toolchain(kind: str = "auto"):
    """The Toolchain for the port: ROCm's hipcc when present, else the offline ROCm root."""

    kinds = ("rocm", "offline") if kind == "auto" else (kind,)
    for k in kinds:
        tc = driver.find_toolchain(k)
        if tc is not None:
            return tc
    fixes = "; or ".join(offline_problem() if k == "offline" else NO_TOOLCHAIN_FIX[k] for k in kinds)
    raise RuntimeError(f"no HIP compiler found ({', '.join(kinds)}): {fixes}")


def log_name(rel: str, limit: int = 200) -> str:
    """The compile log's file name for ``rel``: the path flattened, and when that is longer than one file
    name may be (255 bytes), its tail with a hash of the whole path in front."""

    flat = rel.replace("/", "__") + ".log"
    if len(flat.encode()) <= limit:
        return flat
    digest = hashlib.sha256(rel.encode()).hexdigest()[:16]
    tail = flat.encode()[-(limit - 17):].decode(errors="ignore")
    return f"{digest}-{tail}"


PORT_FLAGS = ("-O2", "-std=c++17", "-w", "-ferror-limit=5")
#: A ``.c`` file is C, as nvcc's host compiler (gcc) compiled it: gnu17, with what gcc before 14 accepted in old C
#: (implicit int, implicit declarations, int/pointer conversions, malloc without a cast) as warnings, not errors.
C_DIALECT = ("-x", "c", "-std=gnu17", "-Wno-error=implicit-int", "-Wno-error=implicit-function-declaration",
             "-Wno-error=int-conversion", "-Wno-error=incompatible-pointer-types")
C_FLAGS = ("-O2", "-w", "-ferror-limit=5")


def is_c(rel: str) -> bool:
    """A C source (compiled as C, never as HIP C++)."""
    return rel.endswith(".c")


def c_command(tc, src: Path, obj: Path, include_dirs, defines=(), extra_flags=()) -> list[str]:
    """The object command line for a C file: the toolchain's compiler in C mode (no GPU code in C)."""
    return [tc.compiler, *C_DIALECT, *C_FLAGS, *[f"-I{d}" for d in include_dirs], *[f"-D{d}" for d in defines],
            *extra_flags, "-c", str(src), "-o", str(obj)]


def compile_command(tc, src: Path, obj: Path, targets: tuple[str, ...], include_dirs, extra_flags=()) -> list[str]:
    """The driver's object command line for one ported file."""
    return driver.command(tc, [src], obj, output_kind="obj", targets=targets, flags=(*PORT_FLAGS, *extra_flags),
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


def _compile_one(tc, out_root: Path, build_dir: Path, rel: str, src_rel: str, targets, include_dirs, extra_flags,
                 main: bool, defines=()) -> UnitResult:
    obj = build_dir / "obj" / (rel + ".o")
    if is_c(rel):
        r = driver.file_result(tc, lambda o: c_command(tc, out_root / rel, o, include_dirs, defines), obj,
                                out_root.resolve(), COMPILE_TIMEOUT_S, Path(rel).name)
    else:
        r = driver.compile_file(tc, out_root / rel, obj, targets=targets, include_dirs=include_dirs,
                                defines=defines, flags=(*PORT_FLAGS, *extra_flags), cwd=out_root,
                                time_limit=COMPILE_TIMEOUT_S)
    cmd, dt, log = r.command, r.duration_s, r.log
    (build_dir / "logs").mkdir(parents=True, exist_ok=True)
    (build_dir / "logs" / log_name(rel)).write_text(" ".join(cmd) + "\n\n" + log)
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


def compile_all(tc, out_root: Path, units: dict[str, str], mains: set[str], targets=settings.AMD_TARGETS[:1],
                include_dirs=(), compat: bool = False, workers: int | None = None, extra_flags=(),
                build_dir: Path | None = None, progress=None, defines=()) -> list[UnitResult]:
    """Compile ``units`` ({ported rel: source rel}) in parallel; results in the order of ``units``.

    ``compat`` is accepted for old callers and ignored: ROCm 7.2's own headers have the warp-sync
    builtins, so there is no compatibility header any more."""
    build_dir = build_dir or out_root / ".rocmlab-port"
    build_dir.mkdir(parents=True, exist_ok=True)
    workers = max(1, workers or os.cpu_count() or 1)
    inc = [str(out_root / d) if not os.path.isabs(d) else d for d in include_dirs]

    def one(item):
        rel, src_rel = item
        r = _compile_one(tc, out_root, build_dir, rel, src_rel, targets, inc, extra_flags, rel in mains, defines)
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
