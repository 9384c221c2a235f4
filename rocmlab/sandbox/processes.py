"""A run's processes, as /proc shows them, and their end.

Which processes are the run's (:func:`run_pids`: its tree, and as root every process of its uid, so daemons that
left the tree count too), their resident memory (the fallback's memory watchdog, :mod:`rocmlab.sandbox.guard`),
their CPU time and the scheduler's account of their threads at a time-out, beside the machine's busy time (was
the run hung, or starved by the machine: :func:`rocmlab.sandbox.starved`); and :func:`kill_group`, which ends a
run's process group; :func:`sweep_stale`, which removes the per-process folders of processes that are gone.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess


def run_pids(root_pid: int, uid: int | None) -> list[int]:
    """The run's processes: ``root_pid``'s descendants, and (as root, where each run has a uid of its own) every
    process of the run's uid."""
    parents: dict[int, int] = {}
    uids: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat_line = f.read()
            parents[int(d)] = int(stat_line[stat_line.rindex(b")") + 2:].split()[1])
            if uid is not None:
                uids[int(d)] = os.stat(f"/proc/{d}").st_uid
        except (OSError, ValueError, IndexError):
            continue
    out = set()
    for pid in parents:
        p, hops = pid, 0
        while p > 1 and hops < 64:
            if p == root_pid:
                out.add(pid)
                break
            p, hops = parents.get(p, 0), hops + 1
        if uid is not None and uid != 0 and uids.get(pid) == uid:
            out.add(pid)
    return sorted(out)


def resident_bytes(root_pid: int, uid: int | None, page: int) -> int:
    total = 0
    for pid in run_pids(root_pid, uid):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total


def machine_busy_s(cpus=None) -> float | None:
    """CPU seconds spent busy since boot (user, nice, system, irq, softirq and steal time, from /proc/stat) by the
    CPUs numbered ``cpus`` (all of them by default); None where unknown."""
    total = 0
    try:
        with open("/proc/stat") as f:
            for line in f:
                name, *fields = line.split()
                if not name.startswith("cpu"):
                    break
                if (cpus is None and name != "cpu") or (cpus is not None and (name == "cpu"
                                                                              or int(name[3:]) not in cpus)):
                    continue
                user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
                total += user + nice + system + irq + softirq + steal
    except (OSError, ValueError):
        return None
    return total / os.sysconf("SC_CLK_TCK")


def run_cpu_s(pid: int, uid: int | None = None) -> float:
    """CPU seconds of the run rooted at ``pid`` (its live processes, with what the ones they reaped used, and, as
    root, every process of the run's own ``uid``: daemons that left the tree), from /proc/PID/stat."""
    total = 0
    for p in run_pids(pid, uid):
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])       # utime, stime, cutime, cstime
        except (OSError, ValueError, IndexError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def tree_cpu_account(pid: int) -> tuple[float, float] | None:
    """(seconds on a CPU, seconds runnable but waiting for a CPU) summed over the live threads of ``pid`` and of
    every process below it (bubblewrap's children included: /proc shows them with this namespace's pids), from
    ``/proc/PID/task/TID/schedstat``. None where the kernel keeps no such account (or ``pid`` is gone)."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        children.setdefault(int(fields[1]), []).append(int(d))     # fields[1]: the parent's pid
    run_ns = wait_ns = 0
    seen = False
    todo = [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            tids = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{p}/task/{tid}/schedstat") as f:
                    ran, waited = f.read().split()[:2]
            except (OSError, ValueError):
                continue
            run_ns += int(ran)
            wait_ns += int(waited)
            seen = True
    return (run_ns / 1e9, wait_ns / 1e9) if seen else None


def kill_group(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def sweep_stale(folder, prefix: str = "") -> int:
    """Remove ``folder/PREFIX{pid}-*`` folders whose process is gone (a worker killed by Ctrl-C or SIGKILL
    before its cleanup ran: the compiler driver's and the grader's work folders, the fallback's views). A live
    process's folders are never touched. Returns how many were removed."""
    n = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for e in entries:
        m = re.match(re.escape(prefix) + r"(\d+)-", e.name)
        if not m or not e.is_dir(follow_symlinks=False):
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue                          # alive (or another user's): leave it
        except ProcessLookupError:
            pass
        except (PermissionError, OverflowError):
            continue
        shutil.rmtree(e.path, ignore_errors=True)
        n += 1
    return n
