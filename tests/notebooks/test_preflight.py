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


def test_preflight_leaves_the_labs_folder_and_the_users_progress_record_as_they_were(tmp_path, monkeypatch):
    """A lab that writes a starter into my-work/ (as Lab 01 does) and records a grade: the preflight runs it in a
    temporary copy with a progress record of its own, so neither the labs folder nor the user's record changes.
    Control: the lab did write both (its output names where), and those places are gone afterwards."""
    from pathlib import Path

    labs = tmp_path / "labs"
    labs.mkdir()
    user_record = tmp_path / "home" / "progress.json"
    monkeypatch.setenv("ROCMLAB_PROGRESS", str(user_record))
    writes = new_notebook([("code", "quick = False", ["parameters"]),
                           ("code", "import os\nos.makedirs('my-work/lab', exist_ok=True)\n"
                                    "open('my-work/lab/starter.hip', 'w').write('// starter')\n"
                                    "from rocmlab.course import progress\n"
                                    "assert progress.record('lab', 'task', earned=1, earnable=2, possible=2, "
                                    "backend='cpu')\n"
                                    "print('WROTE', os.path.abspath('my-work/lab/starter.hip'), "
                                    "progress.progress_file())")])
    nbformat.write(writes, labs / "01-writes.ipynb")
    before = sorted(str(p.relative_to(labs)) for p in labs.rglob("*"))
    out = tmp_path / "out"
    assert main(["preflight", "--labs", str(labs), "--out", str(out)]) == 0
    assert sorted(str(p.relative_to(labs)) for p in labs.rglob("*")) == before       # no my-work/ in the labs
    assert not user_record.exists()                                                   # no grade in the user's
    ran = nbformat.read(str(out / "01-writes.ipynb"), as_version=4)
    line = next(o["text"] for o in ran.cells[-1].outputs if "WROTE" in o.get("text", ""))
    starter, record = line.split()[1:3]
    assert "rocmlab-preflight-" in starter and "rocmlab-preflight-" in record        # control: it wrote, elsewhere
    assert Path(record) != user_record and not Path(starter).exists() and not Path(record).exists()


def test_a_lab_stopped_by_a_missing_optional_package_names_how_to_install_it(tmp_path):
    """A lab that needs Triton where it is not installed: its error names the package and the install command,
    and the next lab still runs. Control: a missing module of no known optional package gets no such advice."""
    labs = tmp_path / "labs"
    labs.mkdir()
    hide = ("import sys\nclass _No:\n    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] == 'triton':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, _No())\nimport triton.language as tl")
    nbformat.write(new_notebook([("code", "quick = False", ["parameters"]), ("code", hide)]), labs / "01-triton.ipynb")
    nbformat.write(new_notebook([("code", "quick = False", ["parameters"]), ("code", "import no_such_pkg_e50")]),
                   labs / "02-other.ipynb")
    nbformat.write(new_notebook([("code", "quick = False", ["parameters"]), ("code", "print(1)")]), labs / "03-ok.ipynb")
    out = tmp_path / "out"
    assert main(["preflight", "--labs", str(labs), "--out", str(out)]) == 1
    status = {lab["lab"]: lab for lab in json.loads((out / "summary.json").read_text())["labs"]}
    assert "No module named 'triton" in status["01-triton"]["error"]
    assert "pip install 'rocmlab[triton]'" in status["01-triton"]["error"]
    assert "no_such_pkg_e50" in status["02-other"]["error"] and "pip install" not in status["02-other"]["error"]
    assert status["03-ok"]["status"] == "passed"
