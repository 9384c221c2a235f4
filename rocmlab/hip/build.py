"""Compile a HIP or CUDA cell with a cache, map its errors to the cell's lines, and run it safely.

``compile(source)`` picks the toolchain from the backend (:mod:`rocmlab.platform`):

=========  =====================================================================
backend    HIP source (``lang="hip"``)            CUDA source (``lang="cuda"``)
=========  =====================================================================
``rocm``   hipcc for the GPU's gfx target; runs   hipify (forward tables), then hipcc
``cuda``   HIP->CUDA translation, then nvcc;      nvcc; runs
           runs
``cpu``    clang-19 offline for gfx942 (MI300X):  nvcc for sm_90 if present, compile only;
           compile and link, never run            else hipify + clang-19 for gfx942
=========  =====================================================================

An explicit ``target`` overrides this: ``gfx*`` builds for AMD, ``sm_*`` for NVIDIA, on any
machine that has the compiler. Builds are cached under ``rocmlab.paths.cache_dir()/hip-builds``,
keyed by the source, language, flags, mode, target, the toolchain and its version (and the
translation's version), so compiling the same cell again returns at once with ``cached=True``.

``run(result)`` runs a binary through :func:`rocmlab.sandbox.run_limited` (own process group,
time, memory and output limits), so a kernel that hangs or a program that segfaults never takes
the notebook kernel down.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import sandbox
from rocmlab.paths import cache_dir
from rocmlab.hip import hipcuda
from rocmlab.hip.toolchain import NO_TOOLCHAIN_FIX, Toolchain, discover

LANGS = ("hip", "cuda")
MODES = ("exe", "obj")
CACHE_FORMAT = 1
COMPILE_TIMEOUT_S = 300.0
_DEFAULT = object()
_NAMED: dict[str, BuildResult] = {}


class HipError(RuntimeError):
    """A build or run problem, with the fix in its message."""


class CannotRun(HipError):
    pass


@dataclass(frozen=True)
class Diagnostic:
    line: int | None        # the cell's own line (1-based); None for link or tool errors
    column: int | None
    severity: str           # error | warning | note
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}" + (f":{self.column}" if self.column else "") if self.line else "build"
        return f"{where}: {self.severity}: {self.message}"


@dataclass
class BuildResult:
    ok: bool
    binary: str | None
    log: str
    diagnostics: list[Diagnostic]
    toolchain: str                 # label, e.g. "clang++-19 19.1.7 (offline, Debian)"
    target: str
    cached: bool
    duration_s: float
    can_run: bool
    cannot_run_reason: str
    # more detail, for the inspector and the magics
    lang: str = "hip"
    mode: str = "exe"
    toolchain_kind: str = ""       # rocm | offline | nvcc | "" (none found)
    source: str = ""               # what the learner wrote
    compiled_source: str = ""      # what the compiler saw (translated on the HIP->CUDA path)
    source_path: str | None = None
    command: list[str] = field(default_factory=list)
    key: str = ""
    name: str | None = None
    unknown_names: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    flags: tuple[str, ...] = ()

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "warning"]

    def kernels(self):
        """Per-kernel resources from this build's compiler output (see :mod:`rocmlab.hip.inspect`)."""
        from rocmlab.hip.inspect import resources_from_log

        return resources_from_log(self.log, self.toolchain_kind, self.target)

    def summary(self, include_run: bool = True) -> str:
        """One or a few lines a learner can act on."""
        how = "cache hit" if self.cached else f"{self.duration_s:.1f} s"
        if self.ok:
            head = f"built for {self.target} with {self.toolchain} ({how})"
            if not self.can_run and include_run:
                head += f"; not run: {self.cannot_run_reason}"
            extra = [str(d) for d in self.warnings[:5]]
            return "\n".join([head, *extra])
        lines = [f"build failed for {self.target} with {self.toolchain or 'no compiler'}"]
        lines += [str(d) for d in (self.errors or self.diagnostics)[:10]]
        if not self.diagnostics:
            lines.append(self.log.strip()[-2000:])
        return "\n".join(lines)

    def to_json(self) -> dict:
        d = asdict(self)
        d["flags"] = list(self.flags)
        return d

    @classmethod
    def from_json(cls, d: dict) -> BuildResult:
        d = dict(d)
        d["diagnostics"] = [Diagnostic(**x) for x in d["diagnostics"]]
        d["flags"] = tuple(d.get("flags", ()))
        return cls(**d)


