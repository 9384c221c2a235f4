"""Static rules over what the compiler sees, not over raw text.

:func:`analyze` runs THE trap scanner (:func:`rocmlab.cuda2hip.scan.scan`, token-based and preprocessor-aware:
the code compiled for the AMD target in the device and host passes) on the submission, with
``exercise_io.h`` as the only include folder and an empty project folder (so ``#include "..."`` reaches
nothing else). It runs in a forked child with a time limit (``settings.STATIC_TIME_LIMIT_S``): a file built
to make the preprocessor slow ends as "not run", never as a hung grader.

Each rule takes the :class:`Analysis` and returns a list of problems ``(line, text)``. Every rule here is
linear in the input: token walks, and the spec's ``requires`` regular expressions are matched per
statement of at most ``STATEMENT_CHARS`` characters.

:func:`compile_inputs` is the grader's policy on what a submission may make the compiler read: system
headers (``<...>``) and ``"exercise_io.h"``, nothing else (no ``#embed``, no absolute or ``..`` paths,
no computed includes, no ``.incbin`` in inline assembly).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import stat
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rocmlab import sandbox, settings
from rocmlab.grader.spec import COMMON_DIR, common_header_hash
from rocmlab.paths import cache_dir
from rocmlab.cuda2hip.scan import ScanReport, Tok, scan, tokenize

SUBMISSION = "submission.hip"
#: Characters of one statement the ``requires`` regular expressions see (keeps them linear overall).
STATEMENT_CHARS = 512
_ERRCHK = ("hipGetLastError", "hipPeekAtLastError")
_HIP_API = re.compile(r"(?:hip|hipblas)[A-Z]\w*")
_NOT_CHECKED_OK = {"hipLaunchKernelGGL"}
_STATEMENT_START = {";", "{", "}", "else"}
_INCLUDES = {"include", "include_next", "import"}


class AnalysisError(RuntimeError):
    """The static analysis could not run (time limit, scanner failure): the checks say "not run"."""


@dataclass
class Analysis:
    report: ScanReport
    tokens: list[Tok]                  # the submission's compiled tokens (directive lines left out), in order
    directives: list[list[Tok]]        # every directive line of the submission (compiled or not)
    strings: list[Tok] = field(default_factory=list)     # every string literal token of the submission
    seconds: float = 0.0
    #: the scan of the submission with its warp-like integer constants (``constexpr int W = 32``, enum
    #: members) folded into their uses, for the warp-size rule; None when there were none
    folded: ScanReport | None = None
    constants: dict[str, str] = field(default_factory=dict)   # the folded constants: name -> literal
    preprocessor: str = ""             # whose preprocessor decided what is compiled (clang's, or the scanner's)
    files_read: list[str] = field(default_factory=list)      # what clang's preprocessor read
    #: (line, text) of assembler directives that read files, found in clang's preprocessed output of the
    #: submission (macros expanded, string escapes decoded): what the assembler would see
    asm_reads: list[tuple[int, str]] = field(default_factory=list)

    @property
    def launches(self) -> list[tuple[int, str]]:
        return [(line, k) for f, line, k in self.report.launches if f == SUBMISSION]

    @property
    def gpu_work(self) -> bool:
        """A kernel launch or a GPU library call in compiled code: without one a program does nothing on the GPU."""
        return bool(self.launches or self.report.libraries)


def _analyze(source: str, target: str, root: str) -> Analysis:
    """``root``: an empty folder (the project folder, so ``#include "..."`` reaches nothing), made and removed by
    the parent, so a child killed at the time limit leaves no temporary folder behind."""
    start = time.monotonic()
    report = scan(source, target=target, include_dirs=[str(COMMON_DIR)], filename=SUBMISSION, root=root)
    lines = tokenize(source)
    active = [True] * len(lines)
    for a, b in report.inactive_lines.get(SUBMISSION, []):
        for i in range(a - 1, min(b, len(lines))):
            active[i] = False
    tokens, directives, strings = [], [], []
    for idx, toks in enumerate(lines):
        if toks and toks[0].text == "#":
            directives.append(toks)
        elif active[idx]:
            tokens += toks
        strings += [t for t in toks if t.kind == "str"]
    consts = {**macro_constants(directives, active), **warp_constants(tokens)}
    folded = None
    if consts:
        folded = scan(fold_constants(source, consts), target=target, include_dirs=[str(COMMON_DIR)],
                      filename=SUBMISSION, root=root)
    return Analysis(report, tokens, directives, strings, time.monotonic() - start, folded, consts)


# --- constants the warp rule must see through ---------------------------------------------------------

#: Values that betray a 32-lane warp (a lane mask, a width, a half width, a 32-bit full mask).
WARP_VALUES = {16, 31, 32, 0xFFFFFFFF}
_DECL_WORDS = {"const", "constexpr", "static", "inline", "__device__", "__host__", "__constant__", "unsigned",
               "signed", "int", "long", "short", "char", "auto", "size_t", "int32_t", "uint32_t", "int64_t",
               "uint64_t", "int16_t", "uint16_t", "std", "::"}


def _int_value(text: str) -> int | None:
    t = text.rstrip("uUlL").replace("'", "")
    try:
        return int(t, 0)
    except ValueError:
        try:
            return int(t, 8) if t.startswith("0") else None
        except ValueError:
            return None


def warp_constants(tokens: list[Tok]) -> dict[str, str]:
    """Named integer constants of the compiled code whose value is warp-like: ``[static] const(expr) T NAME =
    32;`` (also ``{32}``, ``(32)``, ``32u``, ``0x20``) and enum members ``NAME = 32``. One pass (linear)."""
    out: dict[str, str] = {}
    n, enum_depth = len(tokens), 0
    for i, t in enumerate(tokens):
        if t.text == "enum":
            enum_depth = 1
            continue
        if t.text == ";":
            enum_depth = 0
        if t.kind != "id" or i + 2 >= n or tokens[i + 1].text not in ("=", "{", "("):
            continue
        j = i + 2
        while j < n and j < i + 6 and tokens[j].text in ("(", "{"):
            j += 1
        if j >= n or tokens[j].kind != "num":
            continue
        k = j + 1
        while k < n and k < j + 5 and tokens[k].text in (")", "}"):
            k += 1
        if k >= n or tokens[k].text not in (";", ",", "}"):
            continue
        # a declaration: const/constexpr among the words before the name, or an enum member
        back, is_const = i - 1, False
        while back >= 0 and back > i - 8 and tokens[back].text in _DECL_WORDS:
            is_const = is_const or tokens[back].text in ("const", "constexpr")
            back -= 1
        in_enum = enum_depth and back >= 0 and tokens[back].text in ("{", ",")
        if not (is_const or in_enum):
            continue
        v = _int_value(tokens[j].text)
        if v in WARP_VALUES:
            out[t.text] = tokens[j].text
    # a cooperative-groups tile size (tiled_partition<kGroup>) is a group size chosen on purpose, not a warp size
    for i in range(2, n):
        if tokens[i - 1].text == "<" and tokens[i - 2].text in _TILE_TEMPLATES:
            out.pop(tokens[i].text, None)
    return out


_TILE_TEMPLATES = {"tiled_partition", "thread_block_tile"}


def macro_constants(directives: list[list[Tok]], active: list[bool] | None = None) -> dict[str, str]:
    """Object-like macros of compiled lines whose value is a warp-like integer (``#define WS 32``,
    ``#define WS (32u)``): folded into their uses like named constants. Linear."""
    out: dict[str, str] = {}
    for d in directives:
        if len(d) < 4 or d[1].text != "define" or d[2].kind != "id":
            continue
        if active is not None and 0 < d[0].line <= len(active) and not active[d[0].line - 1]:
            continue
        body = [t for t in d[3:] if t.text not in ("(", ")")]
        if d[3].text == "(" and d[3].col == d[2].col + len(d[2].text):   # a function-like macro: not a constant
            continue
        if len(body) == 1 and body[0].kind == "num" and _int_value(body[0].text) in WARP_VALUES:
            out[d[2].text] = body[0].text
    return out


_IDENT = re.compile(r"(?<![\w.])(?<!->)[A-Za-z_]\w*")
_DECL = re.compile(r"([A-Za-z_]\w*)\s*[={(]\s*[({]*\s*[0-9]")


def fold_constants(source: str, consts: dict[str, str]) -> str:
    """``source`` with each use of a folded constant replaced by its literal (declarations kept, line
    numbers kept), so the scanner judges ``x % W`` as it judges ``x % 32``. Linear: one identifier regex
    per line and a dict look-up per identifier."""
    def sub(text: str) -> str:
        return _IDENT.sub(lambda m: consts.get(m.group(0), m.group(0)), text)

    out = []
    for line in source.split("\n"):
        m = next((d for d in _DECL.finditer(line) if d.group(1) in consts), None)
        if m is not None:     # keep the declaration itself; fold the uses after it on the same line
            end = line.find(";", m.end())
            end = len(line) if end < 0 else end
            out.append(sub(line[:m.start()]) + line[m.start():end] + sub(line[end:]))
        else:
            out.append(sub(line))
    return "\n".join(out)


def _child(conn, source, target, root):
    try:
        conn.send(("ok", _analyze(source, target, root)))
    except BaseException as exc:       # noqa: BLE001 - reported to the parent, which decides
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()


def _starved_or_not(pid: int, limit: float, what: str) -> None:
    """At a time-out of ``pid`` (still running): raise :class:`rocmlab.sandbox.MachineBusy` when the machine starved
    it (its threads waited for a CPU far longer than they ran: :func:`rocmlab.sandbox.starved`), so that a busy
    grading machine never refuses a learner's file; return when it had the CPU (the file's own fault)."""
    account = sandbox.tree_cpu_account(pid)
    if account and sandbox.starved(True, account[0], account[1], limit):
        raise sandbox.MachineBusy(f"{what} did not finish in {limit:g} s because {sandbox.TOO_BUSY}: it got "
                                  f"{account[0]:.1f} s on a CPU and waited {account[1]:.1f} s for one. A fault of "
                                  "the machine, not of the file: not scored; grade again when the machine is less busy")


def analyze(source: str, target: str | None = None, *, time_limit_s: float | None = None, flags=()) -> Analysis:
    """The scanner's view of ``source`` for ``target`` (an NVIDIA target is scanned as the default AMD one:
    the checks are about the AMD port). Where an AMD compiler is here, the scanner judges what clang compiles:
    :func:`clang_view` (clang's own preprocessor, in the sandbox, with the build's ``flags``) decides which
    lines are compiled. Raises :class:`AnalysisError` when it cannot finish in time, or clang's preprocessor
    stops (the submission's own ``#error``, a missing header: the learner's failure); and
    :class:`rocmlab.sandbox.MachineBusy` when the time ran out because the machine starved it (not scored)."""
    target = target if target in settings.AMD_TARGETS else settings.DEFAULT_TARGET
    limit = time_limit_s or settings.STATIC_TIME_LIMIT_S
    if not flags:                         # the grader's include folder (exercise_io.h only), as the build has it
        flags = ("-I", include_dir())
    view = clang_view(source, target, flags, limit)     # its own time limit, then the scan's
    judged = judged_source(source, view.lines) if view is not None else source
    ctx = multiprocessing.get_context("fork")
    root = tempfile.mkdtemp(prefix="rocmlab-static-")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, judged, target, root), daemon=True)
    try:
        proc.start()
    except BaseException:
        os.rmdir(root)
        raise
    send.close()
    try:
        if not recv.poll(limit):
            _starved_or_not(proc.pid, limit, "the static analysis")
            raise AnalysisError(f"the static analysis did not finish in {limit:g} s (a very large or macro-heavy "
                                "file?): make the file smaller")
        try:
            kind, value = recv.recv()
        except EOFError:
            raise AnalysisError("the static analysis stopped without an answer") from None
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(2)
        recv.close()
        shutil.rmtree(root, ignore_errors=True)
    if kind != "ok":
        raise AnalysisError(f"the static analysis failed ({value}); tell the instructor")
    value.preprocessor = "clang (its own preprocessor output, in the sandbox)" if view is not None else \
        "rocmlab's scanner (no AMD compiler here, or clang's preprocessor stopped on the file)"
    value.files_read = view.files if view is not None else []
    value.asm_reads = view.asm_reads if view is not None else []
    return value


