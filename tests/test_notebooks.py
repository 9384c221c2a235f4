"""Notebooks in labs/ are kept clean: no outputs, no execution counts, standard metadata,
exactly one parameters cell; every lab is listed in rocmlab.labs and the README."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbtools import new_notebook, problems

from rocmlab.labs import LABS

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOKS = sorted((ROOT / "labs").glob("*.ipynb"))


def test_there_are_labs():
    assert NOTEBOOKS, "labs/ holds no notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert problems(nb) == [], f"{path.name}: run python tools/nbtools.py clean {path.relative_to(ROOT)}"


def test_the_check_fails_on_dirty_notebooks():
    nb = new_notebook([("code", "quick = None", ["parameters"]), ("code", "1 + 1")])
    assert problems(nb) == []
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=1)]
    nb.cells[1].execution_count = 1
    nb.metadata["widgets"] = {}
    found = problems(nb)
    assert any("outputs" in f for f in found) and any("execution count" in f for f in found)
    assert any("metadata" in f for f in found)
    nb2 = new_notebook([("code", "quick = None")])
    assert any("parameters" in f for f in problems(nb2))


def test_every_lab_is_catalogued_and_in_the_readme():
    files = {p.name for p in NOTEBOOKS}
    assert files == {lab.file for lab in LABS}
    readme = (ROOT / "README.md").read_text()
    for lab in LABS:
        assert lab.file in readme, f"README's lab table misses {lab.file}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_papermill_sees_the_quick_parameter(path):
    """preflight passes quick=True through papermill, which must parse the parameters cell
    (a ':' in a comment there makes papermill give up on the line)."""
    import papermill

    names = set(papermill.inspect_notebook(str(path)))
    assert "quick" in names, f"papermill cannot parse {path.name}'s parameters cell"
