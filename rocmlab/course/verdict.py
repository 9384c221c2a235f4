"""The one look of a graded answer in a notebook (exercises, lab tasks, puzzles, Lab 11's questions).

An element has three parts, always in this order:

1. **one verdict line** of class ``rocmlab-verdict``: correct / not yet / not answered yet, the points, and
   one sentence in the learner's words that says what to do next (the browser test checks every graded
   cell shows one);
2. **the checks**, one row each (status, check, points, what it found and what to do);
3. **the details, folded** (``<details>``): where it ran, how the code was isolated, the seed, logs.

``ok`` is True (right), False (wrong) or None (nothing to judge yet, not graded on this machine, or graded
with not one point checked here: never "correct", in the neutral colour, not recorded).
"""

from __future__ import annotations

import html

COLOURS = {True: "#1a7f37", False: "#cf222e", None: "#6e7781"}
MARKS = {True: "correct", False: "not yet", None: "not answered yet"}
#: A check's status (rocmlab.status.VERDICTS) as the learner reads it, and its colour.
CHECK_MARKS = {"passed": ("✔ passed", "#1a7f37"), "failed": ("✘ failed", "#cf222e"),
               "not run": ("✘ not run", "#cf222e"), "skipped": ("– skipped", "#6e7781")}
_BOX = "rocmlab-result"
#: Tables inside an element read from the left with a little air between columns (JupyterLab right-aligns
#: table cells). A page drops the style where the notebook is not trusted; nothing else depends on it.
_STYLE = (f"<style>.{_BOX} table td, .{_BOX} table th {{text-align:left; vertical-align:top; "
          f"padding:1px 10px 1px 0}}</style>")


def verdict_html(ok: bool | None, text: str, points: str = "", mark: str | None = None) -> str:
    """``<p class='rocmlab-verdict'>`` with the mark, the points (if any) and the message, escaped.
    ``mark`` replaces the word of ``ok`` (e.g. "not graded here")."""
    pts = f" — {html.escape(points)}" if points else ""
    word = html.escape(mark or MARKS[ok])
    return (f"<p class='rocmlab-verdict' style='color:{COLOURS[ok]};margin:4px 0;white-space:normal;"
            f"text-align:left'><b>[{word}]{pts}</b> {html.escape(text)}</p>")


def points_text(earned: float, earnable: float, possible: float) -> str:
    """'7/10 points here (of 12 on an MI300X)': earned of what this machine can award, of what is possible."""
    tail = f" (of {possible:g} on an MI300X)" if possible != earnable else ""
    return f"{earned:g}/{earnable:g} points here{tail}"


def checks_html(rows) -> str:
    """The checks as a table: ``rows`` of (status, check, points, message). Status, check and points never
    wrap (a value is never broken across lines: JupyterLab's <code> style would break a name at its hyphens,
    so the name says nowrap itself); the message wraps at its spaces."""
    if not rows:
        return ""
    keep = "white-space:nowrap;text-align:left;vertical-align:top;padding:1px 8px 1px 0"
    prose = "white-space:normal;text-align:left;vertical-align:top;overflow-wrap:anywhere"
    body = []
    for status, cid, points, message in rows:
        word, colour = CHECK_MARKS.get(status, (status, "#000"))
        body.append(f"<tr><td style='{keep};color:{colour};font-weight:bold'>{html.escape(word)}</td>"
                    f"<td style='{keep}'><code style='white-space:nowrap'>{html.escape(str(cid))}</code></td>"
                    f"<td style='{keep}'>{html.escape(str(points))}</td>"
                    f"<td style='{prose}'>{html.escape(str(message))}</td></tr>")
    return (f"<table class='rocmlab-checks' style='border-collapse:collapse;margin:2px 0;table-layout:auto'>"
            f"<tbody>{''.join(body)}</tbody></table>")


def details_html(items, summary: str = "details") -> str:
    """Folded details: ``items`` of (label, text); a text with newlines is shown as a block (logs).
    Empty items are left out; nothing at all gives ''."""
    parts = []
    for label, text in items:
        if text is None or str(text) == "":
            continue
        text = str(text)
        if "\n" in text:
            parts.append(f"<div><b>{html.escape(label)}</b><pre style='white-space:pre-wrap;"
                         f"overflow-wrap:anywhere;margin:2px 0 6px 0'>{html.escape(text)}</pre></div>")
        else:
            parts.append(f"<div style='overflow-wrap:anywhere'><b>{html.escape(label)}:</b> "
                         f"{html.escape(text)}</div>")
    if not parts:
        return ""
    return (f"<details class='rocmlab-details' style='margin:2px 0'><summary style='cursor:pointer'>"
            f"{html.escape(summary)}</summary>{''.join(parts)}</details>")


