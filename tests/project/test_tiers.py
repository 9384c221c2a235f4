"""The suite's tier rule (tests/conftest.py, ``tier_of``): every test file has a tier by its folder, and every
marker a test uses is declared in pyproject.toml (``--strict-markers``). Each check has a planted control: a
small suite in a temporary folder, with a copy of the real conftest and the real pytest settings, where a stray
file or an undeclared marker makes collection fail with the message that names it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.conftest import ROOMS, WHOLE_ROOMS, tier_of

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
PYTEST_SETTINGS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]
#: pytest's own marks and those its plugins here register themselves
BUILTIN_MARKS = {"parametrize", "skip", "skipif", "xfail", "usefixtures", "filterwarnings", "timeout"}


def _test_files() -> list[str]:
    return sorted(p.relative_to(ROOT).as_posix() for p in TESTS.rglob("test_*.py")
                  if "__pycache__" not in p.parts and p.parts[len(TESTS.parts)] not in ("data", "gpu"))


def _declared_markers() -> set[str]:
    return {m.split(":")[0].strip() for m in PYTEST_SETTINGS["markers"]}


def test_every_test_file_has_a_tier():
    files = _test_files()
    assert len(files) > 80, files
    assert not [f for f in files if tier_of(f) is None], "test files with no tier (tests/README.md says where)"
    tiers = {f: tier_of(f) for f in files}
    assert {"quick", "whole"} == set(tiers.values())
    # every room holds tests, and the whole-suite rooms are whole
    assert {f.split("/")[1] for f in files} == set(ROOMS)
    assert all(tiers[f] == "whole" for f in files if f.split("/")[1] in WHOLE_ROOMS)


def test_tier_rule_on_planted_paths():
    assert tier_of("tests/sim/test_planted.py") == "quick"
    assert tier_of("tests/sim/whole/test_planted.py") == "whole"
    assert tier_of("tests/hub/test_planted.py") == "whole"
    # controls: outside every room, an undeclared room, a folder that is not `whole/`
    assert tier_of("tests/test_planted.py") is None
    assert tier_of("tests/nowhere/test_planted.py") is None
    assert tier_of("tests/sim/slowish/test_planted.py") is None
    assert tier_of("labs/test_planted.py") is None


def test_every_marker_used_is_declared_and_strict():
    assert "--strict-markers" in PYTEST_SETTINGS["addopts"].split()
    used = set()
    scanned = [f for f in _test_files() if f != "tests/project/test_tiers.py"]    # this file plants one
    for f in scanned + [p.relative_to(ROOT).as_posix() for p in TESTS.rglob("conftest.py")]:
        used |= set(re.findall(r"\bmark\.([A-Za-z_]\w*)", (ROOT / f).read_text(encoding="utf-8")))
    assert used, "the scan found no marker at all: it is broken"
    assert used - BUILTIN_MARKS <= _declared_markers(), used - BUILTIN_MARKS - _declared_markers()
    assert {"quick", "whole"} <= _declared_markers()


def _planted_suite(top: Path, files: dict[str, str]) -> subprocess.CompletedProcess:
    """A copy of the real conftest, helpers and pytest settings in ``top``, with ``files``; collected by pytest."""
    (top / "tests" / "helpers").mkdir(parents=True)
    for rel in ("tests/__init__.py", "tests/conftest.py", "tests/helpers/__init__.py",
                "tests/helpers/fake_machine.py"):
        shutil.copy(ROOT / rel, top / rel)
    ini = "\n".join(f"{k} = {json.dumps(v)}" for k, v in PYTEST_SETTINGS.items())   # JSON values are TOML
    (top / "pyproject.toml").write_text("[tool.pytest.ini_options]\n" + ini + "\n")
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text)
        init = (top / rel).parent / "__init__.py"
        init.touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           "-p", "no:xdist", "-m", "quick"], cwd=top, env=env, capture_output=True, text=True,
                          timeout=300)


GOOD = "def test_one():\n    assert 1 + 1 == 2\n"


def test_planted_suite_collects_by_tier(tmp_path):
    done = _planted_suite(tmp_path, {"tests/sim/test_good.py": GOOD, "tests/sim/whole/test_big.py": GOOD})
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "tests/sim/test_good.py::test_one" in out and "test_big" not in out, out
    assert "1 test collected" in out, out          # the whole tier's file is not even imported


def test_planted_file_with_no_tier_fails_collection(tmp_path):
    done = _planted_suite(tmp_path, {"tests/sim/test_good.py": GOOD, "tests/test_stray.py": GOOD})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "have no tier: tests/test_stray.py" in out and "tests/<room>/" in out, out


def test_planted_undeclared_marker_fails_collection(tmp_path):
    marked = "import pytest\n\n\n@pytest.mark.not_a_declared_marker\n" + GOOD
    done = _planted_suite(tmp_path, {"tests/sim/test_marked.py": marked})
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "'not_a_declared_marker' not found in `markers` configuration option" in out, out


def test_the_longest_units_of_work_are_collected_first():
    """pytest-xdist hands out units in collection order: the measured longest start first, the rest keep theirs."""
    from types import SimpleNamespace

    from tests.conftest import _LONG_FIRST, _start_rank

    ids = ["tests/comm/test_a.py::t", "tests/project/whole/test_wheel.py::t", "tests/hub/test_hub.py::t",
           "tests/comm/test_b.py::t", "tests/browser/test_browser_views.py::t[x]"]
    got = [i.nodeid for i in sorted((SimpleNamespace(nodeid=n) for n in ids), key=_start_rank)]
    assert got == ["tests/hub/test_hub.py::t", "tests/project/whole/test_wheel.py::t",
                   "tests/browser/test_browser_views.py::t[x]", "tests/comm/test_a.py::t", "tests/comm/test_b.py::t"]
    assert all(p.startswith("tests/") for p in _LONG_FIRST)
