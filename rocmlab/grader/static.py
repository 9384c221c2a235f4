"""Static rules over the learner's HIP source: each returns a list of problems ``(line, text)``.

They read the source with comments and strings blanked (:func:`rocmlab.hip.traps.strip_comments_and_strings`),
so a comment that mentions ``cudaMalloc`` is not a problem.
"""

from __future__ import annotations

import re

from rocmlab.hip.traps import find_traps, strip_comments_and_strings

_LAUNCH = re.compile(r"<<<|\bhipLaunchKernelGGL\s*\(")
_ERRCHK = re.compile(r"\bhip(?:GetLastError|PeekAtLastError)\s*\(")
_BARE_CALL = re.compile(r"(?:^|[;{}])\s*((?:hip|hipblas)[A-Z]\w*)\s*\(", re.MULTILINE)
_NOT_CHECKED_OK = {"hipLaunchKernelGGL"}


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _trap_problems(traps) -> list[tuple[int, str]]:
    """One line per trap; the first of each rule says why and the fix."""
    out, explained = [], set()
    for t in traps:
        if t.severity != "wrong":
            continue
        text = f"`{' '.join(t.snippet.split())[:60]}` ({t.rule})"
        if t.rule not in explained:
            explained.add(t.rule)
            text += f": {t.why} Fix: {t.fix}"
        out.append((t.line, text))
    return out


def no_cuda_left(source: str, options: dict) -> list[tuple[int, str]]:
    return _trap_problems(find_traps(source, kinds=("cuda-left", "library", "asm", "texture")))


def no_warp_size(source: str, options: dict) -> list[tuple[int, str]]:
    return _trap_problems(find_traps(source, kinds=("warp",)))


def errors_checked(source: str, options: dict) -> list[tuple[int, str]]:
    clean = strip_comments_and_strings(source)
    lines = clean.splitlines()
    problems = []
    # macros whose body checks the last error count as a check after a launch
    checker_macros = {m.group(1) for m in re.finditer(r"#\s*define\s+(\w+)[^\n]*(?:\\\n[^\n]*)*", clean)
                      if _ERRCHK.search(m.group(0))}
    for m in _BARE_CALL.finditer(clean):
        name = m.group(1)
        line = _line_of(clean, m.start(1))
        if name in _NOT_CHECKED_OK or lines[line - 1].lstrip().startswith("#"):
            continue
        kind = "hipblasStatus_t" if name.startswith("hipblas") else "hipError_t"
        problems.append((line, f"the {kind} that {name}() returns is ignored: wrap it in a check macro"))
    for m in _LAUNCH.finditer(clean):
        line = _line_of(clean, m.start())
        if lines[line - 1].lstrip().startswith("#"):
            continue
        end = clean.find(";", m.end())
        after = clean[end + 1:] if end >= 0 else ""
        window = "\n".join(after.split("\n")[:4])
        if not (_ERRCHK.search(window) or any(re.search(rf"\b{re.escape(mac)}\b", window) for mac in checker_macros)):
            problems.append((line, "no hipGetLastError() right after this kernel launch: launch errors go unseen"))
    return sorted(problems)


def requires(source: str, options: dict) -> list[tuple[int, str]]:
    clean = strip_comments_and_strings(source)
    out = []
    for pat in options.get("patterns", []):
        found = re.search(pat, clean) if options.get("regex") else pat in clean
        if not found:
            what = options.get("message") or "the solution needs it"
            out.append((0, f"{pat!r} not found: {what}"))
    return out


RULES = {"no-cuda-left": no_cuda_left, "no-warp-size": no_warp_size, "errors-checked": errors_checked,
         "requires": requires}
