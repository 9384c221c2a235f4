"""The session's one wheel and the environment it is installed into, as a learner's would be.

The wheel is built from a copy of the repository's tracked files, with the leftovers of a used checkout planted in
the copy (a learner's my-work/ and notebook checkpoints, which must not ship). It is installed into a venv that, like
a ROCm PyTorch image, already holds a torch (this environment's, shown to it by a ``.pth`` file) and JupyterLab; the
wheel brings its own dependencies with the ``triton`` extra and must leave the image's torch as it was.

One wheel per test session, shared by every pytest-xdist worker (a lock; the first to ask builds, the others wait
and read the result): tests/project/whole/test_wheel.py checks what it holds and what it installs, and the session's
one run of each lab (tests/helpers/views.py ``executed``) runs in its venv, so the labs run once, from the wheel.
The venv's third-party packages are kept between sessions in the temporary folder, under a name made of the wheel's
dependency list, JupyterLab's, torch's and Python's versions and torch's folder, so a later session installs only
the new wheel."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: what a used checkout holds that is not course material
LEFTOVERS = ("labs/my-work/lab01/wave_sum.hip", "labs/exercises/my-work/vector-add/vector_add.hip",
             "labs/.ipynb_checkpoints/00-setup-checkpoint.ipynb", "rocmlab/.ipynb_checkpoints/x-checkpoint.py")


class WheelFailed(RuntimeError):
    """This session's wheel or its venv could not be made (in this process or in another worker)."""


