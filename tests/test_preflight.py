"""Preflight: bad input is refused clearly; a failing lab is recorded and the others still run."""

from __future__ import annotations

import json

import nbformat
from nbtools import new_notebook

from rocmlab.cli import main


def write_labs(folder):
    folder.mkdir()
    ok = new_notebook([("code", "quick = False", ["parameters"]),
                       ("code", "from rocmlab.course.headline import headline\nheadline('answer', 6 * 7, 'units')\n"
                                "assert quick is True")])
    bad = new_notebook([("code", "quick = False", ["parameters"]),
                        ("code", "x = 1"),
                        ("code", "raise ValueError('planted failure')")])
    after = new_notebook([("code", "quick = False", ["parameters"]), ("code", "print('still ran')")])
    nbformat.write(ok, folder / "01-ok.ipynb")
    nbformat.write(bad, folder / "02-bad.ipynb")
    nbformat.write(after, folder / "03-after.ipynb")


def test_missing_labs_folder(tmp_path, capsys):
    rc = main(["preflight", "--labs", str(tmp_path / "nonexistent"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and "does not exist" in err and "--labs" in err
    assert not (tmp_path / "out").exists()


def test_empty_labs_folder(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    rc = main(["preflight", "--labs", str(tmp_path / "empty"), "--out", str(tmp_path / "out")])
    assert rc == 2 and "no notebooks" in capsys.readouterr().err


def test_failing_lab_is_recorded_and_others_run(tmp_path, capsys):
    labs = tmp_path / "labs"
    write_labs(labs)
    out = tmp_path / "out"
    rc = main(["preflight", "--labs", str(labs), "--out", str(out)])
    captured = capsys.readouterr()
    assert rc == 1
    summary = json.loads((out / "summary.json").read_text())
    status = {lab["lab"]: lab for lab in summary["labs"]}
    assert [status[k]["status"] for k in ("01-ok", "02-bad", "03-after")] == ["passed", "failed", "passed"]
    bad = status["02-bad"]
    assert "planted failure" in bad["error"] and "raise ValueError" in bad["cell_source"]
    assert status["01-ok"]["headlines"][0]["value"] == 42.0          # quick=True reached the lab
    assert status["01-ok"]["headlines"][0]["backend"] in ("rocm", "cuda", "cpu")
    for name in ("01-ok", "02-bad", "03-after"):
        assert (out / f"{name}.ipynb").is_file()                    # executed notebooks kept, the failed one too
    md = (out / "summary.md").read_text()
    assert "answer: 42 units" in md and "2 passed, 1 failed" in md
    assert "planted failure" in (out / "summary.html").read_text()
    assert "FAILED 02-bad" in captured.err
