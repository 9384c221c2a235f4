"""A course kernel's first figure does not pay for jsonschema's optional IRI checker (rocmlab.course)."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("rfc3987_syntax")

PROBE = ("import sys, time\n{first}t = time.perf_counter()\nimport plotly.io._renderers\n"
         "print(sys.modules.get('rfc3987_syntax') is not None, round(time.perf_counter() - t, 3))\n")


def _probe(first: str) -> tuple[bool, str]:
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    return out[0] == "True", out[1]


def test_a_course_kernel_leaves_the_iri_grammar_out():
    loaded, took = _probe("import rocmlab.course\n")
    assert not loaded, f"rfc3987_syntax was imported ({took} s)"


def test_control_without_the_course_package_it_is_imported():
    loaded, took = _probe("")
    assert loaded, "jsonschema no longer imports rfc3987_syntax: rocmlab.course.SKIPPED_IMPORTS can go"


def test_preflight_reads_notebooks_without_the_iri_grammar(tmp_path):
    """``rocmlab preflight`` imports papermill (nbformat, jsonschema): it leaves the grammar out too, and still
    runs the lab and names the backend it ran on."""
    import json

    import nbformat

    labs = tmp_path / "labs"
    labs.mkdir()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("quick = None", metadata={"tags": ["parameters"]}),
                                         nbformat.v4.new_code_cell("print(6 * 7)")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(labs / "00-tiny.ipynb"))
    code = ("import sys\nfrom pathlib import Path\nfrom rocmlab import preflight\n"
            f"r = preflight.run(Path({str(labs)!r}), Path({str(tmp_path / 'out')!r}), progress=False)\n"
            "print(sys.modules.get('rfc3987_syntax') is not None, r[0].status, r[0].backend)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded, status, backend = out.stdout.split()[:3]
    assert (loaded, status) == ("False", "passed"), out.stdout
    assert backend.endswith(":") and json.loads((tmp_path / "out" / "summary.json").read_text())["labs"][0]["backend"]