# --- toolchain choice ---------------------------------------------------------------------

def _platform(plat):
    if plat is not None:
        return plat
    from rocmlab.platform import current

    return current()


def default_target(lang: str = "hip", plat=None, nvcc_present: bool | None = None) -> str:
    """The target a cell builds for when none is given: the GPU here, else MI300X (gfx942)."""
    plat = _platform(plat)
    dev = plat.device
    if plat.backend == "rocm" and dev and dev.arch_base.startswith("gfx"):
        return dev.arch_base
    if plat.backend == "cuda" and dev and dev.arch.startswith("sm_"):
        return dev.arch
    if lang == "cuda":
        if nvcc_present is None:
            nvcc_present = find_toolchain("nvcc") is not None
        if nvcc_present:
            return "sm_90"
    return "gfx942"


def _choose(lang: str, target: str, plat, toolchain) -> tuple[Toolchain | None, str]:
    """(toolchain or None, the fix when none is found)."""
    if isinstance(toolchain, Toolchain):
        return toolchain, ""
    if isinstance(toolchain, str):
        kinds = [toolchain]
    elif target.startswith(("sm_", "compute_")):
        kinds = ["nvcc"]
    elif plat.backend == "rocm":
        kinds = ["rocm", "offline"]
    else:
        kinds = ["offline"]
    for k in kinds:
        tc = find_toolchain(k)
        if tc is not None:
            return tc, ""
    fix = "; or ".join(NO_TOOLCHAIN_FIX[k] for k in kinds)
    want = "NVIDIA compiler (nvcc)" if kinds == ["nvcc"] else "HIP compiler for AMD targets"
    return None, f"no {want} found for target {target}: {fix}"


_FOUND: dict[str, Toolchain | None] = {}


def find_toolchain(kind: str, refresh: bool = False) -> Toolchain | None:
    """:func:`rocmlab.hip.toolchain.discover`, remembered for this process (a warm cache hit
    must not spend its time asking compilers for their versions)."""
    if refresh or kind not in _FOUND:
        _FOUND[kind] = discover(kind)
    return _FOUND[kind]


def _can_run(tc: Toolchain, target: str, mode: str, plat) -> tuple[bool, str]:
    if mode == "obj":
        return False, "built as an object file (mode='obj'): build with mode='exe' to run it"
    dev = plat.device
    if tc.kind == "nvcc":
        if plat.backend != "cuda":
            return False, f"compiled for {target} with nvcc: no NVIDIA GPU here"
        m_dev = re.match(r"sm_(\d+)", dev.arch if dev else "")
        m_tgt = re.match(r"(?:sm|compute)_(\d+)", target)
        if m_dev and m_tgt and int(m_tgt.group(1)) > int(m_dev.group(1)):
            return False, f"compiled for {target}, but this GPU is {dev.arch}: pass target='{dev.arch}'"
        return True, ""
    if tc.kind == "offline":
        if plat.backend == "rocm":
            return False, (f"compiled for {target} offline (Debian's HIP 5.2 runtime), not with this "
                           "machine's ROCm: install hipcc (ROCm) to run on the GPU")
        return False, f"compiled for {target} offline: no AMD GPU here"
    # rocm
    if plat.backend != "rocm":
        return False, f"compiled for {target} with hipcc: no AMD GPU here"
    if dev and dev.arch_base != target:
        return False, f"compiled for {target}, but this GPU is {dev.arch_base}: pass target='{dev.arch_base}'"
    return True, ""


