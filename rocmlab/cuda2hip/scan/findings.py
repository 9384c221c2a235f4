"""What the scanner answers: a :class:`Finding` per trap, gathered in a :class:`ScanReport`.

ONE severity scale, :data:`SEVERITIES` (``error``: wrong results or does not compile on the target;
``warning``: read the line; ``info``), and one list of :data:`KINDS`, what a rule detects. A finding
in code that is never compiled for the target is never above ``info``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from rocmlab.status import SEVERITIES as SEVERITY_WORDS

SEVERITIES = SEVERITY_WORDS
KINDS = ("warp", "cuda-left", "library", "asm", "texture", "device-prop", "lds", "preprocessor", "scan")


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    column: int
    rule: str
    kind: str
    severity: str
    message: str
    fix: str
    snippet: str = ""
    compiled: bool = True

    def to_json(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        where = "" if self.compiled else " (never compiled for the target)"
        return f"{self.file}:{self.line}:{self.column} [{self.severity}] {self.rule}{where}: {self.message} Fix: {self.fix}"


@dataclass
class ScanReport:
    target: str
    findings: list[Finding] = field(default_factory=list)
    config: dict = field(default_factory=dict)
    launches: list[tuple[str, int, str]] = field(default_factory=list)
    calls: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    identifiers: set[str] = field(default_factory=set)
    libraries: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    outside_root: list[str] = field(default_factory=list)
    not_followed: list[str] = field(default_factory=list)
    has_main: bool = False
    inactive_lines: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def cuda_left(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "cuda-left" and f.compiled]

    def compiled_findings(self, severity: str | None = None, kinds=None) -> list[Finding]:
        return [f for f in self.findings if f.compiled and (severity is None or f.severity == severity)
                and (kinds is None or f.kind in kinds)]

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in SEVERITIES}
        for f in self.findings:
            out[f.severity] += 1
        return out

    def verdict(self) -> dict:
        """What every consumer must agree on: the compiled error/warning findings, as (file, line, rule)."""
        return {s: sorted({(f.file, f.line, f.rule) for f in self.findings if f.compiled and f.severity == s})
                for s in ("error", "warning")}

    def to_json(self) -> dict:
        return {"target": self.target, "config": self.config, "findings": [f.to_json() for f in self.findings],
                "launches": self.launches, "calls": {k: v for k, v in sorted(self.calls.items())},
                "libraries": self.libraries, "files_read": self.files_read, "outside_root": self.outside_root,
                "not_followed": self.not_followed, "has_main": self.has_main}

    def text(self) -> str:
        if not self.findings:
            return "no traps found"
        return "\n".join(str(f) for f in self.findings)
