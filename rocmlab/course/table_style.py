"""pandas tables in a course notebook keep their values whole, like rocmlab.html_table's: a cell holding one
value (``vllm-mi300x``, ``llama-3.1-8b``, ``0.25``) stays on one line, prose cells wrap at their spaces.

:func:`register` teaches the running IPython kernel to show DataFrames and Stylers through
:func:`rocmlab.html_table.keep_values_whole` (pandas' own HTML, with ``white-space:nowrap`` on one-value cells).
Importing ``rocmlab.course`` calls it, so every lab gets it without a line of its own; pandas is not imported
for it (the formatter is looked up by the class's name when a table is first shown)."""

from __future__ import annotations

import sys

from rocmlab.html_table import keep_values_whole

#: (module, class) of the pandas objects shown as HTML tables: IPython looks a class up by its ``__module__``,
#: which pandas 3 sets to "pandas" for DataFrame (pandas 2: "pandas.core.frame").
PANDAS_TABLES = (("pandas", "DataFrame"), ("pandas.core.frame", "DataFrame"), ("pandas.io.formats.style", "Styler"))


def table_html(obj) -> str | None:
    """``obj``'s own HTML (``_repr_html_``) with its one-value cells kept on one line; None where it has none
    (pandas' ``display.notebook_repr_html`` off), so IPython falls back to the text form."""
    page = obj._repr_html_()
    return None if page is None else keep_values_whole(page)


def register(shell=None) -> bool:
    """Show pandas tables through :func:`table_html` in ``shell`` (default: the running IPython, if any).
    Returns whether there was a shell to register with (a plain Python process has none)."""
    if shell is None:
        ipython = sys.modules.get("IPython")       # a kernel has it; a plain process is not made to import it
        shell = ipython.get_ipython() if ipython is not None else None
    if shell is None:
        return False
    formatter = shell.display_formatter.formatters["text/html"]
    for module, name in PANDAS_TABLES:
        formatter.for_type_by_name(module, name, table_html)
    return True
