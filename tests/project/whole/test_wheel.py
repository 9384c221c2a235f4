"""The wheel carries the whole course, into the environment a learner already has. From a copy of the repository's
tracked files (plus the leftovers of a used checkout: a learner's my-work/ and notebook checkpoints, which must not
ship) the wheel is built and installed into a fresh venv that, like a ROCm PyTorch image, already holds a torch
(this environment's, shown to it by a ``.pth`` file) and JupyterLab; the wheel brings its own dependencies with the
``triton`` extra the set-up page names and must leave the image's torch as it was. From there, in a temporary home,
``rocmlab doctor`` answers, ``rocmlab labs DEST`` copies the labs and ``rocmlab preflight`` runs every one of them
at the CI sizes (ROCMLAB_QUICK=1). Every lab passes, or its error says plainly what is missing and how to install
it (and the other labs still run).

The venv's third-party packages are kept between runs in the temporary folder, under a name made of the wheel's
dependency list, JupyterLab's, torch's and Python's versions, so a second run installs only the new wheel (a fresh
venv is made whenever that list changes); everything else is made anew in this test's temporary folders."""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: what a used checkout holds that is not course material
LEFTOVERS = ("labs/my-work/lab01/wave_sum.hip", "labs/exercises/my-work/vector-add/vector_add.hip",
             "labs/.ipynb_checkpoints/00-setup-checkpoint.ipynb", "rocmlab/.ipynb_checkpoints/x-checkpoint.py")
#: the course's files a lab reads, which must be in the wheel
MUST_SHIP = ("rocmlab/course/labs/lab02_porting_cuda_to_hip/samples/reduce_intrinsics/src/ballot_count.cu",
             "rocmlab/_setup/20-rocm-root.sh", "rocmlab/_setup/lib.sh", "rocmlab/_labs/00-setup.ipynb",
             "rocmlab/_labs/exercises/01-vector-add.ipynb", "rocmlab/exercises/common/exercise_io.h")


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


def _tracked_copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _torch_overlay(dest: Path) -> Path:
    """A folder holding only torch and what torch needs, as links into this environment (the image's torch
    that a fresh environment is given to see, as on a ROCm PyTorch image)."""
    dest.mkdir()
    todo, seen = ["torch"], set()
    while todo:
        name = todo.pop()
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        key = dist.metadata["Name"].lower()
        if key in seen:
            continue
        seen.add(key)
        for f in dist.files or ():
            top = f.parts[0]
            src = Path(dist.locate_file(top))
            if top not in ("..", "bin") and src.exists() and not (dest / top).exists():
                (dest / top).symlink_to(src)
        for req in dist.requires or ():
            if "extra ==" not in req:
                todo.append(req.split(";")[0].split("[")[0].split("<")[0].split(">")[0].split("=")[0]
                            .split("!")[0].split("~")[0].strip())
    return dest


def _torch_version(py: Path) -> str:
    return _run([py, "-c", "import torch; print(torch.__version__, torch.__file__)"]).stdout


def _venv(wheel: Path) -> Path:
    """A venv with the image's torch and JupyterLab (kept between runs by their versions and the wheel's
    dependencies), and this wheel with the triton extra; the image's torch must be left as it was."""
    import torch

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        requires = sorted(line for line in z.read(meta).decode().splitlines() if line.startswith("Requires-Dist:"))
    jupyterlab = f"jupyterlab=={md.version('jupyterlab')}"
    key = hashlib.sha256("\n".join([*requires, jupyterlab, torch.__version__, sys.version]).encode()).hexdigest()[:12]
    venv = Path(tempfile.gettempdir()) / f"rocmlab-wheel-venv-{key}"
    py = venv / "bin" / "python"
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for old in venv.parent.glob("rocmlab-wheel-venv-*"):   # an older one (other versions): up to 2.4 GB each
        if old != venv and old.is_dir() and not old.is_symlink() and old.stat().st_uid == os.geteuid():
            shutil.rmtree(old, ignore_errors=True)
    if not (venv / ".complete").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        _run([sys.executable, "-m", "venv", venv])
        purelib = _run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
        Path(purelib, "_image_torch.pth").write_text(str(_torch_overlay(venv / "image-torch")) + "\n")
        _run([*pip, jupyterlab], timeout=1200)                   # the environment a learner has
        torch_before = _torch_version(py)
        _run([*pip, f"{wheel}[triton]"], timeout=1200)
        assert _torch_version(py) == torch_before, "installing the wheel replaced the image's torch"
        (venv / ".complete").write_text(torch_before)
    else:
        torch_before = (venv / ".complete").read_text()
        _run([*pip, "--force-reinstall", "--no-deps", wheel], timeout=600)
        assert _torch_version(py) == torch_before, "installing the wheel replaced the image's torch"
    return venv