# --- what clang compiles ----------------------------------------------------------------------------

def _reachable_by_others(path: Path) -> bool:
    """True when every folder above ``path`` lets other users through (o+x): a sandbox that runs the compiler
    as another uid without bubblewrap's binds (the named fallback) can then read what is below it."""
    for p in (path, *path.parents):
        try:
            if p.exists() and not os.stat(p).st_mode & 0o001:
                return False
        except OSError:
            return False
    return True


def _include_base() -> Path:
    """Where the include folder lives: the cache (ROCMLAB_HOME), unless the sandbox is the fallback without
    bubblewrap and other users cannot pass through the cache (a 0700 home, as root's is): then a folder of this user's own under the system's temp folder, which the
    sticky bit keeps others from replacing; one that is not ours, or is a link, is refused."""
    base = cache_dir() / "grader-include"
    if sandbox.isolation().level == sandbox.BWRAP or _reachable_by_others(cache_dir()):
        return base      # bubblewrap binds the folder in: the folders above it on the host do not matter
    base = Path(tempfile.gettempdir()) / f"rocmlab-grader-include-{os.getuid()}"
    try:
        os.mkdir(base, 0o755)
    except FileExistsError:
        pass
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise RuntimeError(f"{base} is not a folder of this user's own (a link, another owner, or writable by "
                           f"others): remove it, or set ROCMLAB_HOME to a folder other users can pass through")
    return base


