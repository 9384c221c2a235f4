"""``rocmlab port --run``: build each ported program, run it, and compare it with the CUDA original.

Where it runs: on the AMD GPU when this machine has one (the port's own hipcc build); else on the NVIDIA GPU
when this is an NVIDIA machine with nvcc (every ported file translated back to CUDA by :mod:`rocmlab.hip.hipcuda`
with the line numbers kept, built with nvcc for the GPU here: warps of 32, so a wave64 assumption does not show
there); else on the wave64 CPU simulator (:mod:`rocmlab.hip.simulate`: every ported file rewritten for it with
the line numbers kept, compiled by the offline root's clang, linked with its runtime). Every run goes through the
sandbox with limits (time, memory, output) in a fresh folder holding only the program's input files.

What it compares with: the CUDA original run here (built with nvcc, run on the NVIDIA GPU) where this is
an NVIDIA machine, else the outputs recorded from a CUDA run in a manifest (:data:`MANIFEST` in SRC, or
``--manifest FILE``). The original runs twice: numbers that differ between its own two runs (clocks, addresses)
and the numbers of lines that report a timing or a rate (``time``, ``ms``, ``GB/s``, ...) are not compared, and
lines whose words differ between the two runs are skipped; the run says how many.
The manifest is a JSON file::

    {"format": 1,
     "recorded": "nvcc 12.4 on an H100, 2026-11-30",          # where the expected outputs came from
     "programs": {
       "src/main.cu": [                                         # the program's main file, relative to SRC
         {"args": ["42"], "inputs": ["data/in.txt"],            # inputs: files of SRC copied into the run folder
          "timeout_s": 60,
          "expected": {"exit": 0, "stdout": "sum 1024\\n",       # or "stdout_file": "expected/main.out"
                       "not_compared": [[3, 1]],                # stdout line 3's first number varies run to run
                       "files": {"out.txt": "expected/out.txt"}},   # files the program writes, relative to SRC
          "tolerance": {"rel": 1e-5, "abs": 1e-8}}]}}           # numbers in text are compared within it

stdout and text output files are compared line by line: the words must be equal, the numbers equal within the
tolerance (integers too: 1024 and 1025 differ). The first difference is reported. A program the manifest does
not name is run with no arguments, and only whether it runs (exit 0) is known: ``matches`` is then None.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rocmlab import settings
from rocmlab.cuda2hip import translate
from rocmlab.port import cuda_removed
from rocmlab.port.inputs import PortInputError

MANIFEST = "rocmlab-port-run.json"
RUN_TIMEOUT_S = 60.0
MAX_CASES = 100
SIM_DIR = "sim"                 # under OUT/.rocmlab-port: the ported tree rewritten for the simulator
CUDA_DIR = "cuda"               # under OUT/.rocmlab-port: the ported tree translated back to CUDA for nvcc
#: Where a HIP->CUDA run happens (the backend's words say it: warps of 32, not MI300X's 64).
HIP_CUDA = "through HIP->CUDA, warps of 32"
_TEXT_SUFFIXES = (".txt", ".csv", ".out", ".log", ".dat", ".json", "")


# --- the manifest ---------------------------------------------------------------------------------------------
@dataclass
class Case:
    program: str                          # its main file, relative to SRC
    args: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    exit: int | None = 0
    stdout: str | None = None
    files: dict[str, str] = field(default_factory=dict)    # name written by the program -> expected file (in SRC)
    rel: float = 1e-6
    abs: float = 0.0
    timeout_s: float = RUN_TIMEOUT_S
    recorded: str = ""
    skip: frozenset = frozenset()         # stdout's (line, number) not compared: (line, 0) is the whole line


def load_manifest(path: Path, src_root: Path) -> list[Case]:
    """The cases of a manifest, or PortInputError naming what is wrong and the fix."""
    where = f"--manifest {path}"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise PortInputError(f"{where}: cannot be read ({exc.strerror}): give a readable JSON file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise PortInputError(f"{where}: not valid JSON ({exc}): fix the file (see `rocmlab port --help`)") from None
    if not isinstance(data, dict) or not isinstance(data.get("programs"), dict):
        raise PortInputError(f"{where}: needs an object with \"programs\": {{\"MAIN_FILE\": [{{\"args\": [...], "
                             "\"expected\": {...}}]}}")
    recorded = str(data.get("recorded", ""))
    cases: list[Case] = []
    for prog, runs in data["programs"].items():
        runs = runs if isinstance(runs, list) else [runs]
        for n, r in enumerate(runs):
            at = f"{where}: programs[{prog!r}][{n}]"
            if not isinstance(r, dict):
                raise PortInputError(f"{at} is not an object: give {{\"args\": [...], \"expected\": {{...}}}}")
            exp = r.get("expected", {})
            tol = r.get("tolerance", {})
            if not isinstance(exp, dict) or not isinstance(tol, dict):
                raise PortInputError(f"{at}: \"expected\" and \"tolerance\" must be objects")
            args, inputs = r.get("args", []), r.get("inputs", [])
            if not all(isinstance(a, str) for a in args) or not all(isinstance(a, str) for a in inputs):
                raise PortInputError(f"{at}: \"args\" and \"inputs\" must be lists of strings")
            for rel in [*inputs, *exp.get("files", {}).values(),
                        *([exp["stdout_file"]] if "stdout_file" in exp else [])]:
                p = (src_root / rel).resolve()
                if os.path.isabs(rel) or src_root.resolve() not in p.parents or not p.is_file():
                    raise PortInputError(f"{at}: {rel!r} is not a file inside SRC: name files relative to SRC")
            stdout = exp.get("stdout")
            if "stdout_file" in exp:
                stdout = (src_root / exp["stdout_file"]).read_text(encoding="utf-8", errors="replace")
            try:
                rel_tol, abs_tol = float(tol.get("rel", 1e-6)), float(tol.get("abs", 0.0))
                timeout = float(r.get("timeout_s", RUN_TIMEOUT_S))
                skip = frozenset((int(n), int(k)) for n, k in exp.get("not_compared", []))
            except (TypeError, ValueError):
                raise PortInputError(f"{at}: tolerance and timeout_s must be numbers, not_compared a list of "
                                     "[line, number] pairs") from None
            if not (0 <= rel_tol < 1 and 0 <= abs_tol and 0 < timeout <= 600) or math.isnan(rel_tol + abs_tol):
                raise PortInputError(f"{at}: tolerance rel in [0, 1), abs >= 0, timeout_s in (0, 600]")
            cases.append(Case(prog, list(args), list(inputs), exp.get("exit", 0), stdout,
                              dict(exp.get("files", {})), rel_tol, abs_tol, timeout, recorded, skip))
    if len(cases) > MAX_CASES:
        raise PortInputError(f"{where}: {len(cases)} runs; at most {MAX_CASES}: split the manifest")
    return cases


# --- comparing outputs ----------------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w.])|(?<![\w.])[-+]?(?:inf|nan)\b",
                     re.IGNORECASE)


def _split(line: str) -> tuple[list[str], list[float]]:
    words, nums, pos = [], [], 0
    for m in _NUMBER.finditer(line):
        words.append(line[pos:m.start()])
        nums.append(float(m.group()))
        pos = m.end()
    words.append(line[pos:])
    return [w.strip() for w in words], nums


def _lines(text: str) -> list[str]:
    return [] if text.strip() == "" else [x.rstrip("\r") for x in text.rstrip("\n").split("\n")]


def varying(first: str, second: str) -> set:
    """What differs between two runs of the same program (the CUDA original run twice): {(line, 0)} for a line whose
    words differ, {(line, k)} for its k-th number (1-based). Empty when the two outputs differ in their number of
    lines: then nothing is known to vary, and everything is compared."""
    a, b = _lines(first), _lines(second)
    if len(a) != len(b):
        return set()
    out = set()
    for n, (x, y) in enumerate(zip(a, b, strict=True), start=1):
        if x == y:
            continue
        wx, nx = _split(x)
        wy, ny = _split(y)
        if wx != wy or len(nx) != len(ny):
            out.add((n, 0))
            continue
        out |= {(n, k) for k, (u, v) in enumerate(zip(nx, ny, strict=True), start=1) if u != v}
    return out


#: A line that reports a timing or a rate: its numbers are the machine's, not the program's answer. ("N times" is a
#: count, an answer: it is compared.)
_TIMING = re.compile(r"(?i)\b(?:timed?|timing|elapsed|duration|ms|msec|us|usec|ns|secs?|seconds?|"
                     r"[GMT]B/s|[GMT]?FLOPS|bandwidth|throughput)\b")


def reordered(expected: str, got: str) -> bool:
    """Whether ``got`` holds exactly ``expected``'s lines, in another order (lines of timings and rates left out)."""
    a, b = ([x for x in _lines(t) if not _TIMING.search(x)] for t in (expected, got))
    return a != b and sorted(a) == sorted(b)


