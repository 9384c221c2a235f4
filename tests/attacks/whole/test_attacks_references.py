"""Issue 56, part B.1: nothing a learner can read holds a reference. On a hub a learner ran ``git show
HEAD:<path>/solution.hip`` in the checkout the servers run (every solution ever committed), and copied the unlocked
task references (Lab 03's fix) and the speed ladders' kernels (each with its switches off is a puzzle's plain
solution). The lock now takes all of them: the reference modules (the ladders' kernels and the lab tasks'
references among them) and the checkout's ``.git`` and ``tests/`` folders, on the hub (root-only) and in the
Kubernetes image (root and the grading group).

Each attack is staged as an unprivileged uid on a copy of the package inside a checkout of its own (a real git
repository with a committed solution), so the checkout the suite runs from is never locked. Controls: before the
lock the same uid reads all of it (the attack as it was); after it, root (the grader) still does, and the rest of
the course (task modules, checkers, the toolkit) stays readable."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import rocmlab
from rocmlab.workshop import hubconfig, references as R
from tests.helpers.uid_child import run_as

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("git") is None,
                                reason="locking needs root and acting as a learner's uid; the attack needs git")

LADDERS = ("course/labs/lab09_attention_on_mi300x/ladder_kernels.py", "course/labs/lab10_fp8_gemm/ladder_kernels.py")
TASK_REFERENCES = ("course/labs/lab03_pytorch_on_rocm/reference.py", "course/labs/lab05_quickreduce_tuning/reference.py",
                   "course/labs/lab07_matrix_cores/reference.py")
SOLUTION = "rocmlab/exercises/vector-add/solution.hip"


def _git(checkout: Path, *args: str) -> subprocess.CompletedProcess:
    # safe.directory: a learner's git refuses another user's repository by default; the attack turns that off
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", str(checkout), *args], capture_output=True,
                          text=True, timeout=60, env={"PATH": os.defpath, "HOME": "/nonexistent",
                                                      "GIT_CONFIG_NOSYSTEM": "1"})


@pytest.fixture
def checkout():
    """A checkout every uid can enter: pyproject.toml, a copy of the package, tests/ with a right answer, and
    .git with the solution committed."""
    base = Path(tempfile.mkdtemp(prefix="rocmlab-refs-whole-"))
    co = base / "course"
    shutil.copytree(Path(rocmlab.__file__).parent, co / "rocmlab",
                    ignore=shutil.ignore_patterns("__pycache__", "_datasets", "_labs"))
    (co / "pyproject.toml").write_text("[project]\nname = 'rocmlab'\n")
    (co / "tests").mkdir()
    (co / "tests" / "test_answers.py").write_text(f"RIGHT = 'the answer {random.random()}'\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": os.defpath, "HOME": str(base)}
    for cmd in (["init", "-q"], ["add", SOLUTION], ["commit", "-q", "-m", "a solution"]):
        subprocess.run(["git", "-C", str(co), *cmd], check=True, capture_output=True, env=env, timeout=60)
    for d, _dirs, files in os.walk(base):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    yield co
    shutil.rmtree(base, ignore_errors=True)


def _read(path: Path):
    def fn() -> str:
        try:
            return f"READ {len(path.read_bytes())}"
        except PermissionError:
            return "DENIED"
    return fn


def _git_show(co: Path):
    def fn() -> str:
        r = _git(co, "show", f"HEAD:{SOLUTION}")
        return "SHOWN" if r.returncode == 0 and "__global__" in r.stdout else f"REFUSED {r.stderr.strip()[:200]}"
    return fn


def _targets(co: Path) -> list[Path]:
    pkg = co / "rocmlab"
    return [pkg / p for p in (*LADDERS, *TASK_REFERENCES)] + [co / "tests" / "test_answers.py"]


def test_the_hub_lock_takes_the_history_the_tests_the_ladders_and_the_task_references(checkout):
    uid = random.randint(20000, 29999)
    assert run_as(uid, _git_show(checkout)) == "SHOWN"                          # before: the attack as it was
    assert all(run_as(uid, _read(p)).startswith("READ") for p in _targets(checkout))
    python = checkout.parent / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={checkout} exec {sys.executable} -S "$@"\n')
    os.chmod(python, 0o755)
    locked, why = hubconfig.lock_server_references(str(python))
    assert why == "" and locked, why
    assert {checkout / ".git", checkout / "tests"} <= set(locked)
    assert (checkout / ".git").stat().st_mode & 0o777 == 0o700
    shown = run_as(uid, _git_show(checkout))
    assert shown.startswith("REFUSED"), shown                                   # after: no history
    for p in _targets(checkout):
        assert run_as(uid, _read(p)) == "DENIED", p
        assert p.read_bytes()                                                   # control: root (the grader) reads it
    assert _git(checkout, "show", f"HEAD:{SOLUTION}").returncode == 0           # control: root's git still works
    for p in ("course/labs/lab03_pytorch_on_rocm/task.py", "course/labs/lab05_quickreduce_tuning/task.py",
              "course/labs/lab07_matrix_cores/task.py",
              "course/puzzles.py", "hip/occupancy.py",
              "course/labs/lab09_attention_on_mi300x/ladder.py"):
        assert run_as(uid, _read(checkout / "rocmlab" / p)).startswith("READ"), p   # control: the course stays


def test_the_image_lock_takes_them_for_every_pod_but_the_grading_one(checkout):
    gid = R.GRADER_GID + random.randrange(1, 1000)
    r = subprocess.run([sys.executable, "-m", "rocmlab.cli", "references", "lock", "--group", str(gid),
                        "--package", str(checkout / "rocmlab")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "and the checkout's .git, tests" in r.stdout, r.stdout + r.stderr
    for d in (checkout / ".git", checkout / "tests"):
        assert d.stat().st_mode & 0o777 == 0o700, d                            # no grade reads them: owner only
    assert run_as(1000, _git_show(checkout)).startswith("REFUSED")              # a learner's pod: uid 1000
    for p in _targets(checkout):
        assert run_as(1000, _read(p)) == "DENIED", p
        if "tests" not in p.relative_to(checkout).parts:                      # the grader never reads the tests
            assert run_as(1000, _read(p), [gid]).startswith("READ"), p          # control: the grading pod's group


def test_a_locked_folder_keeps_its_owner_and_shuts_out_everyone_else():
    base = Path(tempfile.mkdtemp(prefix="rocmlab-refs-owner-"))
    try:
        os.chmod(base, 0o755)
        owner, other = random.sample(range(20000, 29999), 2)
        d = base / ".git"
        d.mkdir()
        (d / "HEAD").write_text("ref: refs/heads/main\n")
        os.chmod(d, 0o755)
        os.chmod(d / "HEAD", 0o644)
        os.chown(d, owner, owner)
        assert run_as(other, _read(d / "HEAD")).startswith("READ")              # before: anyone reads it
        assert R.lock([d]) == [d]
        assert (d.stat().st_uid, d.stat().st_mode & 0o777) == (owner, 0o700)
        assert run_as(other, _read(d / "HEAD")) == "DENIED"
        assert run_as(owner, _read(d / "HEAD")).startswith("READ")              # control: the owner still does
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_installed_package_has_no_checkout_folders_to_lock(tmp_path):
    pkg = tmp_path / "site-packages" / "rocmlab"
    pkg.mkdir(parents=True)
    (tmp_path / "site-packages" / "tests").mkdir()                               # not a checkout: no pyproject.toml
    assert R.checkout_dirs(pkg) == []
    (tmp_path / "site-packages" / "pyproject.toml").write_text("")
    assert R.checkout_dirs(pkg) == [tmp_path / "site-packages" / "tests"]        # control: a checkout's are found