def include_dir() -> str:
    """A folder holding only exercise_io.h (the compiler sees it, not the rest of the grader's files), where the
    compiler's user can read it whatever the sandbox (see :func:`_include_base`)."""

    h = common_header_hash()
    d = _include_base() / h
    if not (d / "exercise_io.h").is_file():
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".exercise_io.h.{os.getpid()}.{threading.get_ident()}"
        shutil.copyfile(COMMON_DIR / "exercise_io.h", tmp)
        os.chmod(tmp, 0o644)
        os.replace(tmp, d / "exercise_io.h")
    for p in (d, d.parent):
        os.chmod(p, 0o755)
    return str(d)



@dataclass
class ClangView:
    lines: set[int]          # the submission's lines clang's preprocessor kept (device or host pass)
    files: list[str]         # every file the preprocessor read (from its line markers)
    asm_reads: list[tuple[int, str]] = field(default_factory=list)   # see Analysis.asm_reads


_MARKER = re.compile(r'^# (\d+) "((?:[^"\\]|\\.)*)"')
_LINE_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(?:line\b|\d)", re.MULTILINE)


def marker_lines(text: str, name: str) -> tuple[set[int], set[str]]:
    """From ``clang -E`` output: the lines of file ``name`` that produced output, and every file named by the
    line markers. Linear."""
    lines: set[int] = set()
    files: set[str] = set()
    cur, num = "", 0
    for out_line in text.split("\n"):
        m = _MARKER.match(out_line)
        if m:
            num, cur = int(m.group(1)), m.group(2)
            files.add(cur)
            continue
        if cur == name and out_line.strip():
            lines.add(num)
        num += 1
    return lines, files


