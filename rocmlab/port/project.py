"""``port(src, out)``: hipify a CUDA project into a new folder, fix it, compile it, report on it."""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rocmlab.port import build, translate
from rocmlab.port.inputs import PortInputError, Problem, check_request, collect
from rocmlab.port.traps import PortTrap, project_names, scan

REPORT_JSON = "rocmlab-port.json"
REPORT_HTML = "rocmlab-port.html"
MARKER = ".rocmlab-port"
from rocmlab.settings import AMD_TARGETS as SUPPORTED_ARCHS  # noqa: E402  (gfx942, gfx950, gfx90a)


@dataclass
class PortResult:
    src: str
    out: str
    archs: tuple[str, ...]
    toolchain: str
    toolchain_kind: str
    compat_used: bool
    compat_note: str
    workers: int
    files: list[dict] = field(default_factory=list)          # one row per source file
    fixes: list[translate.Fix] = field(default_factory=list)
    traps: list[PortTrap] = field(default_factory=list)
    units: list[build.UnitResult] = field(default_factory=list)
    links: list[build.LinkResult] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    libraries: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict = field(default_factory=dict)
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

    def traps_by_level(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for t in self.traps:
            out[t.level] = out.get(t.level, 0) + 1
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
            "fixes": len(self.fixes), "traps": self.traps_by_level(), "categories": self.categories(),
            "problems": len(self.problems), "libraries": self.libraries,
        }

    def to_json(self) -> dict:
        return {
            "tool": "rocmlab port", "format": 1, "src": self.src, "out": self.out, "archs": list(self.archs),
            "toolchain": self.toolchain, "toolchain_kind": self.toolchain_kind,
            "compat_header": {"used": self.compat_used, "note": self.compat_note, "file": ""},
            "workers": self.workers, "compiled": self.compiled, "summary": self.summary(), "files": self.files,
            "fixes": [f.__dict__ for f in self.fixes], "traps": [t.to_json() for t in self.traps],
            "units": [u.to_json() for u in self.units], "links": [link.to_json() for link in self.links],
            "problems": [p.__dict__ for p in self.problems],
            "libraries": [dict(zip(("key", "cuda", "rocm", "header", "link", "get"), (k, *build.LIBRARIES[k]), strict=False))
                          for k in self.libraries],
            "categories": {k: {"means": v[0], "fix": v[1]} for k, v in build.CATEGORIES.items()},
            "notes": self.notes, "timings": self.timings,
        }

    def text(self) -> str:
        """A plain-text summary for the terminal."""
        s = self.summary()
        lines = [f"rocmlab port: {self.src} -> {self.out}",
                 f"toolchain: {self.toolchain} for {', '.join(self.archs)}"
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
        for t in self.traps:
            if t.level == "error":
                lines.append(f"  TRAP {t.path}:{t.line} {t.rule}: {t.snippet[:80]}")
        for p in self.problems:
            lines.append(f"  SKIPPED {p}")
        if self.libraries:
            lines.append("libraries needed on ROCm: " + ", ".join(build.LIBRARIES[k][1] for k in self.libraries))
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


def _include_dirs(rels, user_includes, src_root: Path) -> list[str]:
    """Source-relative include folders: the root, every folder named include/inc, and the user's -I."""
    dirs = ["."]
    folders = {os.path.dirname(r) for r in rels}
    for f in sorted(folders):
        parts = f.split("/")
        for i, p in enumerate(parts):
            if p in ("include", "inc"):
                d = "/".join(parts[: i + 1])
                if d not in dirs:
                    dirs.append(d)
    for inc in user_includes or ():
        p = Path(inc)
        if p.is_absolute():
            try:
                p = p.resolve().relative_to(src_root)
            except ValueError:
                raise PortInputError(f"--include {inc} is outside SRC: give folders inside the project") from None
        d = os.path.normpath(str(p))
        if d.startswith(".."):
            raise PortInputError(f"--include {inc} is outside SRC: give folders inside the project")
        if d not in dirs:
            dirs.append(d)
    return dirs


def port(src, out, arch="gfx942", *, workers: int | None = None, compat: str | bool = "auto",
         compile: bool = True, include=(), report: str | None = None, toolchain: str = "auto",
         force: bool = False, progress=None) -> PortResult:
    """Port the CUDA project in ``src`` to HIP in ``out`` and compile it for ``arch``.

    ``arch``: "gfx942" (MI300X, default), "gfx90a" (MI200), or both ("gfx942,gfx90a").
    ``compat``: "auto" uses the warp-sync compatibility header with the offline HIP 5.2
    toolchain only (never with ROCm); False turns it off. ``compile=False`` only translates
    and scans. ``report`` is the HTML report's path (default OUT/rocmlab-port.html).
    SRC is only read, never written.
    """
    t_start = time.monotonic()
    archs = tuple(a.strip() for a in (arch.split(",") if isinstance(arch, str) else arch) if a.strip())
    bad = [a for a in archs if a not in SUPPORTED_ARCHS]
    if not archs or bad:
        raise PortInputError(f"unknown --arch {','.join(bad) or arch!r}: choose from {', '.join(SUPPORTED_ARCHS)} "
                             "(comma-separated for several)")
    src_r, out_r = check_request(src, out)
    if report:
        rep = Path(report).expanduser().resolve()
        if rep == src_r or src_r in rep.parents:
            raise PortInputError(f"--report {report} is inside SRC ({src_r}): the port never writes into SRC; put "
                                 "the report elsewhere (the default is OUT/rocmlab-port.html)")
    proj = collect(src_r)
    tc = build.choose_toolchain(toolchain) if compile else None
    if tc is not None:
        missing = [a for a in archs if not tc.supports(a)]
        if missing:
            raise PortInputError(f"the {tc.kind} toolchain here ({tc.label}) cannot build {', '.join(missing)} "
                                 f"(it has {', '.join(tc.targets)}): build for one of those")
    _prepare_out(out_r, force)
    t0 = time.monotonic()
    hip_texts = translate.hipify_texts(proj.sources)
    t_hipify = time.monotonic() - t0

    names, notes = translate.plan_names(proj.sources)
    inc_dirs = _include_dirs(proj.sources, include, src_r)
    result = PortResult(str(src_r), str(out_r), archs, tc.label if tc else "none (compile=False)",
                        tc.kind if tc else "", False, "", max(1, workers or os.cpu_count() or 1),
                        problems=list(proj.problems), notes=notes, compiled=compile)
    ported_text = {}
    own = project_names(proj.sources.values())
    for rel in sorted(proj.sources):
        text, fixes = translate.fix_file(rel, names[rel], hip_texts[rel], names, inc_dirs)
        dest = out_r / names[rel]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        ported_text[names[rel]] = text
        result.fixes += fixes
        lines = translate.line_map(proj.sources[rel], text)
        traps = [replace(t, src_path=rel, src_line=lines.get(t.line, 0)) for t in scan(names[rel], text, own)]
        result.traps += traps
        result.files.append({"source": rel, "ported": names[rel],
                             "role": "translation unit" if rel.endswith(build_tu_suffixes()) else "header",
                             "renamed": names[rel] != rel, "fixes": len(fixes), "traps": len(traps),
                             "hipify_changed": hip_texts[rel] != proj.sources[rel]})
    for rel in proj.others:
        dest = out_r / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src_r / rel, dest)
    result.libraries = build.libraries_needed(list(proj.sources.values()))
    t_fix = time.monotonic() - t0 - t_hipify

    t_compile = t_link = 0.0
    if tc is not None:
        use_compat = False   # ROCm 7.2 (offline root) and ROCm installs have the warp-sync builtins
        result.compat_used = use_compat
        result.compat_note = f"{tc.label}: its own HIP headers, no compatibility header"
        units = {names[r]: r for r in proj.translation_units}
        mains = {names[r] for r in proj.translation_units if build.has_main(proj.sources[r])}
        t1 = time.monotonic()
        result.units = build.compile_all(tc, out_r, units, mains, archs, inc_dirs, use_compat, result.workers,
                                         build_dir=out_r / MARKER, progress=progress)
        t_compile = time.monotonic() - t1
        t2 = time.monotonic()
        result.links = build.link_all(tc, out_r, result.units, build_dir=out_r / MARKER)
        t_link = time.monotonic() - t2
        status = {u.source: u.status for u in result.units}
        for f in result.files:
            f["compile"] = status.get(f["source"], "")
    result.timings = {"hipify_s": round(t_hipify, 3), "fix_and_scan_s": round(t_fix, 3),
                      "compile_s": round(t_compile, 3), "link_s": round(t_link, 3),
                      "total_s": round(time.monotonic() - t_start, 3)}
    from rocmlab.port.report import write_reports

    write_reports(result, Path(report) if report else out_r / REPORT_HTML)
    return result


def build_tu_suffixes():
    from rocmlab.port.inputs import TU_SUFFIXES

    return TU_SUFFIXES


def load(report_json) -> dict:
    """A report written by :func:`port`, as a dict."""
    return json.loads(Path(report_json).read_text())
