"""sandbox.processes.sweep_stale: the one sweep of per-process folders (the compiler driver's and the grader's work
folders, the fallback's views) removes those of processes that are gone and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys

from rocmlab.sandbox.processes import sweep_stale


def _gone_pid() -> int:
    """The pid of a process that has ended (and been reaped)."""
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_sweep_removes_the_folders_of_gone_processes_only(tmp_path):
    gone, alive = _gone_pid(), os.getpid()
    (tmp_path / f"w-{gone}-a").mkdir()
    (tmp_path / f"w-{gone}-b" / "inner").mkdir(parents=True)
    (tmp_path / f"w-{alive}-c").mkdir()                   # a live process's folder: kept
    (tmp_path / f"x-{gone}-d").mkdir()                    # another prefix: kept
    (tmp_path / f"w-{gone}-file").write_text("")          # not a folder: kept
    assert sweep_stale(tmp_path, "w-") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"w-{alive}-c", f"x-{gone}-d", f"w-{gone}-file"])


def test_control_without_a_prefix_every_gone_pid_folder_goes(tmp_path):
    gone = _gone_pid()
    (tmp_path / f"{gone}-view").mkdir()
    (tmp_path / f"{os.getpid()}-view").mkdir()
    assert sweep_stale(tmp_path) == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{os.getpid()}-view"]
    assert sweep_stale(tmp_path / "missing") == 0         # a missing folder: nothing to do, no error