def compared_content(text: str, skip) -> int:
    """How many lines of ``text`` still say something once ``skip`` is left out: a line not skipped whole that is
    not a timing line, or that keeps a number not skipped. 0: nothing of the output is compared."""
    n_left = 0
    for n, line in enumerate(_lines(text), start=1):
        if (n, 0) in skip or not line.strip():
            continue
        nums = len(_split(line)[1])
        if not _TIMING.search(line) or any((n, k) not in skip for k in range(1, nums + 1)):
            n_left += 1
    return n_left


def timing_numbers(text: str) -> set:
    """{(line, k)} for every number of the lines of ``text`` that report a timing or a rate (``kernel time 0.12
    ms``, ``bandwidth 812 GB/s``): the CUDA original's and the port's differ even when both are right."""
    out = set()
    for n, line in enumerate(_lines(text), start=1):
        if _TIMING.search(line):
            out |= {(n, k) for k in range(1, len(_split(line)[1]) + 1)}
    return out


def compare_text(expected: str, got: str, rel: float, abs_: float, what: str = "stdout", skip=frozenset()) -> str:
    """'' when ``got`` matches ``expected`` (words equal, numbers within the tolerance), else the first difference.
    ``skip``: what :func:`varying` found in the expected program's own runs, not compared."""
    a, b = _lines(expected), _lines(got)
    for n, (x, y) in enumerate(zip(a, b, strict=False), start=1):
        if x == y or (n, 0) in skip:
            continue
        wx, nx = _split(x)
        wy, ny = _split(y)
        if wx != wy or len(nx) != len(ny):
            return f"{what} line {n}: expected {x.strip()[:160]!r}, got {y.strip()[:160]!r}"
        for k, (u, v) in enumerate(zip(nx, ny, strict=True), start=1):
            if (n, k) in skip:
                continue
            same = (math.isnan(u) and math.isnan(v)) or u == v or abs(u - v) <= abs_ + rel * abs(u)
            if not same:
                return (f"{what} line {n}, number {k}: expected {u:g}, got {v:g} "
                        f"(tolerance rel {rel:g}, abs {abs_:g}): {y.strip()[:160]!r}")
    if len(a) != len(b):
        n = min(len(a), len(b)) + 1
        if len(a) > len(b):
            return f"{what} line {n}: expected {a[n - 1].strip()[:160]!r}, but the output ends after {len(b)} lines"
        return f"{what} line {n}: unexpected extra output {b[n - 1].strip()[:160]!r} ({len(b) - len(a)} extra lines)"
    return ""


