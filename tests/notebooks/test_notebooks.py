"""Notebooks in labs/ are kept clean: no outputs, no execution counts, standard metadata,
exactly one parameters cell; every lab is listed in rocmlab.catalog and the README. The one exception: a cell nbval
checks (tagged ``nbval-check-output``) stores its recorded text, and only text (tools/nbtools.py)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbtools import CHECK_TAG, clean, is_checked, keep_checked, new_notebook, problems

from rocmlab.catalog import LABS

ROOT = Path(__file__).resolve().parents[2]

NOTEBOOKS = sorted((ROOT / "labs").glob("*.ipynb"))


def test_there_are_labs():
    assert NOTEBOOKS, "labs/ holds no notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert problems(nb) == [], (f"{path.name}: python tools/nbtools.py clean {path.relative_to(ROOT)} clears "
                                f"outputs; record-outputs records the checked cells")


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


def _checked_notebook(text: str):
    nb = new_notebook([("code", "quick = None", ["parameters"]), ("code", "print(x)", [CHECK_TAG]),
                       ("code", "import time\nt = time.time()")])
    nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    nb.cells[1].execution_count = 2
    return nb


def test_a_checked_cell_stores_text_and_nothing_else_is_stored(rng):
    """The stored-output policy, with its control: a checked cell's recorded text passes; an image, HTML, a widget
    view, an error, a long text or an unrecorded checked cell fails, and so do outputs of an unmarked cell, the
    notebook's widget state and the cells' execution timings (papermill's and nbclient's cell metadata)."""
    text = f"8 MB float16 through Q4: {rng.uniform(1, 4):.2f} MB on the wire\n"
    assert problems(_checked_notebook(text)) == []
    comment = new_notebook([("code", "quick = None", ["parameters"]), ("code", "# NBVAL_CHECK_OUTPUT\n1 + 1")])
    comment.cells[1].outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"}, execution_count=2)]
    comment.cells[1].execution_count = 2
    assert is_checked(comment.cells[1]) and problems(comment) == []

    def bad(change) -> list[str]:
        nb = _checked_notebook(text)
        change(nb)
        return problems(nb)

    image = nbformat.v4.new_output("display_data", {"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    html = nbformat.v4.new_output("execute_result", {"text/html": "<b>2</b>", "text/plain": "2"}, execution_count=2)
    view = nbformat.v4.new_output("display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "a"},
                                                   "text/plain": "VBox()"})
    error = nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=[])
    for out, what in ((image, "image/png"), (html, "text/html"), (view, "widget-view"), (error, "error")):
        found = bad(lambda nb, out=out: nb.cells[1].outputs.append(out))
        assert len(found) == 1 and "only printed text" in found[0] and what in found[0], found
    assert any("characters" in f for f in bad(lambda nb: setattr(nb.cells[1].outputs[0], "text", "x" * 5000)))
    assert any("never recorded" in f for f in bad(lambda nb: setattr(nb.cells[1], "execution_count", None)))
    stray = bad(lambda nb: nb.cells[2].outputs.append(nbformat.v4.new_output("stream", name="stdout", text="1\n")))
    assert stray == ["cell 2 has stored outputs"], stray
    widgets = bad(lambda nb: nb.metadata.update(widgets={"application/vnd.jupyter.widget-state+json": {}}))
    assert widgets and "widgets" in widgets[0], widgets
    timing = {"iopub.execute_input": "2026-01-01T00:00:00Z", "shell.execute_reply": "2026-01-01T00:00:01Z"}
    timed = bad(lambda nb: nb.cells[1].metadata.update(execution=timing, papermill={"duration": 1.2}))
    assert timed == ["cell 1 has non-standard metadata ['execution', 'papermill']"], timed


def test_clean_keeps_only_the_checked_text(tmp_path):
    nb = _checked_notebook("2.25 MB\n")
    nb.cells[2].outputs = [nbformat.v4.new_output("stream", name="stdout", text="1.7e9\n")]
    nb.cells[2].execution_count = 3
    nb.cells[1].metadata["execution"] = {"iopub.execute_input": "2026-01-01T00:00:00Z"}
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, str(path))
    assert problems(nbformat.read(str(path), as_version=4))
    clean(str(path))
    after = nbformat.read(str(path), as_version=4)
    assert problems(after) == []
    assert after.cells[1].outputs[0].text == "2.25 MB\n" and after.cells[2].outputs == []


def test_a_regenerated_notebook_keeps_the_checked_cells_of_the_same_source():
    old = _checked_notebook("hint 1\n")
    new = new_notebook([("code", "quick = None", ["parameters"]), ("code", "print(x)"), ("code", "print(y)")])
    keep_checked(old, new)
    assert is_checked(new.cells[1]) and new.cells[1].outputs[0].text == "hint 1\n" and problems(new) == []
    changed = new_notebook([("code", "quick = None", ["parameters"]), ("code", "print(x + 1)")])
    keep_checked(old, changed)
    assert not is_checked(changed.cells[1]) and changed.cells[1].outputs == []


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


def _ran(nb, outputs: dict):
    """``nb`` as a run wrote it: the same cell ids, ``outputs[i]`` in code cell i."""
    ran = nbformat.reads(nbformat.writes(nb), as_version=4)
    code = [c for c in ran.cells if c.cell_type == "code"]
    for i, outs in outputs.items():
        code[i].outputs = outs
        code[i].execution_count = i + 1
    return ran


def test_record_outputs_stores_the_checked_text_of_a_run_and_refuses_what_cannot_be_checked(tmp_path, rng):
    from nbtools import RecordError, record_outputs

    nb = new_notebook([("code", "quick = None", ["parameters"]), ("code", "print(x)", [CHECK_TAG]),
                       ("code", "display(df)")])
    path, run = tmp_path / "lab.ipynb", tmp_path / "run.ipynb"
    nbformat.write(nb, str(path))
    text = f"{rng.randrange(10**6)} B on the wire\n"
    html = nbformat.v4.new_output("display_data", {"text/html": "<table/>", "text/plain": "df"})
    stream = nbformat.v4.new_output("stream", name="stdout", text=text)
    nbformat.write(_ran(nb, {1: [stream], 2: [html]}), str(run))
    assert record_outputs(path, run) == [1]
    stored = nbformat.read(str(path), as_version=4)
    assert problems(stored) == [] and stored.cells[1].outputs[0].text == text and stored.cells[2].outputs == []
    nbformat.write(_ran(nb, {1: [html]}), str(run))                   # the control: HTML in the checked cell
    with pytest.raises(RecordError, match="text/html"):
        record_outputs(path, run)
    changed = nbformat.reads(nbformat.writes(nb), as_version=4)
    changed.cells[1].source = "print(x + 1)"
    nbformat.write(_ran(changed, {1: [stream]}), str(run))           # a run of another version of the cell
    with pytest.raises(RecordError, match="not of this version"):
        record_outputs(path, run)


def test_nbtools_bad_input_exits_2_with_the_fix(tmp_path, capsys):
    from nbtools import main

    nb = new_notebook([("code", "quick = None", ["parameters"]), ("code", "print(1)")])
    nbformat.write(nb, str(tmp_path / "lab.ipynb"))
    assert main([]) == 2 and "usage" in capsys.readouterr().err
    assert main(["mark", str(tmp_path / "lab.ipynb"), "no such line"]) == 2
    assert "0 code cells hold 'no such line'" in capsys.readouterr().err
    assert main(["record-outputs", "--from", str(tmp_path / "none"), str(tmp_path / "lab.ipynb")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["record-outputs", str(tmp_path / "missing.ipynb")]) == 2
    assert "missing.ipynb" in capsys.readouterr().err
