"""Code that fits the page (issue 44): no code line of any lab or exercise notebook is longer than 100 characters,
so a code cell fits JupyterLab's editor at 1280x800 with the file browser open. Notebooks are found on disk
(labs added later are covered); the control shows the check catches a 101-character line and passes 100."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 100
NOTEBOOKS = sorted((ROOT / "labs").glob("*.ipynb")) + sorted((ROOT / "labs" / "exercises").glob("*.ipynb"))


def long_lines(nb: nbformat.NotebookNode, limit: int = LIMIT) -> list[tuple[int, int, int, str]]:
    """(cell index, line number, length, start of the line) of every code line longer than ``limit``."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for n, line in enumerate(cell.source.splitlines(), 1):
            if len(line) > limit:
                out.append((i, n, len(line), line[:60]))
    return out


def test_the_check_catches_a_long_line_and_passes_one_at_the_limit():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("x = 1\n" + "y = '" + "a" * (LIMIT - 6) + "'"),       # 100: fits
                nbformat.v4.new_markdown_cell("m" * 300),                                    # prose wraps
                nbformat.v4.new_code_cell("z = '" + "b" * (LIMIT - 5) + "'")]                # 101: too long
    assert [(c, n, k) for c, n, k, _ in long_lines(nb)] == [(2, 1, LIMIT + 1)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "labs")))
def test_no_code_line_is_longer_than_100_characters(path):
    found = long_lines(nbformat.read(str(path), as_version=4))
    assert not found, f"{path.name}: {len(found)} code lines over {LIMIT} characters (use a helper or break the " \
                      "call):\n" + "\n".join(f"  cell {c} line {n}: {k} chars: {t!r}" for c, n, k, t in found[:15])