# --- results -------------------------------------------------------------------------------------------------------
#: Why a run was not compared with CUDA (RunResult.not_compared_why starts with one of these codes).
NOT_COMPARED = {
    "original-not-built": "the CUDA original did not build with the nvcc here (its error follows)",
    "original-failed": "the CUDA original itself failed or did not finish here",
    "no-output": "the CUDA original printed nothing and wrote no file that was named: only exit statuses",
    "only-timing": "every line the CUDA original printed is a timing or a rate, or differs between its own two runs",
    "nothing-recorded": "no CUDA original here and no outputs recorded from a CUDA run (a manifest)",
    "port-not-built": "the port was not built to run here",
    "port-failed": "the port did not run to its end",
}


def _why(code: str, detail: str = "") -> str:
    return f"{code}: {NOT_COMPARED[code]}" + (f": {detail}" if detail else "")


@dataclass
class RunResult:
    program: str                 # main file, relative to SRC
    ported: str                  # main file, relative to OUT
    backend: str                 # where it ran: "cpu: wave64 simulator" | "rocm: <gpu>" | "cuda: <gpu> through ..."
    compiles: bool | None        # the port compiled and linked for the AMD target (None: no AMD compiler here)
    built: bool                  # the program that runs was built (the GPU build, or the simulator's)
    runs: bool | None            # None: not run
    matches: bool | None         # None: nothing to compare with
    status: str                  # matched | mismatch | ran | run-failed | not-built | cannot-simulate
    reference: str = ""          # what the outputs were compared with
    first_difference: str = ""
    args: list[str] = field(default_factory=list)
    exit_code: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    duration_s: float = 0.0
    original_exit: int | None = None                       # the CUDA original's run here (NVIDIA), when there was one
    original_stdout: str = ""
    not_compared: int = 0                                  # numbers/lines that differ between two runs of the original
    not_compared_at: list = field(default_factory=list)    # which: [line, number] ([line, 0]: the whole line)
    #: why the port's run was not compared with CUDA (matches is None): a code of NOT_COMPARED, then its words
    not_compared_why: str = ""
    original_needs: str = ""                               # the CUDA the original needs (it uses removed APIs)
    #: the port's own changes to what this program prints (a widened mask's %x -> %llx), shown beside a mismatch
    port_changes: list[str] = field(default_factory=list)
    exposed: list[dict] = field(default_factory=list)     # traps the run points at (the line is known)
    suspects: list[dict] = field(default_factory=list)    # traps flagged in this program's files (line not known)
    note: str = ""

    def to_json(self) -> dict:
        return asdict(self)


# --- building for the simulator --------------------------------------------------------------------------------
def _sim_tree(out_r: Path, files: list[str], sim_root: Path) -> dict[str, list[str]]:
    """Every ported source and header rewritten for the simulator under ``sim_root`` (lines kept); returns
    {file: what the simulator cannot run in it}."""
    from rocmlab.hip import simulate

    problems: dict[str, list[str]] = {}
    if sim_root.exists():
        shutil.rmtree(sim_root)
    for rel in files:
        text = (out_r / rel).read_text(encoding="utf-8", errors="replace")
        if not rel.endswith(".c"):
            tr = simulate.translate(text)
            if tr.notes:
                problems[rel] = list(tr.notes)
            text = tr.cuda_source            # (the field's name is hipcuda's: here it is the simulator's C++)
        dest = sim_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
    return problems


