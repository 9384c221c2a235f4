"""What the grader returns: one :class:`CheckResult` per check, gathered in a :class:`Report`."""

from __future__ import annotations

import html
import json
import re
from dataclasses import asdict, dataclass, field

from rocmlab.html_table import html_table
from rocmlab.status import REPORT, VERDICTS, check_status

#: A check's verdict (rocmlab.status.VERDICTS): "not run" is the submission's doing and earns nothing;
#: "skipped" is the machine's (no GPU) and neither earns nor loses points.
STATUSES = VERDICTS
_MARK = {"passed": "PASS", "failed": "FAIL", "not run": "----", "skipped": "skip"}
#: A report's status: "graded", or "error" (a fault of the machine: not scored, not cached; rerun after the fix).
REPORT_STATUSES = REPORT


#: Characters a terminal or a browser acts on instead of showing: C0/C1 controls (ESC starts the terminal's
#: cursor moves and colours), DEL, zero-width marks and the bidirectional overrides that reorder text.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")
_CONTROL_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028\u2029\u202a-\u202e"
                                 "\u2066-\u2069\ufeff]")


def visible(text: str, multiline: bool = False) -> str:
    """``text`` (a program's output, a compiler message, a file name: what a learner controls) with every
    control character shown as its escape (``\\x1b``, ``\\n``...), so a terminal, the feedback file and the
    browser show exactly what was printed and nothing can move the cursor, recolour or forge a line.
    ``multiline`` keeps newlines and tabs (program output shown as a block)."""
    rx = _CONTROL_KEEP_LINES if multiline else _CONTROL
    return rx.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), str(text))


@dataclass
class CheckResult:
    id: str
    type: str
    status: str          # a verdict: passed | failed | not run | skipped
    points: float        # earned
    max_points: float
    message: str
    hint: str = ""
    details: dict = field(default_factory=dict)

    def __post_init__(self):
        check_status(self.status, STATUSES, f"check {self.id!r}: status")
        self.message, self.hint = visible(self.message), visible(self.hint)
        for key in ("stdout_tail", "log"):
            if isinstance(self.details.get(key), str):
                self.details[key] = visible(self.details[key], multiline=True)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def not_scored(self) -> CheckResult:
        """This check as it stays visible in a grade a fault of the machine stopped: no points, the reason said."""
        from dataclasses import replace

        return replace(self, points=0.0, message=f"{self.message} (not scored: a fault of the machine stopped this "
                                                 "grade)")


