"""Labs 09 and 10 without Triton (a machine where it is not installed): the lab says what it needs and the fix, once,
and every cell runs to the end instead of stopping at the set-up cell with ModuleNotFoundError. The control: the same
set-up cell with Triton hidden and no stand-in (a plain ``import triton``) fails, as the labs did."""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from rocmlab.paths import labs_dir

HIDE = """import sys

class _NoTriton:                                  # as if Triton were not installed
    def find_spec(self, name, path=None, target=None):
        if name == "triton" or name.startswith("triton."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, _NoTriton())
"""


def _run(name: str, tmp_path):
    nb = nbformat.read(labs_dir() / name, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(HIDE))
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def _text(nb) -> str:
    out = []
    for c in nb.cells:
        for o in c.get("outputs", []):
            out.append(o.get("text", "") or "".join(str(v) for v in o.get("data", {}).values()))
    return "\n".join(out)


@pytest.mark.parametrize("name,lab", [("09-attention-on-mi300x.ipynb", "Lab 09"), ("10-fp8-gemm.ipynb", "Lab 10")])
def test_lab_without_triton_says_what_it_needs_and_runs_to_the_end(name, lab, tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_QUICK", "1")
    monkeypatch.setenv("ROCMLAB_PROGRESS", str(tmp_path / "progress.json"))
    text = _text(_run(name, tmp_path))
    assert f"[{lab}] triton is not installed here" in text and "Fix: install Triton" in text
    assert "NOT INSTALLED" in text and "ModuleNotFoundError" not in text


def test_control_a_plain_import_stops_the_lab(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(HIDE + "import triton\n")])
    with pytest.raises(CellExecutionError, match="ModuleNotFoundError"):
        NotebookClient(nb, timeout=60, kernel_name="python3").execute()
