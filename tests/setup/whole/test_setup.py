"""Set-up decides by what is present and what the command needs, on real apt and real scripts.

- chromium made uninstallable with an apt pin (Pin-Priority -1, the Ubuntu situation: "no installation
  candidate"): ``./go lab`` still sets up and JupyterLab answers; ``./go setup`` (for the test suite) finishes
  and says what the browser tests lose, with the fix;
- an installed ROCm (a hipcc of ROCm 6+) is found, so the offline root is not built; an old HIP 5.2 is not;
- a non-root user without sudo: optional parts are reported, nothing stops;
- a second run is a no-op.

(The wheel into an existing JupyterLab environment is tests/project/whole/test_wheel.py: it changes nothing on
the machine, so it runs beside the others, not in this module's one-at-a-time unit.)

apt is made to see chromium as not installed through APT_CONFIG (a copy of dpkg's status without it) and
DPKG_ADMINDIR, so the machine's own packages are never touched.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SETUP = ROOT / "scripts" / "setup"
MISSING = "rocmlab-setup: optional part missing: "

needs_root_and_apt = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("apt-get"),
                                        reason="needs root and apt-get (the set-up scripts' real apt path)")


def run(cmd, env=None, timeout=600, cwd=ROOT):
    full = {**os.environ, **(env or {})}
    return subprocess.run(cmd, cwd=cwd, env=full, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def chromium_pinned_away(tmp_path):
    """APT_CONFIG + DPKG_ADMINDIR under which chromium is not installed and has no installation candidate."""
    if not Path("/var/lib/dpkg/status").is_file():
        pytest.skip("no dpkg status file: not a Debian/Ubuntu machine")
    dpkg = tmp_path / "dpkg"
    prefs = tmp_path / "preferences.d"
    dpkg.mkdir()
    prefs.mkdir()
    stanzas = Path("/var/lib/dpkg/status").read_text().split("\n\n")
    (dpkg / "status").write_text("\n\n".join(s for s in stanzas if not s.startswith("Package: chromium\n")))
    (prefs / "no-chromium.pref").write_text("Package: chromium\nPin: release *\nPin-Priority: -1\n")
    conf = tmp_path / "apt.conf"
    conf.write_text(f'Dir::State::status "{dpkg / "status"}";\nDir::Etc::PreferencesParts "{prefs}";\n')
    env = {"APT_CONFIG": str(conf), "DPKG_ADMINDIR": str(dpkg)}
    # the control: under this configuration real apt refuses chromium exactly as Ubuntu does
    sim = run(["apt-get", "install", "-s", "chromium"], env=env)
    assert sim.returncode != 0 and "has no installation candidate" in sim.stderr, sim.stderr
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_status(port: int, proc, timeout=180) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"./go lab exited with {proc.returncode} before JupyterLab answered")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token=t0k", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            time.sleep(1)
    raise AssertionError(f"JupyterLab did not answer /api/status on port {port} within {timeout} s")


@needs_root_and_apt
def test_go_lab_with_chromium_pinned_away_starts_jupyterlab(chromium_pinned_away, tmp_path):
    port = free_port()
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **chromium_pinned_away, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / "cfg"),
           "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "rt"),
           "ROCMLAB_HOME": os.environ.get("ROCMLAB_HOME") or os.path.expanduser("~/.cache/rocmlab")}
    log = tmp_path / "go-lab.log"
    with open(log, "w") as out:
        proc = subprocess.Popen(["./go", "lab", "--", "--no-browser", f"--port={port}", "--ServerApp.token=t0k",
                                 "--ServerApp.ip=127.0.0.1"], cwd=ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
    try:
        status = wait_status(port, proc)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    text = log.read_text()
    art = Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts"))
    art.mkdir(parents=True, exist_ok=True)
    (art / "go_lab_chromium_pinned.log").write_text(text)
    assert "started" in status, status
    assert "==> set-up for 'lab' done" in text, text
    assert "chromium" not in text.split("==> set-up for")[0], "./go lab must not ask for the browser at all"


@needs_root_and_apt
def test_setup_for_tests_with_chromium_pinned_away_finishes_and_says_what_is_lost(chromium_pinned_away):
    done = run(["bash", str(SETUP / "10-system.sh")], env={**chromium_pinned_away, "ROCMLAB_SETUP_FOR": "test"})
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(ln for ln in done.stdout.splitlines() if ln.startswith(MISSING))
    assert "chromium (apt has no installation candidate for chromium)" in line
    assert "loses: the real-browser tests" in line and "fix: " in line


def fake_rocm(tmp_path, version: str) -> Path:
    """A ROCm install tree: bin/hipcc and bin/hipconfig answering like ROCm's, .info/version."""
    rocm = tmp_path / f"rocm-{version}"
    (rocm / "bin").mkdir(parents=True)
    (rocm / ".info").mkdir()
    (rocm / ".info" / "version").write_text(f"{version}-1234\n")
    for tool, text in (("hipcc", f"HIP version: {version}.12345-abc"), ("hipconfig", f"{version}.12345-abc")):
        (rocm / "bin" / tool).write_text(f"#!/bin/sh\necho '{text}'\n")
        (rocm / "bin" / tool).chmod(0o755)
    return rocm


