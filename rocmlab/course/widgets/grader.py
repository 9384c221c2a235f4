"""The grader in a notebook: the report as a table, "yours / expected" for mismatches, graded hints on
demand, and a button to grade again. The same text is what ``rocmlab grade`` writes as feedback."""

from __future__ import annotations

import html
import os
import urllib.parse
from pathlib import Path

from rocmlab import grader
from rocmlab.course import progress
from rocmlab.course.verdict import NOT_CHECKED, points_text, report_element, report_text, verdict_html
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


def report_verdict(report) -> str:
    """The report's verdict line alone: full marks on what this machine checks, not yet, or not graded here."""
    if report.status != "graded":
        return verdict_html(None, report_text(report), mark="not graded here")
    if report.nothing_checked:
        return verdict_html(None, report_text(report), f"0 of {report.possible:g} points checked", mark=NOT_CHECKED)
    return verdict_html(report.full_marks, report_text(report),
                        points_text(report.earned, report.available, report.possible))


def report_html(report) -> str:
    """The report as the course's one verdict element (rocmlab.course.verdict): the verdict line with the
    points, the checks, yours / expected for a mismatch, then the details folded."""
    return report_element(report, mismatch_html(report))


def open_link_html(path) -> str:
    """A link that JupyterLab opens in its text editor beside the notebook. The href is relative to the
    kernel's folder (the notebook's folder), which is how JupyterLab resolves a link in an output."""
    path = Path(path)
    try:
        rel = Path(os.path.relpath(path.resolve(), Path.cwd().resolve())).as_posix()
    except ValueError:                   # another drive (Windows): a link cannot reach it
        rel = path.as_posix()
    return (f"<p style='text-align:left'><a class='rocmlab-open' href='{html.escape(urllib.parse.quote(rel))}' "
            f"style='display:inline-block;padding:3px 10px;border:1px solid #0969da;border-radius:4px;"
            f"color:#0969da;text-decoration:none'>✎ open {html.escape(path.name)} in the editor</a> "
            f"<code>{html.escape(rel)}</code>: edit it there, save (Ctrl+S), then press <b>Grade again</b>.</p>")


def edit_and_grade(path, grade, *, buttons=()):
    """The learner's loop over one file: a link that opens it in JupyterLab's editor, the verdict of
    ``grade(text) -> (result, html)``, and **Grade again**, which reads the file as it is NOW (every press).
    ``box.result()`` is the latest result. Lab 01, Lab 02 and every exercise notebook use this one loop."""
    import ipywidgets as w
    from IPython.display import HTML

    from rocmlab.course.my_work import read_my_work

    path = Path(path)
    link = w.Output()
    link.append_display_data(HTML(open_link_html(path)))
    out = w.HTML()
    again = w.Button(description="Grade again", icon="refresh")
    state = {"result": None}

    def run(_=None):
        out.value = "<i>grading...</i>"
        try:
            text = read_my_work(path)       # fstat first: a FIFO or a 256 MB file is refused, never read
        except OSError as exc:
            state["result"] = None
            out.value = verdict_html(None, f"cannot read {path}: {exc.strerror or exc}. Run the cell above that "
                                           "writes it, or check the name.")
            return
        state["result"], out.value = grade(text)

    again.on_click(run)
    run()
    box = w.VBox([link, out, w.HBox([again, *buttons])])
    box.result = lambda: state["result"]
    box.grade_again = run
    return box


def _as_path(source) -> Path:
    if isinstance(source, Path):
        return source
    if isinstance(source, str) and "\n" not in source and len(source) < 4096 and Path(source).suffix:
        return Path(source)
    raise ValueError("feedback_widget needs the PATH of your .hip file (e.g. 'my-work/block-reduction/block_sum.hip'), "
                     "not its text: Grade again re-reads the file after each edit, and text would be graded stale")


def feedback_widget(exercise_id: str, path, *, seed: int | None = None, time_limit_s: float | None = None,
                    lab: str = progress.EXERCISES, task: str | None = None):
    """Grade the learner's file at ``path`` and show the result; the grade is kept in the progress record
    (``lab``/``task``: the exercise by default; a lab's graded task names its lab).

    "Grade again" re-reads the file (edit it, save, press it) and shows a self-check; "Hand in" sends the file
    to the workshop's exchange for the instructor's sandboxed re-grade (the grade of record); "Show a hint"
    reveals the exercise's graded hints one level at a time (level 1 nudges, level 3 nearly gives the answer).
    """
    import ipywidgets as w

    path = _as_path(path)
    ex = grader.load(exercise_id)
    hints_box = w.HTML()
    hint_btn = w.Button(description="Show a hint", icon="lightbulb-o")
    level = {"n": 0}

    def grade(text):
        report = grader.check(exercise_id, text, seed=seed, time_limit_s=time_limit_s)
        progress.record_report(lab, task or exercise_id, report)
        return report, report_html(report)

    def hint(_=None):
        level["n"] = min(level["n"] + 1, len(ex.hints))
        shown = [h for h in sorted(ex.hints, key=lambda h: h.level) if h.level <= level["n"]]
        hints_box.value = "".join(f"<p><b>hint {h.level}</b> ({html.escape(h.check)}): {html.escape(h.text)}</p>"
                                  for h in shown) or "<p>no hints</p>"

    hint_btn.on_click(hint)
    from rocmlab.course.handin import handin_button
    from rocmlab.grader.items import item_for

    item = item_for(lab, task or exercise_id) or exercise_id
    handin = handin_button(item, path)        # beside Grade again: the file as it is when pressed
    box = edit_and_grade(path, grade, buttons=(hint_btn, handin))
    box.children = (*box.children, handin.message, hints_box)
    box.report = box.result
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
