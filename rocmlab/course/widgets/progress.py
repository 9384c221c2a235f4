"""Lab 00's progress view: the learner's points per lab task and per exercise, with a Refresh button.
The same table as ``rocmlab progress`` (rocmlab.course.progress.table_rows)."""

from __future__ import annotations

import html

from rocmlab.course import progress
from rocmlab.html_table import html_table


def progress_html(summ: dict | None = None) -> str:
    summ = progress.summary() if summ is None else summ
    t = summ["total"]
    head = (f"<p style='text-align:left'><b>{t['earned']:g} points earned</b> on {t['tried']} of {t['count']} graded "
            f"tasks; {t['possible']:g} possible on an MI300X. Record: <code>{html.escape(str(progress.progress_file()))}"
            f"</code></p>")
    return head + html_table(progress.HEADER, progress.table_rows(summ), css_class="rocmlab-progress")


def progress_widget():
    """The table, and **Refresh** to read the record again after grading something in another notebook."""
    import ipywidgets as w

    out = w.HTML(progress_html())
    refresh = w.Button(description="Refresh", icon="refresh")

    def redraw(_=None):
        out.value = progress_html()

    refresh.on_click(redraw)
    return w.VBox([out, refresh])
