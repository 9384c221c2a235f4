"""``port(src, out)``: hipify a CUDA project into a new folder, fix it, compile it, report on it."""

from __future__ import annotations

import errno
import json
import os
import posixpath
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import settings
from rocmlab.cuda2hip import translate
from rocmlab.port import cuda_removed, diagnose, run_compare, unit_build
from rocmlab.port.inputs import (SOURCE_SUFFIXES, TU_SUFFIXES, PortInputError, Problem, Project, check_request,
                                  collect)
from rocmlab.port.page import write_reports
from rocmlab.cuda2hip.scan import scan_project

REPORT_JSON = "rocmlab-port.json"
REPORT_HTML = "rocmlab-port.html"
MARKER = ".rocmlab-port"
EXTERNAL = "external"          # OUT/external/<n>-<name>/: ported copies of headers read from -I folders outside SRC
MAX_EXTERNAL_FILES = 2000
#: What a header read from an -I folder outside SRC may be called.
HEADER_SUFFIXES = (*SOURCE_SUFFIXES, ".inl", ".hxx", ".hh", ".cuh")


@dataclass(frozen=True)
class PortTrap:
    """One finding of the scanner (:mod:`rocmlab.cuda2hip.scan`) in the port, pointed back at the CUDA source."""
    path: str          # ported file, relative to OUT
    line: int
    column: int
    rule: str
    kind: str
    severity: str      # error | warning | info (the scanner's one scale)
    snippet: str
    message: str
    fix: str
    compiled: bool = True     # compiled for the target (device or host pass)
    origin: str = "own"       # own: a file of SRC; included: a header read from an -I folder outside SRC
    src_path: str = ""        # the original CUDA file (relative to SRC, or its path outside SRC)
    src_line: int = 0         # its line there (0: the line is new in the port)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class PortResult:
    src: str
    out: str
    targets: tuple[str, ...]
    toolchain: str
    toolchain_kind: str
    compat_used: bool
    compat_note: str
    workers: int
    files: list[dict] = field(default_factory=list)          # one row per source file
    fixes: list[translate.Fix] = field(default_factory=list)
    traps: list[PortTrap] = field(default_factory=list)
    units: list[unit_build.UnitResult] = field(default_factory=list)
    links: list[unit_build.LinkResult] = field(default_factory=list)
    runs: list[run_compare.RunResult] = field(default_factory=list)   # --run: ran and compared with CUDA
    ran: bool = False
    problems: list[Problem] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    engine: str = "torch"
    outside_src: list[str] = field(default_factory=list)      # headers read from -I folders outside SRC
    not_followed: list[str] = field(default_factory=list)     # symlinks that leave SRC, never read
    scan_config: dict = field(default_factory=dict)
    compiled: bool = True
    report_json: str = ""
    report_html: str = ""

    # --- figures ------------------------------------------------------------------------
    @property
    def n_units(self) -> int:
        return len(self.units)

    @property
    def n_compiled(self) -> int:
        return sum(u.status == "ok" for u in self.units)

    @property
    def compile_fraction(self) -> float:
        return self.n_compiled / self.n_units if self.units else 0.0

    def traps_by_severity(self, origin: str | None = None, compiled: bool | None = None) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for t in self.traps:
            if (origin is None or t.origin == origin) and (compiled is None or t.compiled == compiled):
                out[t.severity] = out.get(t.severity, 0) + 1
        return out

    def categories(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in self.units:
            out[u.category] = out.get(u.category, 0) + 1
        return out

    def summary(self) -> dict:
        return {
            "translation_units": self.n_units, "compiled": self.n_compiled,
            "compile_fraction": round(self.compile_fraction, 4),
            "programs": len(self.links), "linked": sum(link.status == "ok" for link in self.links),
            "fixes": len(self.fixes), "traps": self.traps_by_severity(),
            "traps_own": self.traps_by_severity("own"), "traps_included": self.traps_by_severity("included"),
            "traps_never_compiled": self.traps_by_severity(compiled=False), "categories": self.categories(),
            "problems": len(self.problems), "libraries": self.libraries,
            **({"runs": {"programs": len({r.program for r in self.runs}), "runs": len(self.runs),
                         "compiles": sum(r.compiles is True for r in self.runs),
                         "built": sum(r.built for r in self.runs),
                         "ran": sum(bool(r.runs) for r in self.runs),
                         "matched": sum(r.matches is True for r in self.runs),
                         "mismatched": sum(r.matches is False for r in self.runs),
                         "nothing_to_compare": sum(r.matches is None and bool(r.runs) for r in self.runs),
                         "backends": sorted({r.backend for r in self.runs if r.backend})}} if self.ran else {}),
        }

    def to_json(self) -> dict:
        return {
            "tool": "rocmlab port", "format": 1, "src": self.src, "out": self.out, "targets": list(self.targets),
            "toolchain": self.toolchain, "toolchain_kind": self.toolchain_kind,
            "compat_header": {"used": self.compat_used, "note": self.compat_note, "file": ""},
            "workers": self.workers, "compiled": self.compiled, "engine": self.engine, "summary": self.summary(),
            "files": self.files, "outside_src": self.outside_src, "not_followed": self.not_followed,
            "scan_config": self.scan_config,
            "fixes": [f.__dict__ for f in self.fixes], "traps": [t.to_json() for t in self.traps],
            "units": [u.to_json() for u in self.units], "links": [link.to_json() for link in self.links],
            "runs": [r.to_json() for r in self.runs],
            "problems": [p.__dict__ for p in self.problems],
            "libraries": [dict(zip(("key", "cuda", "rocm", "header", "link", "get"), (k, *diagnose.LIBRARIES[k]), strict=False))
                          for k in self.libraries],
            "categories": {k: {"means": v[0], "fix": v[1]} for k, v in diagnose.CATEGORIES.items()},
            "notes": self.notes, "timings": self.timings,
        }

    def text(self) -> str:
        """A plain-text summary for the terminal."""
        s = self.summary()
        lines = [f"rocmlab port: {self.src} -> {self.out}",
                 f"toolchain: {self.toolchain} for {', '.join(self.targets)}"
                 + (f"; {self.compat_note}" if self.compat_used else "")]
        if self.compiled:
            lines.append(f"compiled {s['compiled']}/{s['translation_units']} translation units "
                         f"({100 * self.compile_fraction:.0f}%); linked {s['linked']}/{s['programs']} programs")
        lines.append(f"{len(self.fixes)} mechanical fixes; traps: {s['traps']['error']} error, "
                     f"{s['traps']['warning']} warning, {s['traps']['info']} info")
        for u in self.units:
            if u.status != "ok":
                lines.append(f"  FAILED {u.path} [{u.category}] {u.error[:160]}")
        for link in self.links:
            if link.status != "ok":
                lines.append(f"  NOT LINKED {link.main} [{link.category}] {link.error[:160]}")
        if self.ran:
            r = s["runs"]
            lines.append(f"ran {r['ran']}/{r['runs']} runs of {r['programs']} programs "
                         f"({', '.join(r['backends']) or 'nowhere'}): {r['matched']} match the CUDA original, "
                         f"{r['mismatched']} do not, {r['nothing_to_compare']} with nothing recorded to compare")
            for x in self.runs:
                yes = {True: "yes", False: "NO", None: "-"}
                lines.append(f"  RUN {x.program} {' '.join(x.args)}: compiles {yes[x.compiles]}"
                             + ("" if x.built else " (the program to run was not built)") + f", runs {yes[x.runs]}, "
                             f"matches {yes[x.matches]}" + (f" [{x.status}]" if x.status != "matched" else ""))
                if x.first_difference:
                    lines.append(f"       first difference: {x.first_difference}")
                for change in x.port_changes:
                    lines.append(f"       the port's own change: {change}")
                if x.not_compared_why:
                    lines.append(f"       not compared: {x.not_compared_why[:300]}")
                if x.note:
                    lines.append(f"       note: {x.note[:300]}")
                for t in x.exposed:
                    lines.append(f"       exposed trap: {t['path']}:{t['line']} {t['rule']} ({t['how']})")
                if x.suspects:
                    lines.append("       flagged statically in its files: " + "; ".join(
                        f"{t['path']}:{t['line']} {t['rule']}" for t in x.suspects[:6]))
        for t in self.traps:
            if t.severity == "error" and t.origin == "own":
                lines.append(f"  TRAP {t.path}:{t.line} {t.rule}: {t.snippet[:80]}"
                             + (f"\n       fix: {t.fix}" if t.kind == "texture" else ""))
        implicit = sorted({(f.path, f.after.strip()) for f in self.fixes if f.kind == "implicit-header"})
        if implicit:
            lines.append("headers nvcc includes implicitly, added: "
                         + "; ".join(f"{p}: {inc}" for p, inc in implicit[:8]) + (" ..." if len(implicit) > 8 else ""))
        for note in self.notes:
            lines.append(f"  NOTE {note}")
        for p in self.problems:
            lines.append(f"  SKIPPED {p}")
        if self.libraries:
            lines.append("libraries needed on ROCm: " + ", ".join(diagnose.LIBRARIES[k][1] for k in self.libraries))
        if self.report_html:
            lines.append(f"report: {self.report_html} (and {self.report_json})")
        return "\n".join(lines)


def _prepare_out(out: Path, force: bool):
    if out.exists():
        entries = [e for e in out.iterdir()]
        if entries and not (out / MARKER).is_dir() and not force:
            raise PortInputError(f"--out '{out}' exists and is not empty (and is not an earlier port): choose a new "
                                 "folder, or pass --force to replace its contents")
        for e in entries:
            if e.is_dir() and not e.is_symlink():
                shutil.rmtree(e)
            else:
                e.unlink()
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).mkdir(exist_ok=True)


_INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.MULTILINE)


def _inside(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def include_dirs(rels, user_includes, src_root: Path) -> tuple[list[str], list[Path]]:
    """(source-relative include folders: the root, every include/inc folder and the user's -I inside SRC;
    -I folders outside SRC, resolved). A relative -I is taken from SRC (as a build file in SRC
    means it), else from the current folder."""
    dirs = ["."]
    outside: list[Path] = []
    folders = {os.path.dirname(r) for r in rels}
    for f in sorted(folders):
        parts = f.split("/")
        for i, p in enumerate(parts):
            if p in ("include", "inc"):
                d = "/".join(parts[: i + 1])
                if d not in dirs:
                    dirs.append(d)
    for inc in user_includes or ():
        p = Path(inc).expanduser()
        cands = [p] if p.is_absolute() else [src_root / p, Path.cwd() / p]
        found = next((c for c in cands if c.is_dir()), None)
        if found is None:
            raise PortInputError(f"--include {inc}: no such folder (looked in "
                                 f"{' and '.join(str(c) for c in cands)}): give a folder that exists, relative to SRC "
                                 "or absolute")
        real = found.resolve()
        if _inside(real, src_root):
            d = os.path.relpath(real, src_root)
            if d not in dirs:
                dirs.append(d)
        elif real not in outside:
            outside.append(real)
    return dirs, outside


def outside_includes(sources: dict[str, str], src_root: Path) -> list[tuple[str, str, str]]:
    """(file, include, where) for each quoted #include that names an existing file outside SRC by a relative path
    (``#include "../common/book.h"`` in a chapter folder given as SRC): read from nowhere, it does not compile."""
    out = []
    for rel, text in sorted(sources.items()):
        for quote, name in _INCLUDE_LINE.findall(text):
            if quote != '"' or not name.startswith(".."):
                continue
            p = Path(os.path.normpath(str(src_root / os.path.dirname(rel) / name)))
            if not _inside(p, src_root) and p.is_file():
                out.append((rel, name, str(p)))
    return out


def _external_headers(proj, ext_dirs: list[Path], problems: list[Problem]) -> tuple[dict[str, str], dict[str, str]]:
    """The headers the project includes (transitively) from -I folders outside SRC: read, never written.

    Returns ({key under OUT: text}, {key: original path}); keys are ``external/<n>-<folder>/<path>``."""
    texts: dict[str, str] = {}
    origin: dict[str, str] = {}
    keys = [f"{EXTERNAL}/{n}-{d.name or 'root'}" for n, d in enumerate(ext_dirs)]
    todo = [(rel, text, None) for rel, text in proj.sources.items()]
    while todo and len(texts) < MAX_EXTERNAL_FILES:
        rel, text, here = todo.pop()
        for m in _INCLUDE_LINE.finditer(text):
            name = m.group(2).strip()
            cands = []
            if m.group(1) == '"' and here is not None:
                cands.append((here[0], here[1], Path(os.path.normpath(str(ext_dirs[here[0]] / here[1] / name)))))
            cands += [(n, "", Path(os.path.normpath(str(d / name)))) for n, d in enumerate(ext_dirs)]
            for n, _sub, path in cands:
                if not path.is_file():
                    continue
                real = path.resolve()
                if not _inside(real, ext_dirs[n]):
                    continue          # a symlink that leaves the -I folder: never followed
                inner = os.path.relpath(path, ext_dirs[n])
                if inner.startswith(".."):
                    continue
                key = posixpath.join(keys[n], inner.replace(os.sep, "/"))
                if key in texts:
                    break
                if not inner.endswith(HEADER_SUFFIXES):
                    break
                try:
                    t = path.read_bytes().decode("utf-8")
                except UnicodeDecodeError:
                    t = path.read_bytes().decode("latin-1")
                    problems.append(Problem(str(path), "invalid-utf8", "is not valid UTF-8: read as latin-1.",
                                            "convert it to UTF-8 (iconv -f latin1 -t utf-8)"))
                except OSError as exc:
                    problems.append(Problem(str(path), "unreadable", f"cannot be read ({exc.strerror}).",
                                            "check its permissions"))
                    break
                texts[key] = t
                origin[key] = str(path)
                todo.append((key, t, (n, os.path.dirname(inner))))
                break
    return texts, origin


@dataclass(frozen=True)
class PortRequest:
    """What :func:`port_project` ports, where to, and how: the options of ``rocmlab port``.

    ``src``: the CUDA project's folder (only read, never written). ``out``: where the HIP port goes (a folder
    outside SRC). ``target``: one of settings.AMD_TARGETS, or several comma-separated (or a sequence of them).
    ``workers``: parallel compiles (None: every core). ``compat`` is accepted for old callers and ignored (ROCm
    7.2's headers have the warp-sync builtins). ``compile=False`` only translates and scans. ``include``: -I
    folders, inside SRC or outside it (relative to SRC, or absolute): headers the project includes from outside
    SRC are read (never written) and ported into ``OUT/external/``. ``report``: the HTML report's path (default
    OUT/rocmlab-port.html; the JSON goes beside it). ``toolchain``: "auto", "rocm" or "offline". ``force``: replace
    the contents of a non-empty OUT that is not an earlier port. ``progress``: called with each
    :class:`~.unit_build.UnitResult` as its compile ends. ``engine``: "torch" (torch.utils.hipify) or "perl" (ROCm's
    hipify-perl). ``defines``: ``-D`` macros for the build and the scan, as ``{"NAME": "value"}`` or
    ``["NAME=value", "NAME"]``. ``run``: build each program and run it (on the AMD GPU, else the wave64 CPU
    simulator) and compare with the CUDA original (:mod:`.run_compare`); ``manifest``: the runs' arguments,
    inputs and recorded CUDA outputs (default SRC/rocmlab-port-run.json); ``run_timeout_s``: each run's limit.
    """
    src: str | os.PathLike
    out: str | os.PathLike
    target: str | tuple[str, ...] = settings.DEFAULT_TARGET
    workers: int | None = None
    compat: str | bool = "auto"
    compile: bool = True
    include: tuple[str, ...] | list[str] = ()
    report: str | os.PathLike | None = None
    toolchain: str = "auto"
    force: bool = False
    progress: Callable | None = None
    engine: str = "torch"
    defines: dict | list | tuple | None = None
    run: bool = False
    manifest: str | os.PathLike | None = None
    run_timeout_s: float = run_compare.RUN_TIMEOUT_S


def port(src, out, target=settings.DEFAULT_TARGET, **options) -> PortResult:
    """Port the CUDA project in ``src`` to HIP in ``out`` and compile it for ``target``: the short form of
    ``port_project(PortRequest(src, out, target, **options))``; ``options`` are :class:`PortRequest`'s fields."""
    return port_project(PortRequest(src, out, target, **options))


def port_project(request: PortRequest) -> PortResult:
    """Port as ``request`` says: check it and read SRC, translate, write OUT, scan, build, run, report."""
    t_start = time.monotonic()
    plan = _plan(request)
    _prepare_out(plan.out, request.force)
    tree = _translate(plan)
    result = _new_result(plan, tree)
    _write_tree(plan, tree, result)
    _add_traps(plan, tree, _scan(plan, tree, result), result)
    _add_file_rows(tree, result)
    timings = {"hipify_s": tree.hipify_s, "fix_and_scan_s": time.monotonic() - tree.t0 - tree.hipify_s}
    units, mains = _units_and_mains(plan, tree)
    timings.update(_build(plan, tree, units, mains, result) if plan.tc is not None else {"compile_s": 0.0, "link_s": 0.0})
    if request.run:
        _run_programs(plan, tree, units, mains, result)
    result.timings = {**result.timings, **{k: round(v, 3) for k, v in timings.items()},
                      "total_s": round(time.monotonic() - t_start, 3)}
    write_reports(result, Path(request.report) if request.report else plan.out / REPORT_HTML)
    return result


# --- the stages of port_project ---------------------------------------------------------------------------

@dataclass(frozen=True)
class _Plan:
    """A request checked, SRC read: the paths resolved, the targets, macros, manifest, include folders, toolchain."""
    request: PortRequest
    src: Path
    out: Path
    targets: tuple[str, ...]
    define_list: list[str]           # the compiler's NAME=VALUE
    scan_defines: dict[str, str]     # the scanner's {NAME: VALUE}
    manifest: Path | None
    proj: Project
    inc_dirs: list[str]              # SRC-relative include folders
    ext_dirs: list[Path]             # -I folders outside SRC
    tc: object | None                # the toolchain (None: not compiled)
    no_amd: str                      # why no AMD toolchain, where --run goes through HIP->CUDA instead


def _plan(req: PortRequest) -> _Plan:
    """Check the request (every PortInputError before any work), read SRC, choose the toolchain."""
    targets = _checked_targets(req)
    src_r, out_r = check_request(req.src, req.out)
    define_list, scan_defines = _defines(req.defines)
    if req.run and not req.compile:
        raise PortInputError("--run needs the build: leave out --no-compile")
    manifest = _checked_manifest(req, src_r)
    if req.report:
        rep = Path(req.report).expanduser().resolve()
        if rep == src_r or src_r in rep.parents:
            raise PortInputError(f"--report {req.report} is inside SRC ({src_r}): the port never writes into SRC; put "
                                 "the report elsewhere (the default is OUT/rocmlab-port.html)")
    proj = collect(src_r)
    if manifest is not None:
        mains_src = sorted(r for r in proj.translation_units if diagnose.has_main(proj.sources[r]))
        named = {c.program for c in run_compare.load_manifest(manifest, src_r)}
        if named - set(mains_src):
            raise PortInputError(f"--manifest {manifest}: {', '.join(sorted(named - set(mains_src)))} is not a file "
                                 f"with main() in SRC (those are: {', '.join(mains_src) or 'none'}): name the "
                                 "program's main file, relative to SRC")
    inc_dirs, ext_dirs = include_dirs(proj.sources, req.include, src_r)
    tc, no_amd = _checked_toolchain(req, targets)
    return _Plan(req, src_r, out_r, targets, define_list, scan_defines, manifest, proj, inc_dirs, ext_dirs, tc, no_amd)


def _checked_targets(req: PortRequest) -> tuple[str, ...]:
    """The AMD targets asked for (and the engine checked): PortInputError naming the choices otherwise."""
    target = req.target
    targets = tuple(a.strip() for a in (target.split(",") if isinstance(target, str) else target) if a.strip())
    bad = [a for a in targets if a not in settings.AMD_TARGETS]
    if not targets or bad:
        raise PortInputError(f"unknown --target {','.join(bad) or target!r}: choose from {', '.join(settings.AMD_TARGETS)} "
                             "(comma-separated for several)")
    if req.engine not in translate.ENGINES:
        raise PortInputError(f"unknown --engine {req.engine!r}: choose from {', '.join(translate.ENGINES)}")
    return targets


def _checked_manifest(req: PortRequest, src_r: Path) -> Path | None:
    """The runs' manifest (given, or SRC's own with --run), read once so that a bad one is reported before any work."""
    manifest = req.manifest
    if manifest is None and req.run and (src_r / run_compare.MANIFEST).is_file():
        manifest = src_r / run_compare.MANIFEST
    if manifest is not None:
        manifest = Path(manifest).expanduser().resolve()
        if not manifest.is_file():
            raise PortInputError(f"--manifest {manifest}: no such file: give the JSON file of the runs")
        if not req.run:
            raise PortInputError("--manifest is for --run: add --run")
        run_compare.load_manifest(manifest, src_r)
    return manifest


def _checked_toolchain(req: PortRequest, targets: tuple[str, ...]) -> tuple[object | None, str]:
    """(the toolchain, or None without --compile; why there is no AMD one where --run goes through HIP->CUDA)."""
    tc, no_amd = None, ""
    if req.compile:
        try:
            tc = unit_build.choose_toolchain(req.toolchain)
        except RuntimeError as exc:
            if not (req.run and req.toolchain == "auto" and run_compare.nvidia_toolchain() is not None):
                raise
            no_amd = str(exc)     # an NVIDIA machine without ROCm: --run still runs the port, through HIP->CUDA
    if tc is not None:
        missing = [a for a in targets if not tc.supports(a)]
        if missing:
            raise PortInputError(f"the {tc.kind} toolchain here ({tc.label}) cannot build {', '.join(missing)} "
                                 f"(it has {', '.join(tc.targets)}): build for one of those")
    return tc, no_amd


@dataclass
class _Tree:
    """The project translated: texts by key (SRC-relative, or ``external/<n>-<folder>/...``) and what OUT got."""
    sources: dict[str, str]          # every text ported: SRC's and the headers read from outside it
    tr: translate.Translation
    ext_keys: list[str]              # include folders of OUT beside SRC's own: external/..., the port's shims
    ext_origin: dict[str, str]       # external key -> the header's original path
    included: set[str]               # sources #included by another file: never a translation unit
    problems: list[Problem]
    t0: float                        # when the translation began (time.monotonic)
    hipify_s: float
    written: dict[str, str] = field(default_factory=dict)    # ported path (relative to OUT) -> text written

    @property
    def names(self) -> dict[str, str]:
        return self.tr.names

    def origin(self, key: str) -> str:
        """``included`` for a header read from outside SRC, else ``own``."""
        return "included" if key.startswith(EXTERNAL + "/") else "own"


def _translate(plan: _Plan) -> _Tree:
    """Read the headers the project includes from outside SRC, and hipify and fix every text."""
    problems = list(plan.proj.problems)
    ext_texts, ext_origin = _external_headers(plan.proj, plan.ext_dirs, problems)
    ext_keys = [f"{EXTERNAL}/{n}-{d.name or 'root'}" for n, d in enumerate(plan.ext_dirs)]
    sources = {**plan.proj.sources, **ext_texts}
    t0 = time.monotonic()
    try:
        tr = translate.translate(sources, engine=plan.request.engine, include_dirs=plan.inc_dirs + ext_keys)
    except translate.EngineError as exc:
        raise PortInputError(str(exc)) from None
    hipify_s = time.monotonic() - t0
    return _Tree(sources, tr, ext_keys, ext_origin, translate.included_sources(plan.proj.sources, plan.inc_dirs),
                 problems, t0, hipify_s)


def _new_result(plan: _Plan, tree: _Tree) -> PortResult:
    """The result, with the translation's fixes and the notes on what SRC needs (before anything is built)."""
    tc, src_r = plan.tc, plan.src
    result = PortResult(str(src_r), str(plan.out), plan.targets,
                        tc.label if tc else "none (compile=False)" if not plan.no_amd else "none for AMD targets here",
                        tc.kind if tc else "", False, "", max(1, plan.request.workers or os.cpu_count() or 1),
                        problems=tree.problems, notes=list(tree.tr.notes), compiled=tc is not None,
                        engine=plan.request.engine, outside_src=sorted(tree.ext_origin.values()))
    if plan.no_amd:
        result.notes.append(f"not compiled for {', '.join(plan.targets)}: {plan.no_amd}. --run builds the port through "
                            "HIP->CUDA with nvcc and runs it on this NVIDIA GPU (warps of 32) instead")
    result.fixes = tree.tr.fixes
    for rel, name, where in outside_includes(plan.proj.sources, src_r):
        result.notes.append(f"{rel} includes \"{name}\", which is outside SRC ({where}): SRC is the project's folder "
                            "tree, so port the folder that holds both (e.g. SRC={}) and the include comes with it"
                            .format(os.path.commonpath([str(src_r), where])))
    needs = cuda_removed.needs_text(cuda_removed.removed_apis(plan.proj.sources))
    if needs:
        result.notes.append(f"{needs}. The port does not use them (HIP names, plain loads): it builds for HIP; "
                            "only the CUDA original needs that older CUDA")
    for rel in sorted(tree.included):
        result.notes.append(f"{rel} is #included by another file of the project: it is compiled as part of that "
                            "file, never as a translation unit of its own (alone it misses the includer's types)")
    return result


def _write_tree(plan: _Plan, tree: _Tree, result: PortResult) -> None:
    """Write every ported text into OUT (renamed, the tree kept), copy SRC's other files, add the port's shims."""
    out_r, names, tr = plan.out, tree.names, tree.tr
    for rel in sorted(tree.sources):
        dest = out_r / names[rel]
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(tr.texts[rel], encoding="utf-8")
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            result.problems.append(Problem(rel, "path-too-long", f"its path in OUT is too long for this system "
                                           f"({len(str(dest))} characters), so it was not written.",
                                           "port into a shorter --out folder, or shorten the project's folder names"))
            continue
        tree.written[names[rel]] = tr.texts[rel]
    for rel in plan.proj.others:
        dest = out_r / rel
        try:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(plan.src / rel, dest)
        except OSError as exc:
            if exc.errno != errno.ENAMETOOLONG:
                raise
            result.problems.append(Problem(rel, "path-too-long", "its path in OUT is too long: not copied.",
                                           "port into a shorter --out folder"))
    # the port's own replacement headers (cg::reduce ...), when a fix points at them
    if any(f.after and translate.SHIMS_INCLUDE and "rocmlab_port/" in f.after for f in tr.fixes):
        shutil.copytree(translate.SHIMS_DIR, out_r / translate.SHIMS_INCLUDE, dirs_exist_ok=True)
        tree.ext_keys = [*tree.ext_keys, translate.SHIMS_INCLUDE]
        for shim in sorted((out_r / translate.SHIMS_INCLUDE).rglob("*.h")):
            tree.written[str(shim.relative_to(out_r))] = shim.read_text()


def _scan(plan: _Plan, tree: _Tree, result: PortResult):
    """THE scanner, on the ported tree, as the AMD compiler compiles it; its report."""
    out_r = plan.out
    out_inc = [str(out_r / d) for d in plan.inc_dirs + tree.ext_keys]
    rep = scan_project(out_r, files=sorted(tree.written), target=plan.targets[0], include_dirs=out_inc,
                       defines=plan.scan_defines, sources={k: v for k, v in tree.written.items()},
                       not_units=[tree.names[r] for r in tree.included])
    result.scan_config = rep.config
    result.not_followed = [os.path.relpath(p, out_r) for p in rep.not_followed]
    result.libraries = [k for k in diagnose.LIBRARIES if k in rep.libraries]
    return rep


def _add_traps(plan: _Plan, tree: _Tree, rep, result: PortResult) -> None:
    """The scanner's findings, the fixes' own traps and the CUDA names kept in strings, each pointed back at the
    CUDA source; one per line."""
    back = {v: k for k, v in tree.names.items()}
    maps: dict[str, dict[int, int]] = {}

    def src_line(src_rel: str, ported: str, line: int) -> int:
        if src_rel and src_rel not in maps:
            maps[src_rel] = translate.line_map(tree.sources[src_rel], tree.written.get(ported, ""))
        return maps.get(src_rel, {}).get(line, 0)

    for f in rep.findings:
        src_rel = back.get(f.file, "")
        line = src_line(src_rel, f.file, f.line)
        result.traps.append(PortTrap(f.file, f.line, f.column, f.rule, f.kind, f.severity, f.snippet, f.message,
                                     f.fix, f.compiled, tree.origin(src_rel), tree.ext_origin.get(src_rel, src_rel),
                                     line))
    for ft in translate.fix_traps(tree.tr.fixes):
        src_rel = back.get(ft.file, "")
        line = src_line(src_rel, ft.file, ft.line)
        result.traps.append(PortTrap(ft.file, ft.line, ft.column, ft.rule, ft.kind, ft.severity, ft.snippet,
                                     ft.message, ft.fix, True, tree.origin(src_rel),
                                     tree.ext_origin.get(src_rel, src_rel), line))
    for lit in tree.tr.literals:          # CUDA names in strings the program may look up: kept, reported
        src_rel = back.get(lit.file, "")
        lines = tree.written.get(lit.file, "").split("\n")
        at = [n for n, text in enumerate(lines, start=1) if lit.snippet in text]
        line = min(at, key=lambda n: abs(n - lit.line)) if at else lit.line
        result.traps.append(PortTrap(lit.file, line, lit.column, lit.rule, lit.kind, lit.severity, lit.snippet,
                                     lit.message, lit.fix, True, tree.origin(src_rel),
                                     tree.ext_origin.get(src_rel, src_rel), lit.line))
    result.traps = one_per_line(result.traps)


def _add_file_rows(tree: _Tree, result: PortResult) -> None:
    """One row per file written: where it came from, its role, its fixes and traps."""
    per_file: dict[str, int] = {}
    for t in result.traps:
        per_file[t.path] = per_file.get(t.path, 0) + 1
    fixes_per: dict[str, int] = {}
    for fx in result.fixes:
        fixes_per[fx.path] = fixes_per.get(fx.path, 0) + 1
    names = tree.names
    for rel in sorted(tree.sources):
        if names[rel] not in tree.written:
            continue
        ext = rel.startswith(EXTERNAL + "/")
        result.files.append({"source": tree.ext_origin.get(rel, rel), "ported": names[rel],
                             "role": "header from outside SRC" if ext else
                             "included source (part of the file that #includes it)" if rel in tree.included else
                             "translation unit" if rel.endswith(TU_SUFFIXES) else "header",
                             "renamed": names[rel] != rel, "fixes": fixes_per.get(names[rel], 0),
                             "traps": per_file.get(names[rel], 0),
                             "hipify_changed": tree.tr.hipified[rel] != tree.sources[rel]})


def _units_and_mains(plan: _Plan, tree: _Tree) -> tuple[dict[str, str], set[str]]:
    """({ported translation unit: its source}, the ported files with main()): what is compiled and linked."""
    proj, names, included = plan.proj, tree.names, tree.included
    units = {names[r]: r for r in proj.translation_units if names[r] in tree.written and r not in included}
    mains = {names[r] for r in proj.translation_units if diagnose.has_main(proj.sources[r]) and r not in included}
    return units, mains


def _build(plan: _Plan, tree: _Tree, units: dict[str, str], mains: set[str], result: PortResult) -> dict[str, float]:
    """Compile every translation unit for the targets, link each program; their times."""
    tc, out_r = plan.tc, plan.out
    use_compat = False   # ROCm 7.2 (offline root) and ROCm installs have the warp-sync builtins
    result.compat_used = use_compat
    result.compat_note = f"{tc.label}: its own HIP headers, no compatibility header"
    libs = [diagnose.LIBRARIES[k][3] for k in result.libraries if diagnose.LIBRARIES[k][3].startswith("-")]
    t1 = time.monotonic()
    result.units = unit_build.compile_all(tc, out_r, units, mains, plan.targets, plan.inc_dirs + tree.ext_keys,
                                          use_compat, result.workers, build_dir=out_r / MARKER,
                                          progress=plan.request.progress,
                                          extra_flags=[f for f in libs if not f.startswith("-l")],
                                          defines=plan.define_list)
    compile_s = time.monotonic() - t1
    t2 = time.monotonic()
    result.links = unit_build.link_all(tc, out_r, result.units, libs, build_dir=out_r / MARKER)
    link_s = time.monotonic() - t2
    status = {u.source: u.status for u in result.units}
    for f in result.files:
        f["compile"] = status.get(f["source"], "")
    return {"compile_s": compile_s, "link_s": link_s}


def _run_programs(plan: _Plan, tree: _Tree, units: dict[str, str], mains: set[str], result: PortResult) -> None:
    """--run: build each program, run it and compare it with the CUDA original (:mod:`.run_compare`)."""
    t3 = time.monotonic()
    result.ran = True
    result.runs = run_compare.run_programs(result, plan.src, plan.out, plan.out / MARKER, sorted(tree.written), units,
                                           mains, plan.inc_dirs + tree.ext_keys, plan.define_list, plan.manifest,
                                           timeout_s=plan.request.run_timeout_s,
                                           original_includes=[str(plan.src / d) for d in plan.inc_dirs]
                                           + [str(d) for d in plan.ext_dirs])
    result.timings["run_s"] = round(time.monotonic() - t3, 3)


_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_DEFINE = re.compile(r"[A-Za-z_]\w*(?:\([\w\s,.]*\))?")


def _defines(defines) -> tuple[list[str], dict[str, str]]:
    """-D macros as the compiler's NAME=VALUE list and the scanner's {NAME: VALUE}; PortInputError for a bad one."""
    items = [f"{k}={v}" for k, v in defines.items()] if isinstance(defines, dict) else list(defines or ())
    out, scan = [], {}
    for d in items:
        name, eq, value = str(d).partition("=")
        if not _DEFINE.fullmatch(name) or "\n" in value:
            raise PortInputError(f"-D {d!r}: not a macro definition: give -D NAME or -D NAME=VALUE")
        out.append(f"{name}={value}" if eq else name)
        scan[name] = value if eq else "1"
    return out, scan


def one_per_line(traps: list[PortTrap]) -> list[PortTrap]:
    """One finding per (file, line, rule): the scanner's device and host passes, or two columns of one line
    (``thread_block_tile<32> t = tiled_partition<32>(b)``), name the same problem once; the most severe is kept."""
    best: dict[tuple, PortTrap] = {}
    for t in traps:
        key = (t.origin, t.path, t.line, t.rule)
        old = best.get(key)
        if old is None or (_SEVERITY_RANK.get(t.severity, 3), not t.compiled) < \
                (_SEVERITY_RANK.get(old.severity, 3), not old.compiled):
            best[key] = t
    return sorted(best.values(), key=lambda t: (t.origin != "own", t.path, t.line, t.rule))


def load(report_json) -> dict:
    """A report written by :func:`port`, as a dict."""
    return json.loads(Path(report_json).read_text())