def run(cmd, **kw) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise WheelFailed(f"{' '.join(map(str, cmd))} exited {r.returncode}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


def _tracked_copy(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def can_build() -> bool:
    """The wheel is built from the tracked files: this must be a git checkout that git reads (else the labs run
    from the checkout, and the wheel test is skipped with the reason)."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        return False
    listed = subprocess.run(["git", "ls-files", "--error-unmatch", "pyproject.toml"], cwd=ROOT, capture_output=True)
    return listed.returncode == 0


def build_wheel(folder: Path) -> Path:
    """The wheel of the tracked files (with :data:`LEFTOVERS` planted in the copy), built into ``folder/dist``."""
    src = folder / "src"
    shutil.rmtree(src, ignore_errors=True)
    shutil.rmtree(folder / "dist", ignore_errors=True)
    _tracked_copy(src)
    for rel in LEFTOVERS:                                   # a used checkout's leftovers, which must not ship
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("a learner's answer")
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", folder / "dist", src],
        timeout=600)
    shutil.rmtree(src, ignore_errors=True)
    return next((folder / "dist").glob("rocmlab-*.whl"))


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


def torch_version(py: Path) -> str:
    return run([py, "-c", "import torch; print(torch.__version__, torch.__file__)"]).stdout


def install(wheel: Path) -> Path:
    """A venv with the image's torch and JupyterLab (kept between sessions by their versions and the wheel's
    dependencies), and this wheel with the triton extra; the image's torch must be left as it was."""
    import torch

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        requires = sorted(line for line in z.read(meta).decode().splitlines() if line.startswith("Requires-Dist:"))
    jupyterlab = f"jupyterlab=={md.version('jupyterlab')}"
    # torch's folder too: the overlay links into this environment (another checkout's venv would link to its own)
    key = hashlib.sha256("\n".join([*requires, jupyterlab, torch.__version__, torch.__file__, sys.version]).encode()
                         ).hexdigest()[:12]
    venv = Path(tempfile.gettempdir()) / f"rocmlab-wheel-venv-{key}"
    py = venv / "bin" / "python"
    pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    for old in venv.parent.glob("rocmlab-wheel-venv-*"):   # an older one (other versions): up to 2.4 GB each
        if old != venv and old.is_dir() and not old.is_symlink() and old.stat().st_uid == os.geteuid():
            shutil.rmtree(old, ignore_errors=True)
    if not (venv / ".complete").is_file():
        shutil.rmtree(venv, ignore_errors=True)
        run([sys.executable, "-m", "venv", venv])
        purelib = run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
        Path(purelib, "_image_torch.pth").write_text(str(_torch_overlay(venv / "image-torch")) + "\n")
        run([*pip, jupyterlab], timeout=1200)                    # the environment a learner has
        torch_before = torch_version(py)
        run([*pip, f"{wheel}[triton]"], timeout=1200)
        if torch_version(py) != torch_before:
            raise WheelFailed("installing the wheel replaced the image's torch")
        (venv / ".complete").write_text(torch_before)
    else:
        torch_before = (venv / ".complete").read_text()
        run([*pip, "--force-reinstall", "--no-deps", wheel], timeout=600)
        if torch_version(py) != torch_before:
            raise WheelFailed("installing the wheel replaced the image's torch")
    return venv


def folder() -> Path:
    return Path(os.environ.get("ROCMLAB_TEST_ARTIFACTS", ROOT / "test-artifacts")) / "wheel"


_MADE: dict[str, tuple[Path, Path] | BaseException] = {}


def session_wheel(session: str) -> tuple[Path, Path]:
    """(the wheel, the venv it is installed in), made once per test session ``session`` across pytest-xdist
    workers. A failure is raised again for whoever asks next, in any worker."""
    if "made" not in _MADE:
        where = folder()
        where.mkdir(parents=True, exist_ok=True)
        status = where / "status"
        with open(where / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                run_id, wheel, venv, *why = status.read_text().split("\n")
            except (FileNotFoundError, ValueError):
                run_id, wheel, venv, why = "", "", "", []
            if run_id == session:
                _MADE["made"] = (Path(wheel), Path(venv)) if not why else WheelFailed("\n".join(why))
            else:
                try:
                    built = build_wheel(where)
                    _MADE["made"] = (built, install(built))
                    status.write_text(f"{session}\n{built}\n{_MADE['made'][1]}")
                except BaseException as exc:    # noqa: BLE001 - kept and raised again for the next asker
                    _MADE["made"] = exc
                    status.write_text(f"{session}\n\n\n{type(exc).__name__}: {exc}"[:20000])
    made = _MADE["made"]
    if isinstance(made, BaseException):
        raise made
    return made


#: Run by the venv's Python: papermill there, so the notebook's kernel is the venv's (``python3``, resolved with the
#: venv's bin/ first on PATH); it prints the kernel's command for the record.
_DRIVER = r"""
import json, shutil, sys
import papermill
from jupyter_client.kernelspec import KernelSpecManager
argv = KernelSpecManager().get_kernel_spec("python3").argv
print("KERNEL " + json.dumps([shutil.which(argv[0]) or argv[0], *argv[1:]]), flush=True)
src, dest, cwd, timeout_s = sys.argv[1:5]
papermill.execute_notebook(src, dest, parameters={"quick": True}, cwd=cwd, kernel_name="python3",
                           execution_timeout=int(timeout_s), progress_bar=False, log_output=False)
"""


def execute_in_venv(venv: Path, src: Path, dest: Path, timeout_s: int = 600) -> Path:
    """``src`` run headless (papermill, quick sizes) into ``dest`` by the venv's Python and kernel; the kernel's
    command is written beside it (``dest.kernel``). Raises with papermill's last lines if a cell failed."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    env["ROCMLAB_QUICK"] = "1"
    r = subprocess.run([str(venv / "bin" / "python"), "-c", _DRIVER, str(src), str(dest), str(dest.parent),
                        str(timeout_s)], cwd=dest.parent, env=env, capture_output=True, text=True, timeout=3600)
    kernel = [ln[len("KERNEL "):] for ln in r.stdout.splitlines() if ln.startswith("KERNEL ")]
    dest.with_name(dest.name + ".kernel").write_text(kernel[0] if kernel else "")
    if r.returncode != 0:
        tail = r.stderr.strip().splitlines()[-25:]
        raise RuntimeError(f"{src.name} failed from the installed wheel ({venv}):\n" + "\n".join(tail))
    return dest