def test_installed_rocm_means_no_offline_root(tmp_path):
    rocm = fake_rocm(tmp_path, "7.1.0")
    absent = tmp_path / "no-root-here"
    env = {"ROCM_PATH": str(rocm), "ROCMLAB_ROCM_ROOT": str(absent), "PATH": f"{rocm / 'bin'}:{os.environ['PATH']}"}
    done = run(["bash", str(SETUP / "20-rocm-root.sh")], env=env)
    assert done.returncode == 0, done.stderr
    assert f"the installed ROCm 7.1.0: {rocm / 'bin' / 'hipcc'}" in done.stdout
    assert not absent.exists()
    assert run(["bash", str(SETUP / "20-rocm-root.sh"), "--needed"], env=env).returncode == 1
    # rocmlab itself uses the same compiler
    from rocmlab.hip.toolchain import discover
    from rocmlab.machine.detect import Probe

    tc = discover("rocm", Probe(env={**os.environ, **env}))
    assert tc and tc.compiler == str(rocm / "bin" / "hipcc") and tc.rocm_version == "7.1.0"


def test_the_offline_root_is_not_an_installed_rocm(tmp_path):
    """An offline root kept under /opt/rocm-* (its bin/hipcc runs only inside it) is not taken for a ROCm install."""
    root = fake_rocm(tmp_path, "7.2.4")
    (root / ".rocmlab-ready").write_text("rocm 7.2.4\n")
    from rocmlab.hip.toolchain import discover
    from rocmlab.machine.detect import Probe

    assert discover("rocm", Probe(env={"ROCM_PATH": str(root), "PATH": "/usr/bin:/bin"})) is None
    (root / ".rocmlab-ready").unlink()     # the control: the same tree without the stamp is an install
    assert discover("rocm", Probe(env={"ROCM_PATH": str(root), "PATH": "/usr/bin:/bin"})) is not None


def test_old_hip_is_not_an_installed_rocm(tmp_path):
    """Debian 12's own HIP 5.2 lacks what the course teaches: the offline root is still needed."""
    old = fake_rocm(tmp_path, "5.2.3")
    env = {"ROCM_PATH": str(old), "ROCMLAB_ROCM_ROOT": str(tmp_path / "absent"), "PATH": f"{old / 'bin'}:/usr/bin:/bin"}
    assert run(["bash", str(SETUP / "20-rocm-root.sh"), "--needed"], env=env).returncode == 0
    from rocmlab.hip.toolchain import discover
    from rocmlab.machine.detect import Probe

    assert discover("rocm", Probe(env={**os.environ, **env})) is None


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to become another user")
def test_non_root_without_sudo_reports_and_goes_on(tmp_path, chromium_pinned_away):
    home = tmp_path / "nobody-home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    tmp_path.chmod(0o755)
    for p in chromium_pinned_away.values():
        for q in (Path(p), *Path(p).parents):
            if q == tmp_path:
                break
            q.chmod(0o755) if q.is_dir() else q.chmod(0o644)
    env = {**chromium_pinned_away, "HOME": str(home), "ROCMLAB_HOME": str(home / ".cache" / "rocmlab"),
           "ROCMLAB_SETUP_FOR": "test", "PATH": "/usr/bin:/bin"}
    env.pop("ROCMLAB_ROCM_ROOT", None)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    for step in ("10-system.sh", "20-rocm-root.sh"):
        full = {k: v for k, v in {**os.environ, **env}.items() if k != "ROCMLAB_ROCM_ROOT"}
        done = subprocess.run([*as_nobody, "bash", str(SETUP / step)], cwd=tmp_path, env=full, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, f"{step} stopped a non-root user: {done.stdout}{done.stderr}"
        lines = [ln for ln in done.stdout.splitlines() if ln.startswith(MISSING)]
        assert lines, f"{step} said nothing about what it could not install: {done.stdout}"
        if step == "10-system.sh":
            assert any("chromium" in ln and "ask an administrator" in ln for ln in lines), lines
        else:
            assert any("offline ROCm" in ln and "needs root" in ln for ln in lines), lines
    assert not (home / ".cache" / "rocmlab" / "rocm-7.2.4").exists()


@needs_root_and_apt
def test_second_setup_run_is_a_no_op():
    env = {"ROCMLAB_SETUP_FOR": "test"}
    said = {}
    for step in sorted(SETUP.glob("[0-9]*.sh")):
        done = run(["bash", str(step)], env=env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        said[step.name] = done.stdout
    assert "all present" in said["10-system.sh"]
    assert "present in" in said["20-rocm-root.sh"] or "the installed ROCm" in said["20-rocm-root.sh"]
    assert "python env: present" in said["30-python.sh"]
    assert "already importable" in said["40-triton.sh"]
    for name, out in said.items():
        assert "installing" not in out.lower(), f"{name} installed something on a second run: {out}"
