"""The one look of a graded answer in a notebook: a coloured line of class ``rocmlab-verdict``.

Every graded cell shows one (the browser test checks it): correct / not yet / not answered yet, or the
points a grade earned. ``ok`` is True (right), False (wrong) or None (nothing to judge yet).
"""

from __future__ import annotations

import html

COLOURS = {True: "#1a7f37", False: "#cf222e", None: "#6e7781"}
MARKS = {True: "correct", False: "not yet", None: "not answered yet"}


def verdict_html(ok: bool | None, text: str, points: str = "") -> str:
    """``<p class='rocmlab-verdict'>`` with the mark, the points (if any) and the message, escaped."""
    pts = f" — {html.escape(points)}" if points else ""
    return (f"<p class='rocmlab-verdict' style='color:{COLOURS[ok]};margin:4px 0;white-space:normal;"
            f"text-align:left'><b>[{MARKS[ok]}]{pts}</b> {html.escape(text)}</p>")


def points_text(earned: float, earnable: float, possible: float) -> str:
    """'7/10 points here (of 12 on an MI300X)': earned of what this machine can award, of what is possible."""
    tail = f" (of {possible:g} on an MI300X)" if possible != earnable else ""
    return f"{earned:g}/{earnable:g} points here{tail}"