def _command(tc: Toolchain, src: Path, out: Path, target: str, flags: tuple[str, ...], mode: str,
             lang_in: str) -> list[str]:
    opt = [] if any(f.startswith("-O") for f in flags) else ["-O3"]
    obj = ["-c"] if mode == "obj" else []
    if tc.kind == "nvcc":
        return [tc.compiler, f"-arch={target}", *opt, "-Xptxas", "-v", "-lineinfo", *flags, *obj,
                str(src), "-o", str(out)]
    # Debian's HIP 5.2 headers mark every API [[nodiscard]]; CUDA's do not: that warning is noise here
    remarks = ["-Rpass-analysis=kernel-resource-usage", "-Wno-unused-result"]
    if tc.kind == "offline":
        cmd = tc.offline.compile_command(str(src), str(out), target, (*opt, *remarks, *flags, *obj))
        return cmd + ([] if mode == "obj" else ["-lamdhip64"])
    return [tc.compiler, "-x", "hip", f"--offload-arch={target}", *opt, *remarks, *flags, *obj,
            str(src), "-o", str(out)]


# --- diagnostics ----------------------------------------------------------------------------

_CLANG_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning|note): "
                         r"(?P<msg>.*)$", re.MULTILINE)
_NVCC_DIAG = re.compile(r"^(?P<file>[^(\n]+)\((?P<line>\d+)\): (?P<sev>error|warning|remark)(?: #[\w-]+)?: "
                        r"(?P<msg>.*)$", re.MULTILINE)
_TOOL_ERR = re.compile(r"^(?:.*undefined reference to .*|ptxas (?:error|fatal)\s*:.*|ld(?:\.lld)?: error: .*|"
                       r".*error: linker command failed.*|nvlink error.*|clang\S*: error: .*)$", re.MULTILINE)


def parse_diagnostics(log: str, cell_file: str, line_offset: int = 0) -> list[Diagnostic]:
    """Compiler messages about the cell, with the cell's line numbers (remarks are left out)."""
    out: list[Diagnostic] = []
    base = os.path.basename(cell_file)
    seen = set()
    for rx in (_CLANG_DIAG, _NVCC_DIAG):
        for m in rx.finditer(log):
            sev = "error" if m.group("sev") == "fatal error" else m.group("sev")
            if sev == "remark":
                continue
            msg = m.group("msg").strip()
            col = int(m.group("col")) if "col" in m.groupdict() and m.group("col") else None
            if os.path.basename(m.group("file").strip()) == base:
                line = int(m.group("line")) - line_offset
                d = Diagnostic(line if line >= 1 else None, col, sev, msg)
            elif sev == "error":
                d = Diagnostic(None, None, sev, f"{m.group('file').strip()}:{m.group('line')}: {msg}")
            else:
                continue
            if (d.line, d.severity, d.message) not in seen:
                seen.add((d.line, d.severity, d.message))
                out.append(d)
    if not any(d.severity == "error" for d in out):
        for m in _TOOL_ERR.finditer(log):
            text = m.group(0).strip()
            if "linker command failed" in text and any("undefined reference" in d.message for d in out):
                continue
            out.append(Diagnostic(None, None, "error", text))
    out.sort(key=lambda d: (d.line is None, d.line or 0))
    return out


# --- the cache ------------------------------------------------------------------------------

def _key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def builds_dir() -> Path:
    p = cache_dir() / "hip-builds"
    p.mkdir(parents=True, exist_ok=True)
    return p


def clear_cache() -> int:
    """Delete every cached build; returns how many were removed."""
    d = builds_dir()
    n = 0
    for child in d.iterdir():
        shutil.rmtree(child, ignore_errors=True)
        n += 1
    return n


def _validate(lang: str, mode: str, target: str, flags) -> tuple[str, ...]:
    if lang not in LANGS:
        raise ValueError(f"lang={lang!r} is not one of {LANGS}: use lang='hip' or lang='cuda'")
    if mode not in MODES:
        raise ValueError(f"mode={mode!r} is not one of {MODES}: 'exe' links a program, 'obj' only compiles")
    if not re.fullmatch(r"(?:gfx[0-9a-f]{3,4}(?::[\w+-]+)*|sm_\d+a?|compute_\d+a?)", target or ""):
        raise ValueError(f"target={target!r} is not a GPU target: use an AMD one such as 'gfx942' (MI300X) "
                         "or 'gfx90a' (MI200), or an NVIDIA one such as 'sm_90' (H100/H200)")
    if isinstance(flags, str):
        import shlex

        flags = shlex.split(flags)
    flags = tuple(str(f) for f in flags)
    for f in flags:
        if f in ("-o", "-c") or f.startswith("-o"):
            raise ValueError(f"flag {f!r} is set by rocmlab (use mode='obj' for -c); remove it")
    return flags