def clang_view(source: str, target: str, flags=(), time_limit_s: float | None = None) -> ClangView | None:
    """Which lines of the submission clang compiles (its own preprocessor, device and host pass, in the
    sandbox, with the build's flags), or None when no AMD compiler is here or clang's preprocessor stops on
    the file (the scanner's own preprocessor decides then; the compile check fails on the same error).
    A ``#line`` directive is refused: it would hide lines from the markers."""
    from rocmlab.hip import compile as driver

    if _LINE_DIRECTIVE.search(_spliced(source)):
        raise AnalysisError("the submission uses #line (or a `# NUMBER` line marker): remove it; the grader maps "
                            "clang's output back to your lines")
    tc, _ = driver.choose("hip", target)
    if tc is None:
        return None
    lines: set[int] = set()
    files: set[str] = set()
    reads: set[tuple[int, str]] = set()
    limit = time_limit_s or settings.STATIC_TIME_LIMIT_S

    def one(kind: str):
        # not cached (a preprocessed file is megabytes): read what is needed, then remove the build folder
        with sandbox.machine_faults() as faults:      # this thread's runs: a starved one is the machine's
            o = driver.compile_source(source, tc, lang="hip", output_kind=kind, target=target, flags=flags,
                                      stem=SUBMISSION.rsplit(".", 1)[0], time_limit=limit, use_cache=False)
        if faults:
            shutil.rmtree(o.directory, ignore_errors=True)
            raise sandbox.MachineBusy(f"clang's preprocessor: {faults[0]}")
        try:
            text = o.read() if o.ok else ""
            return o, ((*marker_lines(text, SUBMISSION), asm_file_reads(text, SUBMISSION)) if o.ok else None)
        finally:
            shutil.rmtree(o.directory, ignore_errors=True)

    with ThreadPoolExecutor(max_workers=2) as pool:       # the device and the host pass side by side
        outcomes = list(pool.map(one, ("pre-device", "pre-host")))
    for o, marks in outcomes:
        if not o.ok and o.duration_s >= limit - 0.5:
            raise AnalysisError(f"clang's preprocessor did not finish in {limit:g} s (a very large or macro-heavy "
                                "file?): make the file smaller")
        if not o.ok:       # the learner's own failure (#error, <cuda_runtime.h>): the compile check fails on it;
            return None    # the static rules still judge the file with the scanner's own preprocessor
        got, read, asm = marks
        lines |= got
        files |= read
        reads |= set(asm)
    return ClangView(lines, sorted(files), sorted(reads))


