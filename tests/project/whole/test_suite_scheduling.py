"""The suite's own parallel schedule (tests/conftest.py, pytest_xdist_make_scheduler): the tests that change the
machine (tests/hub/, tests/setup/whole/test_setup.py) run in one pytest-xdist worker, one after another; so do the tests of
each module that shares a costly fixture (built once, not once per worker); the rest spread.
Checked on a planted tree run by the real pytest-xdist with the real hook."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("xdist")

CONFTEST = Path(__file__).resolve().parents[2] / "conftest.py"
WIDE = ("tests/hub/test_a.py", "tests/hub/test_b.py", "tests/setup/whole/test_setup.py")
ONE = ("tests/port/whole/test_port.py", "tests/serve/whole/test_serve_live.py")      # modules sharing a costly fixture
REST = tuple(f"tests/labs/test_{c}.py" for c in "cdefgh")


def _run(tmp_path, hook: bool) -> list[tuple[str, str]]:
    """(worker, test file) for each test of a planted tree run with ``-n 2``, with the suite's hook or without."""
    hub = tmp_path / "tests" / "hub"
    hub.mkdir(parents=True)
    (tmp_path / "tests" / "__init__.py").write_text("")
    (hub / "__init__.py").write_text("")
    (tmp_path / "conftest.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('suite_conftest', {str(CONFTEST)!r})\n"
        "m = importlib.util.module_from_spec(spec)\nspec.loader.exec_module(m)\n"
        "pytest_xdist_make_scheduler = m.pytest_xdist_make_scheduler\n" if hook else "")
    body = "import time, pytest\n@pytest.mark.parametrize('i', range(6))\ndef test_t(i):\n    time.sleep(0.2)\n"
    for rel in (*WIDE, *ONE, *REST):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(body)
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider", "-p",
                           "no:randomly", "tests"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    ran = re.findall(r"\[(gw\d)\] .*?PASSED (tests/\S+?)::", done.stdout)
    assert len(ran) == 6 * (len(WIDE) + len(ONE) + len(REST)), done.stdout[-3000:]
    return ran


def test_machine_wide_tests_share_one_worker_and_the_rest_spread(tmp_path):
    ran = _run(tmp_path, hook=True)
    assert len({gw for gw, path in ran if path in WIDE}) == 1, ran
    for module in ONE:
        assert len({gw for gw, path in ran if path == module}) == 1, ran
    assert {gw for gw, path in ran if path in REST} == {"gw0", "gw1"}, ran


def test_control_without_the_hook_they_spread(tmp_path):
    """The control: plain pytest-xdist puts the same machine-wide tests, and each module's, on both workers."""
    ran = _run(tmp_path, hook=False)
    assert {gw for gw, path in ran if path in WIDE} == {"gw0", "gw1"}, ran
    for module in ONE:
        assert {gw for gw, path in ran if path == module} == {"gw0", "gw1"}, ran


def test_a_worker_runs_torch_on_one_thread_unless_told_otherwise():
    """tests/conftest.py gives each pytest-xdist worker (and the programs it starts) one thread: a pool per worker
    would oversubscribe the cores. Outside a worker (``-n 0``) nothing is changed."""
    import os

    import torch

    if not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("checks a pytest-xdist worker (./go test runs in workers; this run is -n 0)")
    if os.environ.get("OMP_NUM_THREADS", "1") != "1":
        pytest.skip(f"the caller set OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}, which wins")
    assert torch.get_num_threads() == 1
    child = subprocess.run([sys.executable, "-c", "import os; print(os.environ['OMP_NUM_THREADS'])"],
                           capture_output=True, text=True, check=True)
    assert child.stdout.strip() == "1"
