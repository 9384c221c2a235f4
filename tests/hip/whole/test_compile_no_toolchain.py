"""Labs 01 and 02 run on a machine with no AMD compiler (no offline ROCm root, no ROCm hipcc): the
cells that need one say so with the fix, and the rest of each lab runs (papermill, quick sizes)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

LABS = Path(__file__).resolve().parents[3] / "labs"


@pytest.fixture(autouse=True)
def _forget_the_hidden_toolchain():
    """After each test (and after monkeypatch has put the environment back), the toolchain cache is emptied:
    a test that failed half-way must not leave this worker believing the machine has no compiler."""
    yield
    from rocmlab.hip.compile import forget_toolchains

    forget_toolchains()


def _hidden_env(tmp_path) -> dict:
    env = dict(os.environ)
    empty = tmp_path / "no-rocm-root"
    empty.mkdir()
    env["ROCMLAB_ROCM_ROOT"] = str(empty)          # the offline root is not there
    env["ROCMLAB_HOME"] = str(tmp_path / "home")   # and no cached builds from a machine that had it
    env["ROCM_PATH"] = str(tmp_path / "no-opt-rocm")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(LABS.parent), env.get("PYTHONPATH")]))
    return env


def _outputs(nb: dict) -> str:
    out = []
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            out.append("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", "")))
    return "\n".join(out)


@pytest.mark.parametrize("lab", ["01-hip-programming-model", "02-porting-cuda-to-hip"])
def test_lab_runs_with_the_toolchain_hidden_and_says_so(lab, tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    env = _hidden_env(tmp_path)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    from rocmlab.hip.compile import choose, forget_toolchains

    forget_toolchains()
    tc, fix = choose("hip", "gfx942", plat=None)
    assert tc is None and "20-rocm-root.sh" in fix, "the toolchain must really be hidden for this test"
    out = tmp_path / f"{lab}.ipynb"
    papermill.execute_notebook(str(LABS / f"{lab}.ipynb"), str(out), parameters={"quick": True}, cwd=str(tmp_path),
                               progress_bar=False, kernel_name="python3", execution_timeout=600)
    text = _outputs(json.loads(out.read_text()))
    assert "needs a compiler for gfx942" in text and "rocmlab setup rocm-root" in text
    assert "Traceback" not in text
    forget_toolchains()


def test_the_lab_checks_fail_when_a_cell_needs_the_compiler_and_is_not_guarded(tmp_path, monkeypatch):
    """The failing control: without its guard, Lab 01's inspection cell raises the old KeyError."""
    for k, v in _hidden_env(tmp_path).items():
        monkeypatch.setenv(k, v)
    from rocmlab.hip import compile as driver
    from rocmlab.hip.inspector import inspect

    driver.forget_toolchains()
    ins = inspect((LABS.parent / "rocmlab/hip/kernels/ballot.hip").read_text(), "gfx942")
    assert not ins.ok and "20-rocm-root.sh" in ins.diagnostics[0].message
    with pytest.raises(KeyError, match="no kernel 'ballot_even'"):
        ins.kernel("ballot_even")
    driver.forget_toolchains()


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
def test_hidden_env_is_restored():
    from rocmlab.hip.toolchain import offline_root

    assert "no-rocm-root" not in str(offline_root())
