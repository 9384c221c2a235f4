"""Reference answers withheld in a workshop (issue 38), as the hub recipe switches it on: the hub (root) locks the
reference files of the package the learners' servers run, compiled copies included, and a learner's process
can neither read them nor import them (with the setting: one plain message; with the setting cleared by the
learner: the lock still refuses). A notebook cell that needs a reference says so in one line, never with a
traceback, and a lab's set-up cell (``needs.module``) goes on with a stand-in. Controls: root reads the locked
files, an unlocked module of the same copy stays readable, an ordinary error still shows its traceback."""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import rocmlab
from rocmlab.workshop import hubconfig, references as R
from tests.helpers.uid_child import run_as

ROOTONLY = pytest.mark.skipif(os.geteuid() != 0, reason="locking needs root, and acting as a learner's uid")


def _copy_package(tmp: Path) -> tuple[Path, Path]:
    """A copy of the installed rocmlab (so the checkout's own files are never locked) and a python that runs it."""
    os.chmod(tmp, 0o755)
    pkg = tmp / "site" / "rocmlab"
    shutil.copytree(Path(rocmlab.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for d, _, files in os.walk(tmp):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    python = tmp / "python"
    # -S: no site-packages, whose editable install of rocmlab would win over the copy (the lister needs only stdlib)
    python.write_text(f'#!/bin/sh\nPYTHONPATH={tmp / "site"} exec {sys.executable} -S "$@"\n')
    os.chmod(python, 0o755)
    return pkg, python


def _as_learner(uid: int, fn) -> str:
    """``fn()`` in a child process as ``uid`` (no groups); its returned string comes back."""
    def child() -> str:
        try:
            return fn()
        except BaseException as exc:                              # noqa: BLE001
            return f"CHILD {type(exc).__name__}: {exc}"

    return run_as(uid, child)


def _read(path: Path):
    def fn():
        try:
            return f"READ {len(path.read_bytes())}"
        except PermissionError:
            return "DENIED"
    return fn


def _import_in_copy(site: Path, setting: str | None, module: str):
    """Import ``module`` from the copy (its own rocmlab, not this process's), the learner's setting as given."""
    def fn():
        for name in [m for m in sys.modules if m == "rocmlab" or m.startswith("rocmlab.")]:
            del sys.modules[name]
        sys.path.insert(0, str(site))
        os.environ.pop(R.ENV, None)
        if setting is not None:
            os.environ[R.ENV] = setting
        import importlib

        needs = importlib.import_module("rocmlab.course.needs")      # installs the finder, as every lab does
        assert needs.__file__.startswith(str(site)), needs.__file__
        try:
            importlib.import_module(module)
            return "LOADED"
        except ImportError as exc:
            return f"{type(exc).__name__}: {exc}"
        except PermissionError as exc:
            return f"PermissionError: {exc}"
    return fn


@pytest.fixture
def open_tmp():
    """A folder a learner's uid can reach (pytest's tmp_path lies under a root-only folder)."""
    base = Path(tempfile.mkdtemp(prefix="rocmlab-refs-hub-"))
    yield base
    shutil.rmtree(base, ignore_errors=True)


@ROOTONLY
def test_the_hub_locks_the_servers_references_and_a_learner_can_neither_read_nor_import_them(open_tmp):
    pkg, python = _copy_package(open_tmp)
    locked, why = hubconfig.lock_server_references(str(python))
    assert why == "" and locked, why
    names = {p.name for p in locked}
    lab08 = pkg / "course" / "labs" / "lab08_mi300x_package"
    assert lab08 / "kernels.py" in locked and "solution.hip" in names
    assert any(p.parent == lab08 / "__pycache__" and p.name.startswith("kernels.") for p in locked)   # the compiled copy too
    assert all(p.is_relative_to(pkg) for p in locked)                 # the servers' package, not this checkout
    uid = random.randint(20000, 29999)
    for p in random.sample(locked, 4) + [lab08 / "kernels.py"]:
        assert (p.stat().st_mode & 0o777) == 0o600 and p.stat().st_uid == 0
        assert _as_learner(uid, _read(p)) == "DENIED", p
        assert p.read_bytes()                                         # control: root (the grader) reads it
    assert _as_learner(uid, _read(pkg / "course" / "puzzles.py")).startswith("READ")     # control: not a reference
    site = pkg.parent
    with_setting = _as_learner(uid, _import_in_copy(site, "off", "rocmlab.course.labs.lab08_mi300x_package.kernels"))
    assert with_setting.startswith("ReferencesWithheld: references are held by the instructor"), with_setting
    cleared = _as_learner(uid, _import_in_copy(site, None, "rocmlab.course.labs.lab08_mi300x_package.kernels"))
    assert cleared.startswith("PermissionError"), cleared              # the learner cleared it: the lock holds
    solution = _as_learner(uid, _solution_in_copy(site))
    assert solution.startswith("SolutionWithheld") and "held by the instructor" in solution, solution


def _solution_in_copy(site: Path):
    def fn():
        for name in [m for m in sys.modules if m == "rocmlab" or m.startswith("rocmlab.")]:
            del sys.modules[name]
        sys.path.insert(0, str(site))
        os.environ[R.ENV] = "off"
        from rocmlab.grader.spec import load

        try:
            return f"READ {len(load('vector-add').solution)}"
        except PermissionError as exc:
            return f"{type(exc).__name__}: {exc}"
    return fn


def test_a_cell_that_needs_a_reference_says_so_in_one_line_and_the_lab_goes_on(tmp_path, monkeypatch):
    monkeypatch.setenv(R.ENV, "off")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell('from rocmlab.course import needs\n'
                                  'L = needs.module("rocmlab.course.labs.lab10_fp8_gemm.lab", lab="Lab 10")\nprint("L is", bool(L))'),
        nbformat.v4.new_code_cell("from rocmlab.course.labs.lab08_mi300x_package import kernels"),
        nbformat.v4.new_code_cell("print('next cell ran')"),
        nbformat.v4.new_code_cell("def f():\n    return 1 / 0\nf()"),
    ])
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    setup, ref, after, control = (c.outputs for c in nb.cells)
    text = "".join(o.get("text", "") for o in setup)
    assert "[Lab 10] references are held by the instructor on this hub" in text and "L is False" in text, setup
    err = next(o for o in ref if o["output_type"] == "error")
    assert err["ename"] == "ReferencesWithheld" and len(err["traceback"]) == 1, err["traceback"]
    assert "held by the instructor" in err["traceback"][0] and "File " not in err["traceback"][0]
    assert "next cell ran" in "".join(o.get("text", "") for o in after)
    bad = next(o for o in control if o["output_type"] == "error")         # control: a real error keeps its traceback
    assert bad["ename"] == "ZeroDivisionError" and len(bad["traceback"]) > 1


def test_reference_files_include_the_compiled_copies():
    pyc = [p for p in R.reference_files() if p.suffix == ".pyc"]
    sources = {p for p in R.reference_files() if p.suffix == ".py"}
    assert all(p.parent.name == "__pycache__" and p.parent.parent / (p.name.split(".")[0] + ".py") in sources
               for p in pyc)
    assert not any(p.name.startswith("puzzles.") for p in R.reference_files())     # control: checkers stay readable