def _sim_build(tc, sim_root: Path, build: Path, tus: list[str], main: str, include_dirs, defines) -> tuple[str, str]:
    """(program path, '') or ('', the first error) for ``main`` and every other ported unit without a main."""
    from rocmlab.hip import compile as driver
    from rocmlab.port import unit_build

    objs = []
    inc = [str(sim_root / d) for d in include_dirs]
    for rel in [main, *tus]:
        obj = build / "obj" / (rel + ".o")
        if not obj.is_file():
            if unit_build.is_c(rel):
                r = driver.file_result(tc, lambda o, rel=rel: unit_build.c_command(tc, sim_root / rel, o, inc, defines),
                                        obj, sim_root.resolve(), unit_build.COMPILE_TIMEOUT_S, Path(rel).name)
            else:
                r = driver.compile_file(tc, sim_root / rel, obj, include_dirs=inc, defines=defines,
                                        flags=("-O1", "-w", "-ferror-limit=5"), cwd=sim_root,
                                        time_limit=unit_build.COMPILE_TIMEOUT_S)
            if not r.ok:
                d = next((x for x in r.diagnostics if x.severity == "error"), None)
                where = f"{rel}:{d.line}: " if d and d.line else f"{rel}: "
                return "", where + (d.message if d else r.log.strip()[-300:])
        objs.append(obj)
    program = build / "bin" / str(Path(main).with_suffix(""))
    program.parent.mkdir(parents=True, exist_ok=True)
    runtime = str(Path(driver.simulator_runtime(tc)).resolve())     # the sandbox binds resolved folders
    r = driver.link(tc, objs, program, libs=[runtime, "-pthread"], cwd=sim_root,
                    time_limit=unit_build.COMPILE_TIMEOUT_S)
    if not r.ok:
        return "", "link: " + (r.diagnostics[0].message if r.diagnostics else r.log.strip()[-300:])
    return str(program), ""


def _run(kind: str, root, program: str, case: Case, src_root: Path, gpu: bool, sim: bool):
    """Run ``program`` with ``case``'s arguments in a fresh folder holding its input files; returns
    (Completed, {written file: bytes})."""
    from rocmlab.hip import compile as driver
    from rocmlab.hip import simulate

    with tempfile.TemporaryDirectory(prefix="rocmlab-port-run-") as tmp:
        work = Path(tmp) / "run"
        work.mkdir()
        for rel in case.inputs:
            dest = work / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src_root / rel, dest)
            os.chmod(dest, 0o644)
        env = simulate.run_env(case.timeout_s) if sim else None
        done = driver.run_program(kind, root, [program, *case.args], scratch=str(work), time_limit=case.timeout_s,
                                  memory_bytes=settings.RUN_MEMORY_BYTES if not gpu else None,
                                  output_bytes=settings.RUN_OUTPUT_BYTES, env=env, gpu=gpu,
                                  ro_binds=(str(Path(program).parent),))
        written = {}
        for name in case.files:
            p = work / name
            if p.is_file() and not p.is_symlink() and p.stat().st_size <= settings.RUN_FILE_BYTES:
                written[name] = p.read_bytes()
    return done, written


def judge(case: Case, done, written: dict[str, bytes], src_root: Path, manifest: bool,
          skip=frozenset()) -> tuple[bool | None, str]:
    """(matches, first difference) of one run against the recorded CUDA outputs (``skip``: see compare_text)."""
    if not manifest:
        return None, ("" if done.returncode == 0 and not done.timed_out else
                      f"{done.explain()} (no recorded outputs to compare)")
    if done.timed_out:
        return False, f"did not finish: {done.explain()}"
    if case.exit is not None and done.returncode != case.exit:
        return False, f"exit status: expected {case.exit}, got {done.returncode} ({done.explain()})"
    if case.stdout is not None:
        diff = compare_text(case.stdout, done.stdout, case.rel, case.abs, skip=skip or case.skip)
        if diff:
            return False, diff
    for name, exp_rel in case.files.items():
        exp = (src_root / exp_rel).read_bytes()
        got = written.get(name)
        if got is None:
            return False, f"output file {name}: not written"
        if got == exp:
            continue
        if Path(name).suffix in _TEXT_SUFFIXES:
            diff = compare_text(exp.decode(errors="replace"), got.decode(errors="replace"), case.rel, case.abs, name)
            if diff:
                return False, diff
        else:
            at = next((i for i, (x, y) in enumerate(zip(exp, got, strict=False)) if x != y), min(len(exp), len(got)))
            return False, f"output file {name}: bytes differ from offset {at} ({len(exp)} expected, {len(got)} written)"
    return True, ""


