"""The port's trap report: one scanner for the course, plus what only a whole-file view shows.

- Warp-32 / wave64 traps (32-bit masks, lane counts of 16/32, ``WARP_SIZE 32`` and host-side
  ``warp_size = 32`` constants, ballots kept in 32 bits, tiles of 32, inline PTX, ...) come from
  :func:`rocmlab.hip.traps.find_traps`, the same rules Lab 02 and the grader use. Their
  severities map to the report's levels: ``wrong`` -> error, ``check`` -> warning,
  ``slow`` -> info.
- Preprocessor guards need the structure of the file, not a line rule, so they live here:
  every conditional that tests ``__CUDA_ARCH__`` is an **error**: HIP never defines it, so
  ``#if __CUDA_ARCH__ >= N`` is always false and ``#ifdef __CUDA_ARCH__`` takes the host
  branch on the device too. The report says which lines HIP compiles out, and whether a whole
  kernel body goes. ``TORCH_HIP_VERSION`` (what hipify makes of ``CUDA_VERSION``, defined only
  inside PyTorch builds) and ``CUDART_VERSION`` tests are errors for the same reason.
  The code is never changed: a person decides.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace

from rocmlab.hip.traps import RULES, find_traps, strip_comments_and_strings

LEVELS = ("error", "warning", "info")
_LEVEL_OF = {"wrong": "error", "check": "warning", "slow": "info"}
_UNDEFINED_UNDER_HIP = ("__CUDA_ARCH__", "TORCH_HIP_VERSION", "CUDART_VERSION", "__CUDA_API_VERSION")


@dataclass(frozen=True)
class PortTrap:
    path: str          # ported file, relative to OUT
    line: int
    column: int
    rule: str
    kind: str
    level: str         # error | warning | info
    snippet: str
    why: str
    fix: str
    source: str = "rocmlab.hip.traps"   # which scanner found it
    src_path: str = ""                  # the original CUDA file, relative to SRC
    src_line: int = 0                   # its line there (0: the line is new in the port)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class _Frame:
    branches: list          # (line, directive, expr)
    end: int = 0


def _directives(clean: str):
    """(line number, directive, expression) for every preprocessor line, continuations joined."""
    lines = clean.split("\n")
    i = 0
    while i < len(lines):
        start = i
        text = lines[i]
        while text.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text.rstrip()[:-1] + " " + lines[i]
        m = re.match(r"\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)", text)
        if m:
            yield start + 1, m.group(1), m.group(2).strip()
        i += 1


def _conditionals(clean: str) -> list[_Frame]:
    frames, stack = [], []
    for line, d, expr in _directives(clean):
        if d in ("if", "ifdef", "ifndef"):
            stack.append(_Frame([(line, d, expr)]))
        elif d in ("elif", "else") and stack:
            stack[-1].branches.append((line, d, expr))
        elif d == "endif" and stack:
            f = stack.pop()
            f.end = line
            frames.append(f)
    return frames


def _hip_value(d: str, expr: str):
    """True/False for the branch condition under HIP when it depends only on CUDA-only macros, else None."""
    if d == "ifdef":
        expr = f"defined({expr})"
    elif d == "ifndef":
        expr = f"!defined({expr})"
    e = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
               lambda m: "0" if (m.group(1) or m.group(2)) in _UNDEFINED_UNDER_HIP else f"defined_{m.group(1) or m.group(2)}",
               expr)
    for name in _UNDEFINED_UNDER_HIP:
        e = re.sub(rf"\b{name}\b", "0", e)
    e = re.sub(r"\b(\d+)[uUlL]*\b", r"\1", e)
    if re.search(r"[A-Za-z_]", e):
        return None              # depends on other macros too
    e = e.replace("&&", " and ").replace("||", " or ")
    e = re.sub(r"!(?!=)", " not ", e)
    if not re.fullmatch(r"[\d\s()<>=!+\-*/%andortn]*", e):
        return None
    try:
        return bool(eval(e, {"__builtins__": {}}, {}))  # noqa: S307 - digits and operators only
    except Exception:
        return None


def _kernel_around(lines: list[str], first: int, last: int) -> str | None:
    """The kernel name when lines first..last (1-based, the #if..#endif) are a __global__ function's whole body."""
    before = first - 2
    while before >= 0 and not lines[before].strip():
        before -= 1
    after = last
    while after < len(lines) and not lines[after].strip():
        after += 1
    if before < 0 or after >= len(lines) or not lines[before].rstrip().endswith("{") or not lines[after].strip().startswith("}"):
        return None
    head = " ".join(lines[max(0, before - 3): before + 1])
    m = re.search(r"__global__[^;{}]*?\b(\w+)\s*\([^;{}]*\)\s*\{\s*$", head)
    return m.group(1) if m else None


def guard_traps(path: str, text: str) -> list[PortTrap]:
    """Every preprocessor test of a macro HIP never defines (``__CUDA_ARCH__`` first), as an error."""
    clean = strip_comments_and_strings(text)
    clean_lines = clean.split("\n")
    raw = text.split("\n")
    traps: list[PortTrap] = []
    in_directive: set[int] = set()
    for f in _conditionals(clean):
        values = [_hip_value(d, e) if d != "else" else True for _, d, e in f.branches]
        taken, unknown = None, False
        for k, v in enumerate(values):
            if v is None:
                unknown = True
                break
            if v:
                taken = k
                break
        bounds = [b[0] for b in f.branches] + [f.end]
        for k, (line, _d, expr) in enumerate(f.branches):
            in_directive.add(line)
            names = [n for n in _UNDEFINED_UNDER_HIP if re.search(rf"\b{n}\b", expr)]
            if not names:
                continue
            name = names[0]
            body = (line + 1, bounds[k + 1] - 1)
            n_lines = max(0, body[1] - body[0] + 1)
            if unknown and (taken is None or taken > k):
                effect = (f"under HIP this test depends on other macros as well, but {name} is always undefined "
                          "(0 in #if), so it never selects by GPU architecture.")
            elif taken is None and k == len(f.branches) - 1 and values[k] is False and len(f.branches) == 1:
                effect = (f"under HIP this branch is ALWAYS compiled out: lines {body[0]}-{body[1]} "
                          f"({n_lines} line{'s' if n_lines != 1 else ''}) silently disappear, and nothing replaces "
                          "them.")
                kernel = _kernel_around(raw, f.branches[0][0], f.end)
                if kernel:
                    effect += f" That is the whole body of kernel {kernel}(): it compiles, and does nothing."
            elif taken == k:
                effect = (f"under HIP this branch (lines {body[0]}-{body[1]}) is ALWAYS compiled, for the device "
                          "and the host alike, and the other branches never are.")
            else:
                effect = (f"under HIP this branch is ALWAYS compiled out: lines {body[0]}-{body[1]} "
                          f"({n_lines} line{'s' if n_lines != 1 else ''}) silently disappear"
                          + (f", and the branch at line {f.branches[taken][0]} is used instead, on the device too."
                             if taken is not None else ", and no other branch replaces them."))
            if name == "__CUDA_ARCH__":
                rule = "cuda-arch-guard"
                why = ("__CUDA_ARCH__ is defined only by nvcc's device passes; HIP never defines it "
                       f"(it has __HIP_DEVICE_COMPILE__ and __gfx942__-style macros). {effect}")
                fix = ("decide per guard: if the guarded feature exists on the AMD target (gfx942 has fp16 "
                       "arithmetic, fp64 atomicAdd, shuffles, ...) remove the guard; for a device/host split test "
                       "#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__); for a real architecture "
                       "choice test __gfx942__ / __gfx90a__.")
            else:
                rule = "cuda-version-guard"
                why = (f"{name} is not defined under HIP (hipify turns CUDA_VERSION into TORCH_HIP_VERSION, which "
                       f"only PyTorch's own build defines). {effect}")
                fix = ("test HIP_VERSION (from <hip/hip_version.h>, e.g. HIP_VERSION >= 60200000 for ROCm 6.2) or "
                       "the feature itself, or drop the test.")
            traps.append(PortTrap(path, line, 1, rule, "preprocessor", "error", raw[line - 1].strip(), why, fix,
                                  "rocmlab.port.traps"))
    # uses outside conditionals (e.g. constexpr int arch = __CUDA_ARCH__;)
    for i, cl in enumerate(clean_lines, start=1):
        if i in in_directive or re.match(r"\s*#", cl):
            continue
        m = re.search(r"\b__CUDA_ARCH__\b", cl)
        if m:
            traps.append(PortTrap(path, i, m.start() + 1, "cuda-arch-use", "preprocessor", "error", raw[i - 1].strip(),
                                  "__CUDA_ARCH__ is never defined under HIP: this line does not compile there (or "
                                  "uses a fallback value the code defines).",
                                  "use __HIP_DEVICE_COMPILE__ or an architecture macro (__gfx942__), or remove it.",
                                  "rocmlab.port.traps"))
    return traps


_CUDA_LEFT = next(r.pattern for r in RULES if r.name == "cuda-api-left")
_DEFINED = re.compile(r"^\s*#\s*define\s+(\w+)|\b(?:struct|class|enum|using|typedef\b[^;]*?)\s+(\w+)\s*[;{=]",
                      re.MULTILINE)


# a function the project defines whose name looks like CUDA's (inline void cudaCheck(...) {)
_DEFINED_FN = re.compile(r"\b((?:cuda|cu)[A-Z]\w*)\s*\([^;{}()]*(?:\([^;{}()]*\)[^;{}()]*)*\)\s*(?:const\s*)?\{")


def project_names(texts) -> set[str]:
    """Macros, types and cuda-looking functions the project defines itself (CUDA_CHECK, cudaCheck, ...):
    never 'CUDA API left over'."""
    names: set[str] = set()
    for t in texts:
        clean = strip_comments_and_strings(t)
        for m in _DEFINED.finditer(clean):
            names.add(m.group(1) or m.group(2))
        names |= {m.group(1) for m in _DEFINED_FN.finditer(clean)}
    return names


def _word_at(text_lines: list[str], line: int, col: int) -> str:
    try:
        m = re.match(r"#?\s*\w+", text_lines[line - 1][col - 1:])
    except IndexError:
        return ""
    return m.group(0).lstrip("#").strip() if m else ""


def scan(path: str, text: str, own_names: set[str] | None = None) -> list[PortTrap]:
    """All traps in one ported file, sorted by line.

    ``own_names``: names the project defines itself (see :func:`project_names`); a
    ``cuda-api-left`` hit on one of them (a project macro called CUDA_CHECK) is not a CUDA
    name left over, and is dropped.
    """
    lines = text.split("\n")
    out = []
    for t in find_traps(text):
        if t.rule == "cuda-api-left" and own_names and _word_at(lines, t.line, t.column) in own_names:
            # find_traps reports one hit per line and rule: look for a real CUDA name further on
            clean = strip_comments_and_strings(lines[t.line - 1])
            rest = [m for m in _CUDA_LEFT.finditer(clean, t.column)
                    if _word_at([clean], 1, m.start() + 1) not in own_names]
            if not rest:
                continue
            t = replace(t, column=rest[0].start() + 1)
        out.append(PortTrap(path, t.line, t.column, t.rule, t.kind, _LEVEL_OF.get(t.severity, "warning"), t.snippet,
                            t.why, t.fix))
    out += guard_traps(path, text)
    out.sort(key=lambda t: (t.line, t.column, t.rule))
    return out
