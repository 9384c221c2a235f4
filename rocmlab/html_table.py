"""Small HTML tables (escaped, styled the same everywhere): plain strings, no notebook library, so toolkits
(a grader report, a hipify trap table) and the course use the same one.

A table never breaks inside a value: a cell holding one value (no space in it: a number, "3/4", a name such as
``01-hip-programming-model``) stays on one line (``white-space:nowrap``); prose wraps at its spaces. A ``wrap``
table may break a long value only after ``_``, ``/``, ``,`` and ``.`` (:func:`breakable`), never at a hyphen.
:func:`keep_values_whole` does the same to a table someone else wrote (pandas: rocmlab.course.table_style)."""

from __future__ import annotations

import html
import re

STATUS_COLOURS = {"ok": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "skip": "#6e7781",
                  "passed": "#1a7f37", "failed": "#cf222e"}

#: The style of a cell that holds one value: laid out on one line.
NOWRAP = "white-space:nowrap"
#: A gap after every column (a widget's HTML has no table padding: one-line values would touch).
GAP = "padding-right:0.75em;"


def html_table(header: list[str], rows: list[list], css_class: str = "rocmlab-table",
               status_col: int | None = None, wrap: bool = False) -> str:
    """An escaped HTML table. ``status_col`` colours that column's values (ok/warn/fail/skip). A cell of one
    value stays on one line. ``wrap``: long values (file names, instruction names, lists) may break after
    ``_``, ``/``, ``,`` and ``.``, so a wide table fits the page, but never inside a number or at a hyphen."""
    def text_of(v) -> str:
        # a whole number stored as a float (304.0 CUs) prints as one: 304
        return html.escape(str(int(v)) if isinstance(v, float) and v.is_integer() else str(v))

    def style_and_text(v) -> tuple[str, str]:
        text = text_of(v)
        if not text or re.search(r"\s", text):
            return "", breakable(text) if wrap else text   # prose: wraps at its spaces
        if wrap and text != breakable(text):
            return "", breakable(text)                 # breaks only at its separators (pieces are nowrap)
        return NOWRAP + ";", text

    def cell(i, v):
        style, text = style_and_text(v)
        if i == status_col:
            colour = STATUS_COLOURS.get(str(v), "#000")
            return f"<td style='{style}{GAP}color:{colour};font-weight:bold;text-align:left;vertical-align:top'>{text}</td>"
        # left-aligned: JupyterLab right-aligns table cells, which makes prose hard to read
        return f"<td style='{style}{GAP}text-align:left;vertical-align:top'>{text}</td>"

    def head_cell(h):
        style, text = style_and_text(h)
        return f"<th style='{style}{GAP}text-align:left'>{text}</th>"

    head = "".join(head_cell(h) for h in header)
    body = "".join("<tr>" + "".join(cell(i, v) for i, v in enumerate(r)) + "</tr>" for r in rows)
    return (f"<table class='{css_class}' style='border-collapse:collapse'>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


_BREAK_AFTER = re.compile(r"(?<=\w)[_/]|(?<=[A-Za-z])[,.]")


def breakable(escaped: str) -> str:
    """``escaped`` with a line-break opportunity (``<wbr>``) after each ``_``, ``/``, ``,`` and ``.`` that
    follows a letter (``_`` and ``/`` after any word character), and nowhere else inside a word: the pieces
    between them are kept whole (``white-space:nowrap``), so ``01-hip-programming-model.ipynb`` never breaks at
    a hyphen. ``v_mfma_f32_32x32x8_f16`` may wrap at its underscores; ``65536`` and ``3.25`` have no such place
    and come back as they are. Spaces stay the places where prose wraps."""
    def word(m: re.Match) -> str:
        w, pieces, start = m.group(0), [], 0
        for b in _BREAK_AFTER.finditer(w):
            pieces.append(w[start:b.end()])
            start = b.end()
        pieces.append(w[start:])
        pieces = [p for p in pieces if p]
        if len(pieces) == 1:
            return w
        return "<wbr>".join(f"<span style='{NOWRAP}'>{p}</span>" for p in pieces)

    return re.sub(r"\S+", word, escaped)


# <td ...>value</td> or <th ...>value</th> whose content is one value: no tag, no space
_ONE_VALUE_CELL = re.compile(r"<(td|th)(\s[^>]*)?>(\s*)([^<\s]+)(\s*)</\1>")


def keep_values_whole(table_html: str) -> str:
    """``table_html`` (a table another library wrote, e.g. pandas) with every cell of one value laid out on one
    line (``white-space:nowrap`` added to its style), or, for a long name with ``_ / , .`` in it, breakable only
    there (:func:`breakable`), as a ``wrap`` table's. Cells of prose, or holding markup, are left as they are."""
    def nowrap(m: re.Match) -> str:
        tag, attrs, value = m.group(1), m.group(2) or "", m.group(4)
        if breakable(value) != value:       # a long name: may break after _ / , . only (its pieces are kept whole)
            return f"<{tag}{attrs}>{m.group(3)}{breakable(value)}{m.group(5)}</{tag}>"
        style = re.search(r"""\sstyle=(["'])""", attrs)
        if style:
            at = style.end()
            attrs = attrs[:at] + NOWRAP + ";" + attrs[at:]
        else:
            attrs += f' style="{NOWRAP}"'
        return f"<{tag}{attrs}>{m.group(3)}{m.group(4)}{m.group(5)}</{tag}>"

    return _ONE_VALUE_CELL.sub(nowrap, table_html)