def _link_traps(result: RunResult, traps, files: set[str], stderr: str):
    """Traps the run exposed (the simulator named their line) and, for a mismatch, those flagged in the files."""
    lines = {int(n) for n in re.findall(r"\bline (\d+)\b", stderr)}
    for t in traps:
        if t.path not in files or t.origin != "own" or t.severity == "info":
            continue
        row = {"path": t.path, "line": t.line, "src_path": t.src_path, "src_line": t.src_line, "rule": t.rule,
               "severity": t.severity}
        if t.line in lines:
            result.exposed.append(dict(row, how="the simulator stopped or reported at this line"))
        elif result.matches is False or result.runs is False:
            result.suspects.append(row)


def nvidia_toolchain():
    """nvcc where this machine's GPU is an NVIDIA one (the ``cuda`` backend), else None."""
    from rocmlab.hip import compile as driver

    if driver.resolve_platform(None).backend != "cuda":
        return None
    return driver.find_toolchain("nvcc")


def _cuda_tree(out_r: Path, files: list[str], cuda_root: Path) -> dict[str, list[str]]:
    """Every ported file translated back to CUDA (:func:`rocmlab.hip.hipcuda.translate`, lines kept) under
    ``cuda_root``; returns {file: HIP names it has no CUDA spelling for}."""
    from rocmlab.hip import hipcuda

    problems: dict[str, list[str]] = {}
    if cuda_root.exists():
        shutil.rmtree(cuda_root)
    for rel in files:
        text = (out_r / rel).read_text(encoding="utf-8", errors="replace")
        if rel.endswith(CUDA_NEEDS_NO_SHIM):     # kept as empty lines, so that every line keeps its number
            dest = cuda_root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(f"#pragma once  // {CUDA_NEEDS_NO_SHIM}: not needed on NVIDIA (CUDA's cooperative groups "
                            "shuffle any type)" + "\n" * max(1, text.count("\n")), encoding="utf-8")
            continue
        tr = hipcuda.translate(text)
        if tr.unknown_names:
            problems[rel] = list(tr.unknown_names)
        dest = cuda_root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(tr.cuda_source, encoding="utf-8")
    return problems


#: The port's shim that HIP needs and CUDA does not (tile shuffles of vector types): empty in the CUDA tree.
CUDA_NEEDS_NO_SHIM = "rocmlab_port/cg_vector_shfl.h"
#: Files nvcc compiles as host code (the rest of a port's units are GPU code: ``-x cu``).
_HOST_SUFFIXES = (".c", ".cpp", ".cc", ".cxx", ".C")


#: CUDA libraries a program links when one of its files includes their header (the port maps hipBLAS, hipRAND,
#: hipFFT, hipSPARSE and hipSOLVER to these on the way back to CUDA): "blas" goes through the grader's cuBLAS finder
#: (the CUDA toolkit or the nvidia-cublas wheel); the others are in the toolkit's own library folder, which nvcc links
#: from.
CUDA_LIBRARIES = {"cublas_v2.h": "blas", "cublas.h": "blas", "curand.h": "-lcurand", "cufft.h": "-lcufft",
                  "cusparse.h": "-lcusparse", "cusparse_v2.h": "-lcusparse", "cusolverDn.h": "-lcusolver"}
_INCLUDED = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', re.MULTILINE)
_SOURCE_SUFFIXES = (".cu", ".cuh", ".hip", ".h", ".hpp", ".c", ".cpp", ".cc", ".cxx", ".C")


def cuda_library_flags(texts) -> tuple[tuple[str, ...], str]:
    """(nvcc's link flags, '' or the fix) for the CUDA libraries that ``texts`` (a program's source files) include."""
    from rocmlab.grader import libs

    wanted = {CUDA_LIBRARIES[Path(h).name] for t in texts for h in _INCLUDED.findall(t)
              if Path(h).name in CUDA_LIBRARIES}
    out = sorted(w for w in wanted if w != "blas")
    if "blas" in wanted:
        blas, why = libs.flags(["blas"], nvidia=True)
        if why:
            return (), why
        out = [*blas, *out]
    return tuple(out), ""


def _project_texts(root: Path) -> list[str]:
    """The text of every source file under ``root`` (a library header may be included from any of them)."""
    return [p.read_text(errors="replace") for p in sorted(root.rglob("*"))
            if p.suffix in _SOURCE_SUFFIXES and p.is_file()]


#: Read before each ported C++ or CUDA unit on the way back to CUDA: hipProfilerStart/Stop are declared by HIP's runtime API
#: header, which becomes cuda_runtime_api.h, while CUDA declares cudaProfilerStart/Stop in a header of their own.
CUDA_PRE_INCLUDE = ("-include", "cuda_profiler_api.h")


