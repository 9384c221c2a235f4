"""The wheel carries the whole course. From a copy of the repository's tracked files (plus the leftovers of a used
checkout: a learner's my-work/ and notebook checkpoints, which must not ship) the wheel is built, installed into a
fresh venv that holds only a torch (the CPU wheel here) and the wheel's own dependencies with the ``triton`` extra
the set-up page names, and from there, in a temporary home, ``rocmlab labs DEST`` copies the labs and ``rocmlab
preflight`` runs every one of them. Every lab passes, or its error says plainly what is missing and how to install
it (and the other labs still run).

The venv's third-party packages are kept between runs in the temporary folder, under a name made of the wheel's
dependency list, torch's version and Python's, so a second run installs only the new wheel (a fresh venv is made
whenever that list changes); everything else is made anew in this test's temporary folders."""

from __future__ import annotations

import hashlib
import json
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


def _venv(wheel: Path) -> Path:
    """A venv with torch and the wheel's dependencies (kept between runs by their names), and this wheel."""
    import torch

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        requires = sorted(line for line in z.read(meta).decode().splitlines() if line.startswith("Requires-Dist:"))
    torch_pin = f"torch=={torch.__version__.split('+')[0]}"
    key = hashlib.sha256("\n".join([*requires, torch_pin, sys.version]).encode()).hexdigest()[:12]
    venv = Path(tempfile.gettempdir()) / f"rocmlab-wheel-venv-{key}"
    py = venv / "bin" / "python"
    if not (venv / ".complete").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        _run([sys.executable, "-m", "venv", venv])
        _run([py, "-m", "pip", "install", "-q", torch_pin], timeout=1200)            # only a torch, first
        _run([py, "-m", "pip", "install", "-q", f"{wheel}[triton]"], timeout=1200)
        (venv / ".complete").write_text(torch_pin)
    else:
        _run([py, "-m", "pip", "install", "-q", "--force-reinstall", "--no-deps", wheel], timeout=600)
    return venv


@pytest.mark.timeout(5400)
def test_the_wheel_from_tracked_files_installs_and_runs_every_lab(tmp_path):
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
           "ROCMLAB_HOME": str(home / ".cache" / "rocmlab"), "TMPDIR": str(tmp_path)}
    from rocmlab import paths
    if (paths.rocm_root() / ".rocmlab-ready").is_file():     # the offline compiler this machine already has
        env["ROCMLAB_ROCM_ROOT"] = str(paths.rocm_root())
    where = _run([venv / "bin" / "python", "-c", "import rocmlab; print(rocmlab.__file__)"], cwd=home, env=env)
    assert where.stdout.strip().startswith(str(venv)), where.stdout      # the installed wheel, not the checkout

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