@dataclass
class Report:
    exercise: str
    title: str
    backend: str
    device: str
    seed: int | None
    checks: list[CheckResult]
    duration_s: float = 0.0
    status: str = "graded"
    error: str = ""          # for status "error": what is wrong with the machine, and the fix
    isolation: str = ""      # how the learner's code was isolated (rocmlab.sandbox.isolation())

    def __post_init__(self):
        check_status(self.status, REPORT_STATUSES, f"report of {self.exercise!r}: status")
        self.error = visible(self.error)

    @property
    def earned(self) -> float:
        return 0.0 if self.status == "error" else sum(c.points for c in self.checks)

    @property
    def available(self) -> float:
        """Points of the checks this machine could run."""
        if self.status == "error":
            return 0.0
        return sum(c.max_points for c in self.checks if c.status != "skipped")

    @property
    def possible(self) -> float:
        return sum(c.max_points for c in self.checks)

    @property
    def nothing_checked(self) -> bool:
        """Graded, but not one point could be checked on this machine (every check skipped: no server, no
        GPU): such a grade is neither right nor wrong, is shown as "not checked here" and is not recorded."""
        return self.status == "graded" and self.available == 0

    def unchecked_reason(self) -> str:
        """Why points were not checked here, in the first skipped check's own words ('' when none was)."""
        return next((c.message.strip().rstrip(".") for c in self.checks if c.status == "skipped"), "")

    @property
    def full_marks(self) -> bool:
        """Every check this backend can run passed, and at least one point was checked (an empty grade is
        never full marks)."""
        return (self.status == "graded" and not self.nothing_checked
                and all(c.status in ("passed", "skipped") for c in self.checks))

    def check(self, check_id: str) -> CheckResult:
        for c in self.checks:
            if c.id == check_id:
                return c
        raise KeyError(f"no check {check_id!r} in this report (have {', '.join(c.id for c in self.checks)})")

    def score_line(self) -> str:
        if self.status == "error":
            return f"{self.exercise}: NOT GRADED (a problem of this machine, not of your code): {self.error}"
        if self.nothing_checked:
            return (f"{self.exercise}: NOT CHECKED here: none of its {self.possible:g} points could be checked on "
                    f"this machine, so nothing is scored or recorded: {self.unchecked_reason()}  "
                    f"[{self.backend}: {self.device}]")
        skipped = self.possible - self.available
        more = f"; {skipped:g} more not checked here: each skipped check says why" if skipped else ""
        return (f"{self.exercise}: {self.earned:g}/{self.available:g} points on the checks this machine runs"
                f" ({self.possible:g} in all{more})  [{self.backend}: {self.device}]")

    def to_text(self) -> str:
        lines = [f"{self.title}", self.score_line()]
        if self.isolation:
            lines.append(f"  isolation: {self.isolation}")
        for c in self.checks:
            lines.append(f"  {_MARK[c.status]} {c.id:<22} {c.points:g}/{c.max_points:g}  {c.message}")
            if c.status == "failed" and c.hint:
                lines.append(f"       hint: {c.hint}")
        return "\n".join(lines)

    def to_html(self) -> str:
        rows = [[c.status, c.id, f"{c.points:g}/{c.max_points:g}", c.message,
                 c.hint if c.status == "failed" else ""] for c in self.checks]
        iso = f"<br><small>isolation: {html.escape(self.isolation)}</small>" if self.isolation else ""
        return (f"<p><b>{html.escape(self.title)}</b><br>{html.escape(self.score_line())}{iso}</p>"
                + html_table(["status", "check", "points", "message", "hint"], rows, css_class="rocmlab-grader",
                             status_col=0))

    def to_json(self) -> dict:
        """Everything, the seed included: for the instructor's results/, never for feedback."""
        d = asdict(self)
        d.update(earned=self.earned, available=self.available, possible=self.possible)
        return d

    @classmethod
    def from_json(cls, d: dict) -> Report:
        checks = [CheckResult(**c) for c in d["checks"]]
        return cls(d["exercise"], d["title"], d["backend"], d["device"], d.get("seed"), checks, d.get("duration_s", 0.0),
                   d.get("status", "graded"), d.get("error", ""), d.get("isolation", ""))

    def __str__(self) -> str:
        return self.to_text()

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=1)


@dataclass
class Availability:
    earned: float
    runnable: float          # points of the checks this machine ran
    possible: float
    skipped: list            # (check id, type, points, reason)

    @property
    def missing(self) -> float:
        return self.possible - self.runnable

    def text(self) -> str:
        head = f"{self.earned:g} of {self.possible:g} points"
        if not self.skipped:
            return head + " (no check was skipped on this machine)"
        ids = ", ".join(f"{cid} ({p:g})" for cid, _, p, _ in self.skipped)
        first = next((r for _, t, _, r in self.skipped if t == "run"), self.skipped[0][3])
        return (f"{head}; {self.missing:g} not checked on this machine: {ids}. Why: {_short_reason(first)}. "
                f"Here {self.earned:g}/{self.runnable:g} is the most this machine can check, not a full score.")

    def html(self) -> str:
        colour = "#b58900" if self.skipped else "#2e7d32"
        return f'<p style="color:{colour}"><b>{html.escape(self.text())}</b></p>'


def _short_reason(reason: str) -> str:
    r = reason.strip()
    for cut in ("; run checks need", " (this machine's backend"):
        if cut in r:
            r = r.split(cut)[0]
    return r.rstrip(".")


def availability(report) -> Availability:
    """Which points of ``report`` this machine could not award, with each skipped check's reason."""
    skipped = [(c.id, c.type, c.max_points, c.message) for c in report.checks if c.status == "skipped"]
    return Availability(report.earned, report.available, report.possible, skipped)