def nvcc_flags(rel: str) -> tuple[str, ...]:
    """nvcc's flags for one ported unit: GPU code (``.hip``) as CUDA, host files as the original's were (C files
    without the C++ pre-include)."""
    if rel.endswith(".c"):
        return ("-O2", "-w")
    return (*CUDA_PRE_INCLUDE, "-O2", "-w") if rel.endswith(_HOST_SUFFIXES) else \
        (*CUDA_PRE_INCLUDE, "-O2", "-w", "-x", "cu")


def nvcc_program(tc, root: Path, build: Path, tus: list[str], main: str, include_dirs, defines, target: str,
                 flags_for) -> tuple[str, str]:
    """``main`` built with nvcc for ``target`` as the port's AMD build is: every unit of ``root`` compiled to an object
    (``flags_for(rel)``), the units without a main in one static archive, ``main`` linked against it (the linker takes
    only the members it needs, so a folder with two variants of one kernel builds each of its programs).
    ``include_dirs``: absolute. Returns (program, '') or ('', the first error)."""
    from rocmlab.hip import compile as driver

    def first(r, rel=""):
        d = next((x for x in r.diagnostics if x.severity == "error"), None)
        where = f"{rel}:{d.line}: " if d and d.line else f"{rel}: " if rel else ""
        return where + (d.message if d else r.log.strip()[-300:])

    objs = {}
    for rel in [main, *tus]:
        obj = build / "obj" / (rel + ".o")
        if not obj.is_file():
            r = driver.compile_file(tc, root / rel, obj, targets=(target,), include_dirs=include_dirs,
                                    defines=defines, flags=flags_for(rel), cwd=root,
                                    time_limit=settings.COMPILE_TIME_LIMIT_S)
            if not r.ok:
                if rel == main:
                    return "", "nvcc: " + first(r, rel)
                continue                      # as in the AMD build: the link says if a symbol is missing
        objs[rel] = obj
    archive = build / "lib" / (str(Path(main).with_suffix("")) + ".a")
    archive.parent.mkdir(parents=True, exist_ok=True)
    lib = [objs[t] for t in tus if t in objs]
    if lib and not driver.archive(tc, lib, archive, cwd=root).ok:
        return "", f"nvcc: could not archive {len(lib)} object(s) ({driver.archiver(tc)})"
    program = build / "bin" / str(Path(main).with_suffix(""))
    program.parent.mkdir(parents=True, exist_ok=True)
    libraries, why = cuda_library_flags(_project_texts(root))
    if why:
        return "", f"nvcc link: {why}"
    r = driver.link(tc, [objs[main], *([archive] if lib else [])], program, libs=libraries, cwd=root,
                    time_limit=settings.COMPILE_TIME_LIMIT_S)
    if not r.ok:
        failed = [t for t in tus if t not in objs]
        return "", "nvcc link: " + first(r) + (f" (did not compile: {', '.join(failed[:4])})" if failed else "")
    return str(program), ""


def _cuda_build(tc, cuda_root: Path, build: Path, tus: list[str], main: str, include_dirs, defines,
                target: str) -> tuple[str, str]:
    """The port, translated back to CUDA, built with nvcc for ``target``: (program, '') or ('', the first error)."""
    return nvcc_program(tc, cuda_root, build, tus, main, [str(cuda_root / d) for d in include_dirs], defines, target,
                        nvcc_flags)


def _original(tc, src_root: Path, build: Path, tus: list[str], main: str, include_dirs, defines, target: str):
    """The CUDA original built with nvcc for ``target``, as the port is built (:func:`nvcc_program`; nvcc picks each
    file's language from its suffix, as the original's own build does): (program, '') or ('', why).
    ``include_dirs``: absolute folders (SRC's own and the user's -I folders outside SRC)."""
    program, why = nvcc_program(tc, src_root, build / "cuda-original", tus, main, include_dirs, defines, target,
                                lambda rel: ("-O2", "-w"))
    return program, (f"the CUDA original did not build with nvcc: {why}" if why else "")