def compile(source: str, *, lang: str = "hip", target: str | None = None, flags=(), toolchain=None,
            name: str | None = None, mode: str = "exe", plat=None, use_cache: bool = True) -> BuildResult:
    """Build ``source``. Never raises for a bad program: the result says what went wrong.

    Raises ``ValueError`` for bad arguments (an unknown ``lang``, ``mode`` or ``target``).
    ``target`` defaults to the GPU here, else gfx942 (MI300X); ``toolchain`` may be a
    :class:`~rocmlab.hip.toolchain.Toolchain` or a kind (``"rocm"``, ``"offline"``, ``"nvcc"``).
    """
    if not isinstance(source, str) or not source.strip():
        raise ValueError("source is empty: pass the HIP or CUDA program as a string")
    start = time.monotonic()
    plat = _platform(plat)
    target = target or default_target(lang, plat)
    flags = _validate(lang, mode, target, flags)
    base = target.split(":")[0]
    tc, fix = _choose(lang, base, plat, toolchain)
    if tc is None:
        res = BuildResult(False, None, fix, [Diagnostic(None, None, "error", fix)], "", target, False,
                          time.monotonic() - start, False, fix, lang, mode, "", source, "", name=name,
                          flags=flags)
        return _remember(res)
    if tc.kind != "nvcc" and not base.startswith("gfx") or tc.kind == "nvcc" and base.startswith("gfx"):
        raise ValueError(f"toolchain {tc.label} cannot build for {target}")
    if tc.kind == "offline" and not tc.supports(base):
        fix = (f"target {base} is not available offline here (have {', '.join(tc.targets)}): "
               "run bash scripts/setup/20-gfx942-bitcode.sh for gfx942")
        res = BuildResult(False, None, fix, [Diagnostic(None, None, "error", fix)], tc.label, target, False,
                          time.monotonic() - start, False, fix, lang, mode, tc.kind, source, "", name=name,
                          flags=flags)
        return _remember(res)

    # what the compiler sees
    unknown, notes = [], []
    compiled = source
    if tc.kind == "nvcc" and lang == "hip":
        tr = hipcuda.translate(source)
        compiled, unknown, notes = tr.cuda_source, tr.unknown_names, tr.notes
    elif tc.kind != "nvcc" and lang == "cuda":
        tr = hipcuda.hipify(source)
        compiled, unknown, notes = tr.cuda_source, tr.unknown_names, tr.notes
    ext = ".cu" if tc.kind == "nvcc" else ".hip"
    key = _key({"format": CACHE_FORMAT, "translation": hipcuda.VERSION, "source": source, "lang": lang,
                "target": target, "flags": list(flags), "mode": mode, "toolchain": [tc.kind, tc.compiler, tc.version],
                "bitcode": tc.offline.bitcode_dir if tc.offline else None})
    can_run, why = _can_run(tc, base, mode, plat)
    final = builds_dir() / key[:24]
    meta = final / "meta.json"
    if use_cache and meta.is_file():
        try:
            res = BuildResult.from_json(json.loads(meta.read_text()))
            if not res.ok or (res.binary and Path(res.binary).exists()):
                res.cached, res.duration_s = True, time.monotonic() - start
                res.can_run, res.cannot_run_reason, res.name = can_run, why, name or res.name
                return _remember(res)
        except (OSError, ValueError, TypeError, KeyError):
            pass   # a damaged entry: rebuild it

    work = Path(tempfile.mkdtemp(prefix="tmp-", dir=builds_dir()))
    stem = re.sub(r"\W", "_", name) if name else "cell"
    src = work / (stem + ext)
    src.write_text(compiled)
    out = work / (stem + (".o" if mode == "obj" else ""))
    cmd = _command(tc, src, out, base if tc.kind == "nvcc" else target, flags, mode, lang)
    done = sandbox.run_limited(cmd, timeout_s=COMPILE_TIMEOUT_S, memory_bytes=None, output_bytes=4 << 20,
                               cwd=str(work), env=tc.env())
    log = (done.stdout + done.stderr).replace(str(work) + os.sep, "")
    ok = done.ok and out.exists()
    diags = parse_diagnostics(log, src.name)
    if unknown:
        notes = [f"HIP names with no CUDA translation (fix them if the build fails): {', '.join(unknown)}", *notes]
    if "clang-offload-bundler" in log and "exist" in log:
        diags.append(Diagnostic(None, None, "error", "clang cannot find clang-offload-bundler: apt-get install -y "
                                "clang-tools-19 (or hipcc, which pulls clang-tools-15)"))
    if not ok and not diags:
        msg = (f"the compiler {done.explain()}" if not done.ok else "the compiler made no output")
        diags = [Diagnostic(None, None, "error", msg)]
    final_bin = str(final / out.name) if ok else None
    res = BuildResult(ok, final_bin, log, diags, tc.label, target, False, 0.0, can_run and ok,
                      why if ok else "the build failed", lang, mode, tc.kind, source, compiled,
                      str(final / src.name), [str(c).replace(str(work), str(final)) for c in cmd], key, name,
                      unknown, notes, flags)
    if use_cache:
        (work / "meta.json").write_text(json.dumps(res.to_json()))
        try:
            os.replace(work, final)
        except OSError:   # a concurrent build of the same key won: use it
            shutil.rmtree(final, ignore_errors=True)
            try:
                os.replace(work, final)
            except OSError:
                shutil.rmtree(work, ignore_errors=True)
    else:
        res.binary = str(out) if ok else None
        res.source_path = str(src)
    res.duration_s = time.monotonic() - start
    return _remember(res)


