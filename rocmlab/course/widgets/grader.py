"""The grader in a notebook: the report as a table, "yours / expected" for mismatches, graded hints on
demand, and a button to grade again. The same text is what ``rocmlab grade`` writes as feedback."""

from __future__ import annotations

import html
from pathlib import Path

from rocmlab import grader
from rocmlab.grader.report import availability
from rocmlab.html_table import html_table


def mismatch_html(report) -> str:
    """For a failed compare: the first mismatching values side by side (yours / expected)."""
    parts = []
    for c in report.checks:
        samples = c.details.get("samples") if c.status == "failed" else None
        if samples:
            rows = [[i, f"{got:.7g}", f"{want:.7g}", f"{got - want:+.3g}"] for i, got, want in samples]
            parts.append(f"<p>{html.escape(c.id)}: output <code>{html.escape(c.details.get('output', ''))}</code>, "
                         f"{c.details.get('mismatches')} values differ</p>"
                         + html_table(["index", "yours", "expected", "difference"], rows, css_class="rocmlab-mismatch"))
    return "".join(parts)


def report_html(report) -> str:
    """The report, led by which points this machine cannot award and why."""
    return availability(report).html() + report.to_html() + mismatch_html(report)


def feedback_widget(exercise_id: str, source, *, seed: int | None = None, time_limit_s: float | None = None):
    """Grade ``source`` (HIP text, or a path to a .hip file) and show the result.

    "Grade again" re-reads the file (edit it, then press it); "Show a hint" reveals the exercise's graded
    hints one level at a time (level 1 nudges, level 3 nearly gives the answer).
    """
    import ipywidgets as w

    ex = grader.load(exercise_id)
    out, hints_box = w.HTML(), w.HTML()
    again = w.Button(description="Grade again", icon="refresh")
    hint_btn = w.Button(description="Show a hint", icon="lightbulb-o")
    state = {"level": 0, "report": None}

    def text():
        if isinstance(source, Path) or (isinstance(source, str) and source.endswith((".hip", ".cpp"))
                                        and "\n" not in source):
            return Path(source).read_text()
        return source

    def grade(_=None):
        out.value = "<i>grading...</i>"
        state["report"] = grader.check(exercise_id, text(), seed=seed, time_limit_s=time_limit_s)
        out.value = report_html(state["report"])

    def hint(_=None):
        state["level"] = min(state["level"] + 1, len(ex.hints))
        shown = [h for h in sorted(ex.hints, key=lambda h: h.level) if h.level <= state["level"]]
        hints_box.value = "".join(f"<p><b>hint {h.level}</b> ({html.escape(h.check)}): {html.escape(h.text)}</p>"
                                  for h in shown)

    again.on_click(grade)
    hint_btn.on_click(hint)
    grade()
    box = w.VBox([out, w.HBox([again, hint_btn]), hints_box])
    box.report = lambda: state["report"]
    return box


def summary_html(reports: dict) -> str:
    """Several reports (name -> Report) as one table: what each scored and its first failing check."""
    rows = []
    for name, r in reports.items():
        failed = [c for c in r.checks if c.status == "failed"]
        first = f"{failed[0].id}: {failed[0].message}" if failed else "-"
        rows.append([name, r.exercise, f"{r.earned:g}/{r.available:g}", f"{r.possible:g}", first[:220]])
    return html_table(["submission", "exercise", "points (runnable here)", "possible", "first failing check"], rows,
                      css_class="rocmlab-grader-summary")
