"""Small HTML tables (escaped, styled the same everywhere): plain strings, no notebook library, so toolkits
(a grader report, a hipify trap table) and the course use the same one."""

from __future__ import annotations

import html

STATUS_COLOURS = {"ok": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "skip": "#6e7781",
                  "passed": "#1a7f37", "failed": "#cf222e"}


def html_table(header: list[str], rows: list[list], css_class: str = "rocmlab-table",
               status_col: int | None = None, wrap: bool = False) -> str:
    """An escaped HTML table. ``status_col`` colours that column's values (ok/warn/fail/skip). ``wrap``: long
    words (file names, lists without spaces) may break anywhere, so a wide table of prose fits the page."""
    brk = "overflow-wrap:anywhere;" if wrap else ""
    def cell(i, v):
        # a whole number stored as a float (304.0 CUs) prints as one: 304
        text = html.escape(str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))
        if i == status_col:
            colour = STATUS_COLOURS.get(str(v), "#000")
            return f"<td style='color:{colour};font-weight:bold;text-align:left;vertical-align:top;{brk}'>{text}</td>"
        # left-aligned: JupyterLab right-aligns table cells, which makes prose hard to read
        return f"<td style='text-align:left;vertical-align:top;{brk}'>{text}</td>"

    head = "".join(f"<th style='text-align:left;{brk}'>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return (f"<table class='{css_class}' style='border-collapse:collapse'>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