def _remember(res: BuildResult) -> BuildResult:
    if res.name:
        _NAMED[res.name] = res
    return res


def named(name: str) -> BuildResult:
    """The last build made with ``name=...`` (or ``%%hip --name ...``) in this session."""
    try:
        return _NAMED[name]
    except KeyError:
        known = ", ".join(sorted(_NAMED)) or "none yet"
        raise KeyError(f"no build named {name!r} in this session (known: {known}); "
                       f"build it first with %%hip --name {name}") from None


def run(result: BuildResult, args=(), timeout_s: float = 10.0, memory_bytes=_DEFAULT,
        output_bytes: int = 1 << 20, *, host_only: bool = False, stdin: bytes | None = None,
        env: dict | None = None) -> sandbox.Completed:
    """Run a built program with limits. Raises :class:`CannotRun` (with the reason and the fix)
    when the build failed or cannot run on this machine.

    ``host_only=True`` runs an offline AMD build's host code anyway (its GPU calls fail with
    ``hipErrorNoDevice``): useful to show the sandbox stopping a hanging or crashing program.
    ``memory_bytes`` defaults to no address-space limit on a GPU (its runtime reserves large
    virtual ranges) and 2 GiB otherwise.
    """
    if not isinstance(result, BuildResult):
        raise TypeError("run() takes the BuildResult that compile() returned")
    if not result.ok:
        raise CannotRun("cannot run: the build failed\n" + result.summary())
    if not result.binary or not Path(result.binary).exists():
        raise CannotRun(f"cannot run: the binary {result.binary} is gone (cache cleared?): compile again")
    if not result.can_run and not (host_only and result.mode == "exe"):
        fix = {"offline": "run on an AMD GPU machine (the same cell builds with hipcc there), or on an "
                          "NVIDIA GPU through the HIP->CUDA path",
               "nvcc": "run on a machine with an NVIDIA GPU",
               "rocm": "run on a machine with that AMD GPU"}.get(result.toolchain_kind, "")
        raise CannotRun(f"cannot run here: {result.cannot_run_reason}" + (f"; {fix}" if fix else ""))
    if isinstance(args, str):
        import shlex

        args = shlex.split(args)
    if memory_bytes is _DEFAULT:
        memory_bytes = None if result.can_run else 2 << 30
    return sandbox.run_limited([result.binary, *map(str, args)], timeout_s=timeout_s, memory_bytes=memory_bytes,
                               output_bytes=output_bytes, stdin_data=stdin, env=env)
