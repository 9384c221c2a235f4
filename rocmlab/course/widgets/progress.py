"""Lab 00's progress view: the learner's points per lab task and per exercise, with a Refresh button.
The same table as ``rocmlab progress`` (rocmlab.course.progress.table_rows)."""

from __future__ import annotations

import html

from rocmlab.course import progress
from rocmlab.html_table import html_table


def progress_html(summ: dict | None = None) -> str:
    summ = progress.summary() if summ is None else summ
    t = summ["total"]
    if summ.get("problem"):
        from rocmlab.course.verdict import verdict_html

        return verdict_html(None, summ["problem"], mark="record not read")
    head = (f"<p style='text-align:left'><b>self-checked here (a preview): {t['earned']:g} points</b> on {t['tried']} "
            f"of {t['count']} graded tasks &nbsp;|&nbsp; <b>instructor-graded: {t['instructor']:g} points</b> on "
            f"{t['instructor_graded']} hand-ins &nbsp;|&nbsp; {t['possible']:g} possible on an MI300X.<br>"
            f"Self-check record: <code>{html.escape(str(progress.progress_file()))}</code>; instructor grades: "
            f"{html.escape(summ.get('instructor_source', ''))}</p>")
    legend = f"<p style='text-align:left;font-size:smaller'>{html.escape(progress.LEGEND)}</p>"
    return head + html_table(progress.HEADER, progress.table_rows(summ), css_class="rocmlab-progress") + legend


def progress_widget():
    """The table, and **Refresh** to read the record again after grading something in another notebook."""
    import ipywidgets as w

    out = w.HTML(progress_html())
    refresh = w.Button(description="Refresh", icon="refresh")

    def redraw(_=None):
        out.value = progress_html()

    refresh.on_click(redraw)
    return w.VBox([out, refresh])
