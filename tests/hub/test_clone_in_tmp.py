"""A hub started from a course installed under /tmp (issue 49: a clone in /tmp, its .venv there, the offline ROCm
root there). Each learner's server gets a private tmpfs /tmp, which hid all of it: the server died with ``No
module named 'jupyterhub'`` and the instructor saw JupyterHub's bare 500. Now what a server reads under /tmp is
bound back read-only (rocmlab.workshop.hub.server_reads), and a server that cannot start says why.

The course and the ROCm root are put under /tmp with bind mounts in a mount namespace of the test's own (the
checkout and its .venv at /tmp/rocmlab-clone-*/course, as a clone there would be), and the hub runs there from
the clone's Python with the course imported from the clone's path (tests/helpers/hub_in_clone.py).

- two learners spawn; their servers import the course from the clone and compile a ``%%hip`` cell with the root;
- control: the same hub without the bind (``bind_server_reads=False``): the spawn fails, and Hub.spawn's error,
  the learner's page and the hub's log carry the server's own last line (``No module named 'jupyterhub'``), not
  ``Internal Server Error``.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from rocmlab import paths
from rocmlab.hip.toolchain import READY_STAMP

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = "tests/helpers/hub_in_clone.py"


@pytest.fixture
def clone_in_tmp(needs_proxy):
    if os.geteuid() != 0:
        pytest.skip("the workshop hub runs as root (it creates users)")
    if not (ROOT / ".venv" / "bin" / "python").exists():
        pytest.skip("no .venv in this checkout (./go setup makes it)")
    if not (paths.rocm_root() / READY_STAMP).is_file():
        pytest.fail(f"no offline ROCm root at {paths.rocm_root()}: run bash scripts/setup/20-rocm-root.sh")
    top = Path(tempfile.mkdtemp(prefix="rocmlab-clone-", dir="/tmp"))
    os.chmod(top, 0o711)
    for d in ("course", "rocm-7.2.4", "work"):
        (top / d).mkdir(mode=0o711)
    yield top
    shutil.rmtree(top, ignore_errors=True)        # the mounts ended with the namespace


def _run_in_clone(top: Path, how: str) -> dict:
    """tests/helpers/hub_in_clone.py HOW, in a mount namespace with the checkout at TOP/course and the ROCm root at
    TOP/rocm-7.2.4 (read-only), run by the clone's Python with the course on PYTHONPATH from the clone."""
    course = top / "course"
    bind = ('mount --bind "$1" "$2/course" && mount --bind "$3" "$2/rocm-7.2.4" && '
            'mount -o remount,bind,ro "$2/rocm-7.2.4" && shift 3 && exec "$@"')
    env = {**os.environ, "PYTHONPATH": str(course)}
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", bind, "sh", str(ROOT), str(top),
                        str(paths.rocm_root()), str(course / ".venv" / "bin" / "python"), str(course / SCRIPT), how,
                        str(top / "work"), str(top / "rocm-7.2.4"), f"rc{secrets.token_hex(2)}-"],
                       capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert r.returncode == 0 and lines, f"rc {r.returncode}\n{r.stdout[-4000:]}\n{r.stderr[-6000:]}"
    return json.loads(lines[-1][len("RESULT "):])


def test_a_hub_from_a_clone_under_tmp_spawns_learners_that_import_the_course_and_compile(clone_in_tmp):
    top = clone_in_tmp
    out = _run_in_clone(top, "bound")
    assert out["course"].startswith(f"{top}/course/"), out["course"]
    assert f"{top}/course" in out["reads"] and f"{top}/rocm-7.2.4" in out["reads"], out["reads"]
    for name in ("learner01", "learner02"):
        text = out[name]
        assert f"COURSE {top}/course/rocmlab/__init__.py" in text, text
        assert "built for gfx942 with hipcc" in text and "(offline ROCm 7.2.4 root)" in text, text


def test_control_without_the_bind_the_spawn_fails_saying_why(clone_in_tmp):
    out = _run_in_clone(clone_in_tmp, "control")
    err, (status, page), log = out["error"], out["page"], out["log"]
    why = "No module named 'jupyterhub'"
    assert err is not None, "the control spawned: the course was visible without the bind"
    assert why in err and "learner01's server exited (status 1) before it answered" in err, err
    assert "Internal Server Error" not in err and "Exception is not set" not in err, err
    assert why in page and "learner01's server exited" in page, (status, page)
    assert "learner01's server exited (status 1)" in log and why in log, log[-3000:]
    assert "InvalidStateError" not in log, log[-3000:]
