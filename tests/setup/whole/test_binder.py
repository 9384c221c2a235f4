"""binder/ builds the CPU environment: the repo2docker files are installed the way repo2docker does it
(from the repository root, `pip install -r binder/requirements.txt` into a fresh venv; there is no Docker
engine here), then the environment is checked: CPU torch, rocmlab from the checkout, the JupyterLab widget
extensions, and the doctor (backend cpu, the offline gfx942 toolchain found). Lab 00 itself runs in the
suite's own env (the notebook runs and tests/browser).

Also checks the files themselves: runtime.txt, apt.txt against the Debian set-up step, postBuild.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BINDER = ROOT / "binder"


def _repo_files() -> list[str]:
    """Tracked and untracked-but-not-ignored files: what a clone of this working tree would hold."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                         check=True)
    return [f for f in out.stdout.decode().split("\0") if f and (ROOT / f).is_file()]


def _run(cmd, cwd, env=None, timeout=600):
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} failed ({r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r.stdout


@pytest.fixture(scope="module")
def binder_env():
    """A repo2docker-style build: the repository copied to REPO_DIR, a fresh venv, requirements from binder/."""
    base = Path(tempfile.mkdtemp(prefix="rocmlab-binder-"))
    repo = base / "repo"
    for f in _repo_files():
        (repo / f).parent.mkdir(parents=True, exist_ok=True)
        (repo / f).write_bytes((ROOT / f).read_bytes())
    venv = base / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    env = dict(os.environ, PIP_RETRIES="0", PIP_DISABLE_PIP_VERSION_CHECK="1", HOME=str(base / "home"))
    env.pop("VIRTUAL_ENV", None)
    env["ROCMLAB_HOME"] = os.environ.get("ROCMLAB_HOME") or str(Path.home() / ".cache" / "rocmlab")
    # repo2docker runs this in ${REPO_DIR}: relative paths in the file are relative to the repository root
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-cache-dir", "--no-compile", "-r",
          "binder/requirements.txt"], cwd=repo, env=env, timeout=900)
    yield {"repo": repo, "py": str(venv / "bin" / "python"), "bin": venv / "bin", "env": env}
    # about 1.5 GB in 20k files, which takes up to a minute to delete on a busy disk: delete it in the
    # background instead of holding up the suite, as an orphan (the shell exits at once), so that no later test
    # in this worker counts the rm among the processes it must leave behind (tests/browser/conftest.py did once)
    subprocess.run(["sh", "-c", 'rm -rf "$1" >/dev/null 2>&1 </dev/null &', "sh", str(base)], check=False,
                   start_new_session=True)


def test_binder_installs_cpu_torch_and_rocmlab_from_the_checkout(binder_env):
    out = _run([binder_env["py"], "-c", "import json, torch, rocmlab; print(json.dumps([torch.__version__, "
                "torch.version.cuda, torch.version.hip, rocmlab.__file__]))"], cwd=binder_env["repo"],
               env=binder_env["env"])
    version, cuda, hip, where = json.loads(out)
    pin = re.search(r"^torch==(\S+)", (BINDER / "requirements.txt").read_text(), re.M).group(1)
    assert version.split("+")[0] == pin, version
    assert cuda is None and hip is None, f"binder pulled a GPU torch build: {version} cuda={cuda} hip={hip}"
    assert Path(where).resolve().is_relative_to(binder_env["repo"].resolve()), where
    _run([binder_env["py"], "-m", "pip", "check"], cwd=binder_env["repo"], env=binder_env["env"])


def test_binder_env_has_jupyterlab_and_the_widget_extensions(binder_env):
    """The prebuilt extensions JupyterLab loads for ipywidgets, anywidget and plotly's FigureWidget."""
    out = _run([binder_env["py"], "-c", "import jupyterlab; print(jupyterlab.__version__)"], cwd=binder_env["repo"],
               env=binder_env["env"])
    assert int(out.split(".")[0]) == 4, out
    share = binder_env["bin"].parent / "share" / "jupyter" / "labextensions"
    for ext in ("@jupyter-widgets/jupyterlab-manager", "anywidget", "jupyterlab-plotly"):
        pkg = share / ext / "package.json"
        assert pkg.is_file(), f"{ext} is not installed as a prebuilt JupyterLab extension in {share}"
        assert json.loads(pkg.read_text())["jupyterlab"].get("_build"), f"{ext} is not built"


def test_binder_env_runs_the_doctor_on_cpu_with_the_offline_toolchain(binder_env):
    out = _run([binder_env["py"], "-m", "rocmlab.cli", "doctor", "--json"], cwd=binder_env["repo"],
               env=binder_env["env"])
    report = json.loads(out)
    assert report["backend"] == "cpu"
    checks = {c["name"]: c for c in report["checks"]}
    assert not [c for c in report["checks"] if c["status"] == "fail"], report["checks"]
    hip = next(c for n, c in checks.items() if n.startswith("offline HIP toolchain"))
    assert hip["status"] == "ok" and "gfx942" in hip["message"], hip


# ----------------------------------------------------------------------------- the files themselves

def test_runtime_txt_names_the_python_this_test_builds_with():
    runtime = (BINDER / "runtime.txt").read_text().strip()
    m = re.fullmatch(r"python-(\d+)\.(\d+)", runtime)
    assert m, f"binder/runtime.txt must read python-X.Y, not {runtime!r}"
    assert (int(m[1]), int(m[2])) == sys.version_info[:2], (
        f"binder/runtime.txt pins {runtime} but this test built the env with Python "
        f"{sys.version_info.major}.{sys.version_info.minor}: build with that Python or change runtime.txt")


def test_requirements_reference_the_repository_root_and_pin_cpu_torch():
    lines = [ln.strip() for ln in (BINDER / "requirements.txt").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    local = [ln for ln in lines if re.match(r"(-e\s+)?\.", ln)]
    assert local == ["-e ."], ("binder/requirements.txt must install the checkout with '-e .': repo2docker runs pip "
                               f"from the repository root, so relative paths start there (found {local})")
    assert any(re.fullmatch(r"torch==\d+\.\d+\.\d+", ln) for ln in lines), "pin torch: unpinned pulls CUDA"
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines
    # torch must come before rocmlab: rocmlab's torch>=2.3 would otherwise be met by whatever pip picks
    assert lines.index(next(ln for ln in lines if ln.startswith("torch=="))) < lines.index("-e .")


def test_apt_txt_is_the_debian_set_up_steps_toolchain():
    apt = {ln.strip() for ln in (BINDER / "apt.txt").read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    setup = (ROOT / "scripts" / "setup" / "10-system.sh").read_text()
    listed = set(re.search(r"for pkg in ([^;]+); do", setup).group(1).split()) | {"python3-venv", "debootstrap", "chromium"}
    assert apt <= listed, f"apt.txt has packages the set-up step does not install: {sorted(apt - listed)}"
    assert "bubblewrap" in apt, "binder/apt.txt lacks bubblewrap (the sandbox)"


def test_postbuild_is_executable_valid_bash_and_says_what_it_skips(tmp_path):
    post = BINDER / "postBuild"
    assert os.access(post, os.X_OK), "binder/postBuild must be executable (chmod +x)"
    _run(["bash", "-n", str(post)], cwd=ROOT)
    assert "20-rocm-root.sh" in post.read_text() and "needs root" in post.read_text()


