"""Legacy names for the one trap scanner, :mod:`rocmlab.port.scan` (kept so older imports work).

``find_traps(source)`` is ``scan(source)``'s findings in compiled code, as :class:`Trap`
rows; new code should call :func:`rocmlab.port.scan.scan` and read its
:class:`~rocmlab.port.scan.Finding` objects (severity ``error | warning | info``). The legacy
``severity`` attribute is an alias of that one scale: ``wrong`` = error, ``check`` = warning,
``slow`` = info.
"""

from __future__ import annotations

from dataclasses import dataclass

from rocmlab.port.scan import KINDS, Finding, scan, strip_comments_and_strings  # noqa: F401

LEGACY_SEVERITY = {"error": "wrong", "warning": "check", "info": "slow"}
SEVERITIES = tuple(LEGACY_SEVERITY.values())


@dataclass(frozen=True)
class Trap:
    line: int
    column: int
    rule: str
    kind: str
    severity: str      # legacy alias: wrong | check | slow
    snippet: str
    why: str
    fix: str
    level: str = ""    # the scanner's severity: error | warning | info

    def __str__(self) -> str:
        return f"line {self.line}:{self.column} [{self.level}] {self.rule}: {self.why} Fix: {self.fix}"


def to_trap(f: Finding) -> Trap:
    return Trap(f.line, f.column, f.rule, f.kind, LEGACY_SEVERITY[f.severity], f.snippet, f.message, f.fix,
                f.severity)


def find_traps(source: str, kinds: tuple[str, ...] | None = None, filename: str = "source.hip",
               **scan_options) -> list[Trap]:
    """The scanner's findings in compiled code of ``source`` (one file), sorted by line."""
    report = scan(source, filename=filename, **scan_options)
    return [to_trap(f) for f in report.findings if f.compiled and f.file == filename
            and (not kinds or f.kind in kinds)]


def trap_rows(traps: list[Trap]) -> list[list]:
    return [[t.line, t.level, t.rule, t.snippet[:80], t.why, t.fix] for t in traps]


def format_traps(traps: list[Trap]) -> str:
    if not traps:
        return "no traps found"
    return "\n".join(str(t) for t in traps)