def element(ok: bool | None, text: str, points: str = "", checks=(), details=(), extra: str = "",
            mark: str | None = None) -> str:
    """The whole element: the verdict line, the checks (rows for :func:`checks_html`), ``extra`` HTML
    (e.g. yours / expected, a puzzle's picture) and the folded ``details`` ((label, text) pairs)."""
    return (f"<div class='{_BOX}' style='text-align:left'>{_STYLE}{verdict_html(ok, text, points, mark)}"
            f"{checks_html(list(checks))}{extra}{details_html(list(details))}</div>")


# --------------------------------------------------------------------------- a grader Report

def _check_message(c) -> str:
    if c.status in ("failed", "not run") and c.hint:
        stop = "" if c.message.rstrip().endswith((".", "!", "?", ":")) else "."
        return f"{c.message.rstrip()}{stop} What to do: {c.hint}"
    return c.message


def _first_problem(report):
    return next((c for c in report.checks if c.status in ("failed", "not run")), None)


def unchecked_text(report, limit: int = 90) -> str:
    """Why some points were not checked here, in the skipped checks' own words (never a guess such as
    'another machine' when the reason is something else), cut at ``limit`` characters (the row says it all)."""
    skipped = [c for c in report.checks if c.status == "skipped"]
    if not skipped:
        return ""
    pts = sum(c.max_points for c in skipped)
    names = ", ".join(c.id for c in skipped)
    reason = skipped[0].message.strip().rstrip(".")
    reason = reason if len(reason) <= limit else reason[:limit].rsplit(" ", 1)[0] + " …"
    return f"{pts:g} point{'' if pts == 1 else 's'} not checked here ({names}: {reason})."


#: The mark of a grade where not one point could be checked on this machine (no server, no GPU): neutral.
NOT_CHECKED = "not checked here"


def report_text(report) -> str:
    """The verdict line's sentence for a grader report: what happened and what to do next."""
    if report.status != "graded":
        return f"not graded on this machine, and not your code's fault: {report.error}"
    if report.nothing_checked:
        return (f"nothing could be checked on this machine, so this is neither right nor wrong and is not recorded: "
                f"{report.unchecked_reason()}.")
    first = _first_problem(report)
    unchecked = unchecked_text(report)
    if first is None:
        done = "every check passed" if not unchecked else "every check this machine can run passed"
        return f"{done}. {unchecked}".strip()
    passed = sum(c.status == "passed" for c in report.checks)
    ran = sum(c.status != "skipped" for c in report.checks)
    what = "did not run" if first.status == "not run" else "failed"
    return (f"{passed} of {ran} checks passed. Start with {first.id}, the first that {what}: its row below "
            f"says what went wrong{' and what to do' if first.hint else ''}. {unchecked}").strip()


def report_details(report) -> list[tuple[str, str]]:
    """The folded part of a report: where and how it ran, the seed, the time, and any logs."""
    items = [("ran on", f"{report.backend}: {report.device}"),
             ("isolation", report.isolation),
             ("seed of this grade", "" if report.seed is None else str(report.seed)),
             ("took", f"{report.duration_s:.1f} s" if report.duration_s else "")]
    for c in report.checks:
        for key in ("log", "stdout_tail"):
            text = c.details.get(key) if isinstance(c.details, dict) else None
            if isinstance(text, str) and text.strip():
                items.append((f"{c.id}: {key.replace('_', ' ')}", text.rstrip() + "\n"))
    return items


def report_element(report, extra: str = "") -> str:
    """A :class:`rocmlab.grader.report.Report` as the one element: verdict line with points, the checks,
    ``extra`` (e.g. yours / expected), then the details folded."""
    if report.status != "graded":
        return element(None, report_text(report), mark="not graded here", details=report_details(report),
                       extra=extra)
    rows = [(c.status, c.id, f"{c.points:g}/{c.max_points:g}", _check_message(c)) for c in report.checks]
    if report.nothing_checked:
        return element(None, report_text(report), f"0 of {report.possible:g} points checked", rows,
                       report_details(report), extra, mark=NOT_CHECKED)
    return element(report.full_marks, report_text(report),
                   points_text(report.earned, report.available, report.possible), rows,
                   report_details(report), extra)