def run_programs(result, src_root: Path, out_r: Path, build_dir: Path, files: list[str], units: dict[str, str],
                 mains: set[str], include_dirs, defines=(), manifest: Path | None = None, progress=None,
                 timeout_s: float = RUN_TIMEOUT_S, original_includes=None) -> list[RunResult]:
    """Build and run every program of the port (see the module's text); one RunResult per run.
    ``original_includes``: the CUDA original's include folders (absolute; default: ``include_dirs`` under SRC)."""
    from rocmlab.hip import compile as driver
    from rocmlab.hip import simulate

    cases = load_manifest(manifest, src_root) if manifest else []
    by_prog: dict[str, list[Case]] = {}
    for c in cases:
        by_prog.setdefault(c.program, []).append(c)
    back = dict(units)                                 # ported rel -> source rel
    unknown = [p for p in by_prog if p not in units.values()]
    if unknown:
        raise PortInputError(f"--manifest {manifest}: {', '.join(unknown)} is not a main file of the project "
                             f"(mains: {', '.join(sorted(back[m] for m in mains)) or 'none'}): name the file with "
                             "main(), relative to SRC")
    gpu_build = {link.main: out_r / link.program for link in result.links if link.status == "ok"}
    on_gpu = result.toolchain_kind == "rocm" and driver.resolve_platform(None).backend == "rocm"
    nv_tc = None if on_gpu else nvidia_toolchain()
    nv_target = driver.gpu_target("nvcc") if nv_tc is not None else ""
    sim_tc = None if on_gpu or nv_tc is not None else driver.find_toolchain(simulate.KIND)
    tus = sorted(u for u in units if u not in mains)
    sim_root = build_dir / SIM_DIR / "tree"
    sim_problems = _sim_tree(out_r, files, sim_root) if sim_tc is not None else {}
    cuda_root = build_dir / CUDA_DIR / "tree"
    cuda_problems = _cuda_tree(out_r, files, cuda_root) if nv_tc is not None else {}
    if original_includes is None:
        original_includes = [str(src_root / d) for d in include_dirs if (src_root / d).is_dir()]
    texts = {f: (out_r / f).read_text(encoding="utf-8", errors="replace") for f in files}
    sources = {row["ported"]: row["source"] for row in result.files}     # ported file -> the CUDA file it came from
    originals = {}
    for ported, source in sources.items():
        p = Path(source) if os.path.isabs(source) else src_root / source
        if p.is_file():
            originals[ported] = p.read_text(encoding="utf-8", errors="replace")
    out: list[RunResult] = []
    for main in sorted(mains):
        src_main = back[main]
        runs = by_prog.get(src_main) or [Case(src_main, timeout_s=timeout_s)]
        in_manifest = src_main in by_prog
        prog_files = set()
        for unit in [main, *tus]:
            prog_files |= set(translate.project_includes(unit, texts, list(include_dirs)))
        # what it builds into: the AMD GPU build, the HIP->CUDA build for the NVIDIA GPU, or the simulator build
        if on_gpu:
            program, why, backend = str(gpu_build.get(main, "")), "" if main in gpu_build else "not linked", \
                f"rocm: {result.targets[0]} GPU"
        elif nv_tc is not None:
            # built even where a file has HIP names without a CUDA spelling (often in #if blocks nvcc skips)
            backend = f"{driver.resolve_platform(None).label} {HIP_CUDA}"
            program, why = _cuda_build(nv_tc, cuda_root, build_dir / CUDA_DIR, tus, main, include_dirs, defines,
                                       nv_target)
            unknown = [f"{f}: {', '.join(cuda_problems[f][:5])}" for f in sorted(prog_files) if f in cuda_problems]
            if why and unknown:
                why += "; HIP names with no CUDA spelling in its files: " + "; ".join(unknown[:3])
        elif sim_tc is None:
            program, why, backend = "", f"no way to run it here: {simulate.problem()}", ""
        else:
            blocked = [f"{f}: {m}" for f in sorted(prog_files) for m in sim_problems.get(f, [])]
            if blocked:
                program, why = "", "the simulator cannot run it: " + "; ".join(blocked[:3])
            else:
                program, why = _sim_build(sim_tc, sim_root, build_dir / SIM_DIR, tus, main, include_dirs, defines)
            backend = simulate.LABEL
        original, orig_why = "", ""
        needs = cuda_removed.needs_text(cuda_removed.removed_apis(
            {sources.get(f, f): originals[f] for f in sorted(prog_files) if f in originals}))
        if nv_tc is not None:
            original, orig_why = _original(nv_tc, src_root, build_dir, [back[t] for t in tus], src_main,
                                           original_includes, defines, nv_target)
        changes = print_changes(result.fixes, prog_files)
        compiles = (main in gpu_build) if result.compiled else None
        for case in runs:
            r = RunResult(src_main, main, backend, compiles, bool(program), None, None,
                          "not-built" if not program else "ran", args=list(case.args), original_needs=needs)
            if not program:
                r.status = "cannot-simulate" if why.startswith("the simulator cannot") else "not-built"
                r.note = why + (f"; {needs}" if needs else "")
                r.not_compared_why = _why("port-not-built", why + (f" ({needs})" if needs else ""))
                out.append(r)
                continue
            done, written = _run("rocm" if on_gpu else "nvcc" if nv_tc is not None else simulate.KIND,
                                 None if on_gpu or nv_tc is not None else sim_tc.root, program, case, src_root,
                                 on_gpu or nv_tc is not None, sim_tc is not None)
            r.exit_code, r.duration_s = done.returncode, round(done.duration_s, 3)
            r.stdout_tail, r.stderr_tail = done.stdout[-2000:], done.stderr[-2000:]
            r.runs = not done.timed_out and (done.returncode == 0 or (in_manifest and case.exit == done.returncode))
            if original:                       # the CUDA original, here: its outputs are the reference
                _compare_with_original(r, case, done, written, original, src_root, in_manifest)
            else:
                r.reference = (f"outputs recorded from a CUDA run ({case.recorded or 'the manifest'})" if in_manifest
                               else "nothing: no recorded outputs for this program (add it to the manifest)")
                if orig_why:
                    r.note = orig_why + (f"; {needs}" if needs else "")
                r.matches, r.first_difference = judge(case, done, written, src_root, in_manifest)
                if r.matches is None:
                    r.not_compared_why = (_why("original-not-built", orig_why.split(": ", 1)[-1]
                                               + (f" ({needs})" if needs else "")) if orig_why else
                                          _why("nothing-recorded"))
            r.status = ("matched" if r.matches else "mismatch" if r.matches is False and r.runs
                        else "run-failed" if not r.runs else "ran")
            if r.status == "run-failed" and not r.first_difference:
                r.first_difference = done.explain()
            if r.matches is None and not r.runs and not r.not_compared_why.startswith("original-"):
                r.not_compared_why = _why("port-failed", done.explain())
            if r.matches is False and changes:
                r.port_changes = changes
            stopped = simulate.stopped_message(done.stderr)
            if stopped:
                r.note = (r.note + "; " if r.note else "") + f"the simulator stopped it: {stopped}"
            _link_traps(r, result.traps, prog_files, done.stderr)
            out.append(r)
            if progress:
                progress(r)
    return out