@pytest.mark.timeout(5400)
def test_the_wheel_from_tracked_files_installs_into_jupyterlab_and_runs_every_lab(tmp_path):
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: the wheel is built from the tracked files")
    src = tmp_path / "src"
    _tracked_copy(src)
    for rel in LEFTOVERS:                                   # a used checkout's leftovers, which must not ship
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("a learner's answer")
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist",
          src], timeout=600)
    wheel = next((tmp_path / "dist").glob("rocmlab-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    shipped_leftovers = [n for n in names if "my-work" in n or ".ipynb_checkpoints" in n]
    assert not shipped_leftovers, shipped_leftovers
    assert not [m for m in MUST_SHIP if m not in names], [m for m in MUST_SHIP if m not in names]
    assert not [n for n in names if n.startswith("tests/")]

    venv = _venv(wheel)
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8",
           "ROCMLAB_HOME": str(home / ".cache" / "rocmlab"), "TMPDIR": str(tmp_path), "ROCMLAB_QUICK": "1"}
    from rocmlab import paths
    if (paths.rocm_root() / ".rocmlab-ready").is_file():     # the offline compiler this machine already has
        env["ROCMLAB_ROCM_ROOT"] = str(paths.rocm_root())
    where = _run([venv / "bin" / "python", "-c", "import rocmlab; print(rocmlab.__file__)"], cwd=home, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout      # the installed wheel, not the checkout
    assert _run([venv / "bin" / "rocmlab", "doctor", "--json"], cwd=home, env=env).stdout.strip().startswith("{")
    assert (venv / "bin" / "jupyter-lab").is_file()                      # the learner's JupyterLab is still there

    labs = home / "labs"
    _run([venv / "bin" / "rocmlab", "labs", labs], cwd=home, env=env)
    copied = {str(p.relative_to(labs)) for p in labs.rglob("*") if p.is_file()}
    assert not [n for n in copied if n.split("/")[-1] in ("conftest.py", "nbval_sanitize.cfg") or "my-work" in n]
    books = sorted(p.name for p in labs.glob("*.ipynb"))
    assert len(books) >= 12, books

    out = tmp_path / "preflight"
    run = subprocess.run([venv / "bin" / "rocmlab", "preflight", "--labs", labs, "--out", out], cwd=home, env=env,
                         capture_output=True, text=True, timeout=5000)
    summary = json.loads((out / "summary.json").read_text())
    table = (out / "summary.md").read_text()
    print(table)                                              # the per-lab result, for the log
    assert sorted(f"{r['lab']}.ipynb" for r in summary["labs"]) == books, table
    failed = [r for r in summary["labs"] if r["status"] != "passed"]
    unexplained = [f"{r['lab']}: {r['error'][:300]}" for r in failed if "is not installed" not in r["error"]]
    assert not unexplained, f"labs failed from the wheel without saying what is missing:\n{table}\n{run.stderr[-2000:]}"
    assert not failed, f"from the wheel (with the triton extra) every lab should pass:\n{table}"
    assert not (labs / "my-work").exists() and not (home / ".cache" / "rocmlab" / "progress.json").exists()
