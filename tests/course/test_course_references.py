"""Issue 38 point 4: a workshop learner's environment holds no reference answers. With the workshop setting
(ROCMLAB_REFERENCES=off) a learner's process cannot import a reference kernel (a clear message), and with the
files locked (0600, root) a learner's uid cannot read a solution file (PermissionError); the controls: the same
import without the setting (the instructor's server) loads the reference, and root still reads the locked file."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rocmlab.workshop import references as R
from tests.helpers.uid_child import run_as

IMPORT = ("from rocmlab.course import puzzles as P; P.setup(); import rocmlab.course.labs.lab08_mi300x_package.kernels as K; "
          "print('LOADED', K.remap_kernel is not None)")


def _run(env_extra: dict, tmp_path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != R.ENV}
    env.update(TRITON_INTERPRET="1", ROCMLAB_HOME=str(tmp_path), **env_extra)
    return subprocess.run([sys.executable, "-c", IMPORT], env=env, capture_output=True, text=True, timeout=120)


def test_a_learner_process_cannot_import_a_reference_kernel_and_the_instructor_can(tmp_path):
    learner = _run({R.ENV: random.choice(["off", "OFF", " off "])}, tmp_path)
    assert learner.returncode != 0 and "LOADED" not in learner.stdout
    assert "ReferencesWithheld" in learner.stderr and "references are held by the instructor on this hub" in learner.stderr
    instructor = _run({}, tmp_path)                              # control: no setting, the grader's process
    assert instructor.returncode == 0 and "LOADED True" in instructor.stdout, instructor.stderr


def test_reference_files_name_every_kernel_module_and_solution():
    files = R.reference_files()
    package = Path(R.__file__).resolve().parents[1]
    modules = {package.joinpath(*m.split(".")[1:]).with_suffix(".py") for m in R.KERNEL_MODULES}
    assert len(modules) == len(R.KERNEL_MODULES) >= 4 and all(p.is_file() for p in modules)
    assert modules <= set(files)
    assert any(p.name.startswith("solution.") and p.parent.name == "vector-add" for p in files)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to lock a file and act as a learner's uid")
def test_a_locked_solution_is_unreadable_to_a_learner_uid_and_readable_to_root():
    base = Path(tempfile.mkdtemp(prefix="rocmlab-refs-"))
    os.chmod(base, 0o755)
    try:
        secret = f"__global__ void k() {{}} // {random.random()}\n"
        locked, open_ = base / "solution.hip", base / "open.hip"
        for p in (locked, open_):
            p.write_text(secret)
            os.chmod(p, 0o644)
        assert R.lock([locked]) == [locked]
        assert (locked.stat().st_mode & 0o777) == 0o600
        assert _as_uid(20001, locked) == "DENIED"
        assert _as_uid(20001, open_) == secret                    # control: an unlocked file is readable
        assert locked.read_text() == secret                       # control: root (the grader) reads it
        link = base / "link.hip"
        link.symlink_to(open_)
        with pytest.raises(OSError):
            R.lock([link])                                        # a link is refused, never followed
        assert (open_.stat().st_mode & 0o777) == 0o644
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_uid(uid: int, path: Path, groups=()) -> str:
    def read() -> str:
        try:
            return path.read_text()
        except PermissionError:
            return "DENIED"

    return run_as(uid, read, groups)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to lock files and act as a pod's uid")
def test_the_image_lock_lets_the_grading_group_read_and_no_learner():
    """What the workshop image's build runs (Kubernetes: every pod is uid 1000; the grading pod alone has group
    GRADER_GID), on a copy of the package: every reference file and its compiled copy root:GID 0640."""
    package = Path(R.__file__).resolve().parents[1]
    base = Path(tempfile.mkdtemp(prefix="rocmlab-refs-"))     # a uid-1000 child must reach it (not pytest's 0700)
    os.chmod(base, 0o755)
    copy = base / "rocmlab"
    shutil.copytree(package, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", "_datasets", "_labs"))
    for d in [copy, *copy.rglob("*")]:
        if not d.is_symlink():
            os.chmod(d, 0o755 if d.is_dir() else 0o644)
    try:
        _lock_and_check(copy)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _lock_and_check(copy: Path) -> None:
    gid = R.GRADER_GID + random.randrange(1, 1000)
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "references", "lock", "--group", str(gid),
                        "--package", str(copy)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    files = R.reference_files(copy)
    assert f"locked {len(files)} reference files" in r.stdout
    assert any(p.suffix == ".pyc" for p in files)                # the compiled copies were written, then locked
    for p in files:
        st = p.stat()
        assert (st.st_uid, st.st_gid, st.st_mode & 0o777) == (0, gid, 0o640), p
    solution = next(p for p in files if p.name.startswith("solution."))
    assert _as_uid(1000, solution) == "DENIED"                   # a learner's pod: uid 1000, no group
    assert _as_uid(1000, solution, [gid]) == solution.read_text()  # the grading pod: uid 1000 + the group
    assert _as_uid(1000, copy / "settings.py") != "DENIED"       # control: the rest of the package stays readable


def test_the_lock_command_refuses_a_folder_that_is_not_the_package(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "references", "lock", "--package", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a rocmlab package folder" in r.stderr
    assert "list" in subprocess.run([sys.executable, "-m", "rocmlab.cli", "references", "--help"],
                                    capture_output=True, text=True, timeout=60).stdout


def test_the_command_lives_in_commands_and_names_the_toolkits_group():
    """`rocmlab references` (rocmlab.commands.references) writes the grading group in its help without importing
    the toolkit: the same number; the toolkit keeps functions only."""
    from rocmlab.commands import references as cmd

    assert cmd.GRADER_GID == R.GRADER_GID
    assert not hasattr(R, "main")


REGRADE = """
import os, random
from rocmlab.course import puzzles as P; P.setup()
from rocmlab.grader import items
right = '''import triton, triton.language as tl
@triton.jit
def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
    o = tl.arange(0, B0)
    tl.store(z_ptr + o, tl.load(x_ptr + o, mask=o < N0) + 10, mask=o < N0)
'''
it = items.get('06-triton-on-amd/add-constant')
seed = random.randrange(10**6)
good = it.regrade(right, seed, 60)
bad = it.regrade(right.replace('+ 10', '+ 9'), seed, 60)
print('REGRADE', good.earned, bad.earned)
"""


def test_the_instructors_regrade_works_and_a_learner_self_check_needs_no_reference(tmp_path):
    """The re-grade of a handed-in puzzle needs no reference kernel: it gives full marks to a right answer and
    none to a wrong one (control) even with the setting on, so the instructor's grader (which runs without it)
    and a learner's own self-check (expected values from the checker's torch reference) both work."""
    env = {k: v for k, v in os.environ.items() if k != R.ENV}
    env.update(TRITON_INTERPRET="1", ROCMLAB_HOME=str(tmp_path), **{R.ENV: "off"})
    out = subprocess.run([sys.executable, "-c", REGRADE], env=env, capture_output=True, text=True, timeout=200)
    assert out.returncode == 0 and "REGRADE 1.0 0.0" in out.stdout, out.stdout + out.stderr