#: The port's fixes that change what a program prints (shown beside a mismatch as the port's own change).
PRINT_CHANGES = ("format-64",)
def print_changes(fixes, files) -> list[str]:
    """The port's own changes to what a program prints (PRINT_CHANGES) in ``files`` (its ported files), as lines
    to show beside a mismatch: the CUDA original printed 32 bits of a mask where the port prints 64."""
    return [f"{fx.path}:{fx.line}: {fx.before.strip()[:100]} -> {fx.after.strip()[:100]} ({fx.kind}: the port's own "
            f"change to what the program prints: {fx.why[:160]})" for fx in fixes
            if fx.kind in PRINT_CHANGES and fx.path in files]


#: The CUDA original's stdout kept in a run's result (for recording a manifest from it).
ORIGINAL_STDOUT_BYTES = 64 << 10


def _compare_with_original(r: RunResult, case: Case, done, written, original: str, src_root: Path,
                           in_manifest: bool) -> None:
    """Run the CUDA original twice with the same case; compare the port's run with the first, leaving out what
    differs between the two (:func:`varying`). Sets ``r``'s matches, first difference, reference and note."""
    ref, _ = _run("nvcc", None, original, case, src_root, True, False)
    again, _ = _run("nvcc", None, original, case, src_root, True, False)
    r.original_exit, r.original_stdout = ref.returncode, ref.stdout[:ORIGINAL_STDOUT_BYTES]
    r.reference = "the CUDA original, built with nvcc and run on this machine's NVIDIA GPU"
    if ref.timed_out or (ref.returncode != 0 and not in_manifest):
        r.matches = None
        r.note = (f"the CUDA original itself {ref.explain()} here (it may need arguments or input files: name them "
                  "in the manifest): nothing to compare")
        r.not_compared_why = _why("original-failed", ref.explain())
        return
    skip = (varying(ref.stdout, again.stdout) if again.returncode == ref.returncode else set()) | \
        timing_numbers(ref.stdout)
    r.not_compared, r.not_compared_at = len(skip), sorted([n, k] for n, k in skip)
    left = compared_content(ref.stdout, skip)
    if not left and not case.files:
        if done.timed_out or done.returncode != ref.returncode:
            r.matches = False
            r.first_difference = (f"did not finish: {done.explain()}" if done.timed_out else
                                  f"exit status: expected {ref.returncode}, got {done.returncode} ({done.explain()})")
            return
        r.matches = None
        r.not_compared_why = (_why("no-output", f"both exited {ref.returncode}") if not _lines(ref.stdout) else
                              _why("only-timing", f"{len(_lines(ref.stdout))} line(s), both exited {ref.returncode}"))
        return
    expected = Case(case.program, case.args, case.inputs, ref.returncode, ref.stdout, {}, case.rel, case.abs,
                    case.timeout_s)
    r.matches, r.first_difference = judge(expected, done, written, src_root, True, skip)
    if r.matches is False and reordered(ref.stdout, done.stdout):
        r.first_difference += ("; the same lines in another order (printf from different blocks or threads has "
                               "no order: still a mismatch, since an order can be the answer)")
    if skip:
        r.note = (f"{len(skip)} number(s) or line(s) not compared: timings and rates, and what differs between two "
                  "runs of the CUDA original (addresses, clocks)")