_STRING = re.compile(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\((.*?)\)\1"|(?:u8|u|U|L)?"((?:\\.|[^"\\\n])*)"', re.DOTALL)
_ESCAPE = re.compile(r"\\(x[0-9A-Fa-f]+|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)", re.DOTALL)
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "e": "\x1b"}


def c_unescape(body: str) -> str:
    """A C string literal's body as the compiler stores it (``\\x2e`` -> ``.``, ``\\056`` -> ``.``): what the
    assembler reads from an ``asm("...")`` string."""
    def one(m):
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            return chr(int(e[1:], 16) & 0x10FFFF)
        if e[0] in "01234567":
            return chr(int(e, 8))
        return _SIMPLE_ESCAPES.get(e, e)
    return _ESCAPE.sub(one, body)


def asm_file_reads(text: str, name: str) -> list[tuple[int, str]]:
    """(line, text) for each assembler directive that reads a file (``.incbin``, ``.include``) or can spell one
    (``.macro``, ``.irp``, ...) in the string literals of ``clang -E`` output from file ``name``: macros are
    expanded there, and each literal is read after its escapes (adjacent literals joined, as the compiler
    joins them). Linear."""
    out: list[tuple[int, str]] = []
    cur, num, tail, tail_line = "", 0, "", 0
    for out_line in text.split("\n"):
        m = _MARKER.match(out_line)
        if m:
            num, cur = int(m.group(1)), m.group(2)
            continue
        if cur == name:
            last = 0
            for s in _STRING.finditer(out_line):
                if out_line[last:s.start()].strip():      # something between two literals: a new run
                    tail, tail_line = "", 0
                last = s.end()
                body = s.group(2) if s.group(2) is not None else c_unescape(s.group(3) or "")
                tail, tail_line = (tail + body.lower())[-64:], tail_line or num
                if any(x in tail for x in _ASM_READS):
                    out.append((tail_line, "`.incbin`/`.include` in inline assembly reads a file (after the "
                                           "compiler's escape processing): remove it"))
                    tail = ""
                elif any(x in tail for x in _ASM_BUILDS):
                    out.append((tail_line, "assembler macros and loops (.macro, .irp, .rept, .altmacro) in inline "
                                           "assembly can spell a directive that reads a file: remove them"))
                    tail = ""
            if out_line[last:].strip():
                tail, tail_line = "", 0
        num += 1
    return out


_COND_OPEN = {"if", "ifdef", "ifndef"}
_COND_NEXT = {"elif", "elifdef", "elifndef", "else"}


def judged_source(source: str, active: set[int]) -> str:
    """``source`` as clang compiles it, for the scanner: line splices joined, every conditional directive
    blanked, and every branch clang did not compile blanked (a branch is compiled when any of its lines
    produced output in clang's preprocessor, its #define/#include lines included). Line numbers kept, so the
    scanner's own evaluation of ``#if`` can no longer disagree with clang's. Linear."""
    lines = _spliced(source).split("\n")
    n = len(lines)
    hits = [0] * (n + 1)                       # prefix sums of the active lines (1-based line numbers)
    for i in range(n):
        hits[i + 1] = hits[i] + ((i + 1) in active)
    blank = [False] * n
    stack: list[int] = []                      # the first line index of the open branch, per nesting level

    def close(start: int, end: int) -> None:   # the branch is lines start..end-1 (0-based)
        if start < end and hits[end] - hits[start] == 0:
            for k in range(start, end):
                blank[k] = True

    for i, line in enumerate(lines):
        stripped = line.lstrip()
        if not stripped.startswith("#"):
            continue
        word = stripped[1:].lstrip().split(None, 1)[0] if stripped[1:].strip() else ""
        word = re.match(r"[A-Za-z_]*", word).group(0)
        if word in _COND_OPEN:
            blank[i] = True
            stack.append(i + 1)
        elif word in _COND_NEXT and stack:
            blank[i] = True
            close(stack[-1], i)
            stack[-1] = i + 1
        elif word == "endif" and stack:
            blank[i] = True
            close(stack.pop(), i)
    return "\n".join("" if b else line for line, b in zip(lines, blank, strict=True))


# --- the rules ---------------------------------------------------------------------------------------

def _finding_problems(findings) -> list[tuple[int, str]]:
    """One line per finding, one finding per line and rule (``x % 32, w = x / 32`` is one finding of its line);
    the first of each rule says why and the fix."""
    out, explained, seen = [], set(), set()
    for f in findings:
        if (f.line, f.rule) in seen:
            continue
        seen.add((f.line, f.rule))
        text = f"`{' '.join(f.snippet.split())[:60]}` ({f.rule})" if f.snippet else f"({f.rule})"
        if f.rule not in explained:
            explained.add(f.rule)
            text += f": {f.message} Fix: {f.fix}"
        out.append((f.line, text))
    return out


def no_cuda_left(a: Analysis, options: dict) -> list[tuple[int, str]]:
    return _finding_problems(a.report.compiled_findings("error", kinds=("cuda-left", "library", "asm", "texture")))


def no_warp_size(a: Analysis, options: dict) -> list[tuple[int, str]]:
    problems = _finding_problems(a.report.compiled_findings("error", kinds=("warp",)))
    if a.folded is not None:       # also through the named constants (constexpr int W = 32; x % W)
        seen = {ln for ln, _ in problems}
        names = ", ".join(f"{k} = {v}" for k, v in a.constants.items())
        problems += [(ln, f"{text} [through the constant {names}]")
                     for ln, text in _finding_problems(a.folded.compiled_findings("error", kinds=("warp",)))
                     if ln not in seen]
    return sorted(problems)


def errors_checked(a: Analysis, options: dict) -> list[tuple[int, str]]:
    toks, n = a.tokens, len(a.tokens)
    problems = []
    # macros whose body checks the last error count as a check after a launch
    checkers = {d[2].text for d in a.directives
                if len(d) > 3 and d[1].text == "define" and any(t.text in _ERRCHK for t in d[3:])}
    discarding = _discarding_macros(a.directives)
    for i, t in enumerate(toks):
        if not (t.kind == "id" and t.text not in _NOT_CHECKED_OK and i + 1 < n and toks[i + 1].text == "("
                and _HIP_API.fullmatch(t.text)):
            continue
        kind = "hipblasStatus_t" if t.text.startswith("hipblas") else "hipError_t"
        if i == 0 or toks[i - 1].text in _STATEMENT_START:
            problems.append((t.line, f"the {kind} that {t.text}() returns is ignored: wrap it in a check macro"))
        elif _discarded(toks, i):
            problems.append((t.line, f"the {kind} that {t.text}() returns is thrown away ((void), static_cast<void> "
                                     "or std::ignore): a discarded error is not checked; wrap it in a check macro"))
        elif i >= 2 and toks[i - 1].text == "(" and toks[i - 2].text in discarding:
            problems.append((t.line, f"the macro {toks[i - 2].text} never looks at the {kind} that {t.text}() returns "
                                     "(it only evaluates or discards it): compare it with hipSuccess and report it"))
    launch_lines = {line for line, _ in a.launches}
    seen = set()
    for i, t in enumerate(toks):
        if t.line not in launch_lines or t.line in seen or t.text not in ("<<<", "hipLaunchKernelGGL"):
            continue
        seen.add(t.line)
        j = i
        while j < n and toks[j].text != ";":
            j += 1
        if j >= n:
            continue
        last = toks[j].line + 3
        window = (x.text for x in toks[j + 1:j + 400] if x.line <= last)
        if not any(w in _ERRCHK or w in checkers for w in window):
            problems.append((t.line, "no hipGetLastError() right after this kernel launch: launch errors go unseen"))
    return sorted(problems)


#: Tokens that show a macro's body looks at the status it is given.
_USES_STATUS = {"!=", "==", "if", "?", "switch", "hipSuccess", "HIPBLAS_STATUS_SUCCESS", "hipGetErrorString",
                "hipGetErrorName", "assert", "throw", "return", "abort", "exit", "!"}


def _discarded(toks: list[Tok], i: int) -> bool:
    """The call at ``toks[i]`` is the operand of ``(void)``, ``static_cast<void>(...)`` or ``std::ignore =``."""
    j = i - 1
    while j >= 0 and toks[j].text == "(":      # (void)((hipMalloc(...)))
        j -= 1
    before = [x.text for x in toks[max(0, j - 4):j + 1]]
    return (before[-3:] == ["(", "void", ")"] or before[-4:] == ["static_cast", "<", "void", ">"]
            or before[-2:] == ["ignore", "="])


def _discarding_macros(directives: list[list[Tok]]) -> set[str]:
    """Function-like macros of the submission whose body never looks at its argument's value
    (``#define CHECK(x) (void)(x)``, ``#define CHECK(x) x``)."""
    out = set()
    for d in directives:
        if len(d) > 3 and d[1].text == "define" and d[3].text == "(" and d[3].col == d[2].col + len(d[2].text):
            close = next((k for k in range(4, len(d)) if d[k].text == ")"), None)
            if close is not None and not any(x.text in _USES_STATUS for x in d[close + 1:]):
                out.add(d[2].text)
    return out


def statements(a: Analysis) -> list[str]:
    """The compiled code as statements (split at ; { }), each at most STATEMENT_CHARS characters."""
    out, cur, size = [], [], 0
    for t in a.tokens:
        if size < STATEMENT_CHARS:
            cur.append(t.text)
            size += len(t.text) + 1
        if t.text in (";", "{", "}"):
            out.append(" ".join(cur)[:STATEMENT_CHARS])
            cur, size = [], 0
    if cur:
        out.append(" ".join(cur)[:STATEMENT_CHARS])
    return out


def _readable(pattern: str, regex: bool) -> str | None:
    """A pattern as a learner reads it (``__shared__\\s+float`` is ``__shared__ float``, ``a|b`` is ``a or b``);
    None for a regular expression that reads only as one (classes, groups, repeats)."""
    if not regex:
        return pattern
    text = re.sub(r"\\s[+*]?", " ", pattern)
    text = re.sub(r"\\b|[\^$]", "", text)
    if re.search(r"(?<!\\)[\[\](){}*+?]", text):
        return None
    return " or ".join(" ".join(re.sub(r"\\(.)", r"\1", part).split()) for part in text.split("|"))


def requires(a: Analysis, options: dict) -> list[tuple[int, str]]:
    """The patterns the solution needs (identifiers, text, or regular expressions with ``regex: true``); one
    problem naming every missing piece as code reads, with the spec's message."""
    missing = []
    stmts = None
    for pat in options.get("patterns", []):
        if options.get("regex"):
            stmts = statements(a) if stmts is None else stmts
            rx = re.compile(pat)
            found = any(rx.search(s) for s in stmts)
        elif re.fullmatch(r"\w+", pat):   # an identifier; one ending in "_" names a family (__builtin_amdgcn_mfma_)
            ids = a.report.identifiers
            found = pat in ids or (pat.endswith("_") and any(i.startswith(pat) for i in ids))
        else:
            stmts = statements(a) if stmts is None else stmts
            found = any(pat in s for s in stmts)
        if not found:
            missing.append(_readable(pat, bool(options.get("regex"))) or (None if options.get("message") else pat))
    if not missing:
        return []
    what = options.get("message") or "the solution needs it"
    named = [f"`{m}`" for m in missing if m]
    return [(0, f"{' and '.join(named)} not found in the compiled code: {what}" if named else what)]


RULES = {"no-cuda-left": no_cuda_left, "no-warp-size": no_warp_size, "errors-checked": errors_checked,
         "requires": requires}


def _directive_view(source: str) -> list[list[Tok]]:
    """The directive lines as the compiler sees them: line splices (backslash-newline) joined, even inside a
    word (``#inc\\<newline>lude``), and the digraph ``%:`` and trigraph ``??=`` read as ``#``. Line numbers kept.
    Linear in the file size."""
    return tokenize(_spliced(source))


def _spliced(source: str) -> str:
    """``source`` with line splices joined (the joined lines padded with newlines after, so line numbers are
    kept) and ``%:`` / ``??=`` at a line's start read as ``#``."""
    phys = source.split("\n")
    out, cur, pad = [], [], 0
    for line in phys:
        body = line[:-1] if line.endswith("\r") else line
        if body.endswith("\\"):
            cur.append(body[:-1])
            pad += 1
            continue
        cur.append(body)
        out.append("".join(cur) + "\n" * pad)
        cur, pad = [], 0
    if cur:
        out.append("".join(cur))
    return _DIGRAPH_HASH.sub("#", "\n".join(out))


_DIGRAPH_HASH = re.compile(r"^[ \t]*(?:%:|\?\?=)", re.MULTILINE)
_ASM_READS = (".incbin", ".include")
#: Assembler macros and loops: with them inline assembly can spell .incbin without writing it (.incb\\()in).
_ASM_BUILDS = (".macro", ".irp", ".rept", ".altmacro")
_ASM_BUILD_WORDS = {"include", "macro", "irp", "irpc", "rept", "altmacro"}
_SYSTEM_PREFIXES = ("/usr/", "/opt/", "/lib/", "/lib64/")


def compile_inputs(a: Analysis, source: str | None = None) -> list[tuple[int, str]]:
    """What would make the compiler read a file other than system headers and exercise_io.h.
    With ``source``, directives are read as the compiler reads them (splices, ``%:``, ``??=``)."""
    problems = []
    for f in a.files_read:                 # what clang's preprocessor read: system headers and exercise_io.h only
        if f.startswith("<") or f == SUBMISSION or f.startswith(_SYSTEM_PREFIXES) or (
                os.path.basename(f) == "exercise_io.h"
                and ("/grader-include/" in f or os.path.dirname(f) == include_dir())):
            continue
        problems.append((0, f"the preprocessor read {f}: only system headers (<...>) and \"exercise_io.h\" may be "
                            "included"))
    lines = _directive_view(source) if source is not None else None
    directives = [t for t in lines if t and t[0].text == "#"] if lines is not None else a.directives
    problems += getattr(a, "asm_reads", [])
    for d in directives:
        if len(d) < 2:
            continue
        name, rest = d[1].text, d[2:]
        if name in _INCLUDES:
            if len(rest) == 1 and rest[0].kind == "str" and rest[0].text.strip('"') == "exercise_io.h":
                continue
            if rest and rest[0].text == "<" and rest[-1].text == ">" and len(rest) > 2:
                header = "".join(t.text for t in rest[1:-1])
                if not header.startswith("/") and ".." not in header:
                    continue
            shown = " ".join(t.text for t in d)[:80]
            problems.append((d[0].line, f"`{shown}`: a submission may include only system headers (<...>) "
                                        "and \"exercise_io.h\""))
        elif name == "embed" or (name == "pragma" and any(t.text == "dependency" for t in rest)):
            problems.append((d[0].line, f"`#{name}` reads a file: a submission may not read files at compile time"))
    # assembler directives that read files: in a string, split over adjacent strings (".inc" "bin"), or
    # spelled as tokens for a stringizing macro (S(.incbin "x"))
    toks = [t for ln in lines for t in ln] if lines is not None else [*a.tokens, *(t for d in a.directives for t in d)]
    run_text, run_line, flagged = "", 0, set()
    for i, t in enumerate(toks):
        low = t.text.lower()
        if t.kind == "str":
            text = t.text    # escapes decoded first, as the compiler does (\x2e is "."), then lower case
            body = c_unescape(text[text.find('"') + 1:text.rfind('"')]).lower() if text.count('"') >= 2 else low
            run_text, run_line = run_text[-16:] + body, run_line or t.line     # the tail only: linear
            if any(x in run_text for x in _ASM_READS) and run_line not in flagged:
                flagged.add(run_line)
                problems.append((run_line, "`.incbin`/`.include` in inline assembly reads a file: remove it"))
            elif any(x in run_text for x in _ASM_BUILDS) and run_line not in flagged:
                flagged.add(run_line)
                problems.append((run_line, "assembler macros and loops (.macro, .irp, .rept, .altmacro) in inline "
                                           "assembly can spell a directive that reads a file: remove them"))
            continue
        run_text, run_line = "", 0
        if t.kind == "id" and (low == "incbin" or (low in _ASM_BUILD_WORDS and i and toks[i - 1].text == "."
                                                   and not (i > 1 and toks[i - 2].text == "#"))):
            if t.line not in flagged:
                flagged.add(t.line)
                problems.append((t.line, "`.incbin`/`.include` (an assembler directive that reads a file): remove it"))
    out, seen = [], set()
    for ln, text in sorted(set(problems)):      # one problem per line (the preprocessed view's comes first)
        if not ln or ln not in seen:
            seen.add(ln)
            out.append((ln, text))
    return out
