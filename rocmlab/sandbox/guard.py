"""The whole run's memory: a cgroup where one can be made, else a watchdog; and the fallback's scratch quota.

An rlimit bounds one process; a run's memory is all its processes, its /tmp and its /dev/shm together.
:class:`Guard` gives each run a memory cgroup of its own under :func:`cgroup_parent` (cgroup v2, else v1's memory
hierarchy), else watches its processes' resident memory every :data:`WATCHDOG_INTERVAL_S` and ends the run past
the limit; without bubblewrap's private tmpfs it also watches the scratch folder's size. :func:`memory_isolation`
says which, in the words of :func:`rocmlab.sandbox.isolation`. ``with no_cgroup():`` switches both off (the
control of the memory attacks).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass

from rocmlab.sandbox.processes import kill_group, resident_bytes, run_pids
from rocmlab.sandbox.terms import SandboxError


CGROUP_ROOT = "/sys/fs/cgroup"
#: How often the fallback's watchdog measures a run (its resident memory, its scratch folder).
WATCHDOG_INTERVAL_S = 0.05
_cgroups_off: list[bool] = []          # no_cgroup(): the attack suite's controls


class no_cgroup:
    """``with sandbox.no_cgroup(): ...`` runs without the whole-run memory cgroup and without the fallback's
    watchdog (per-process limits only: the control of the memory attacks). Never used by the grader."""

    def __enter__(self):
        _cgroups_off.append(True)
        return self

    def __exit__(self, *exc):
        _cgroups_off.pop()


def _own_cgroups() -> dict[str, str]:
    """This process's cgroup path per controller ('' for the unified v2 hierarchy)."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                for c in ctrls.split(",") if ctrls else [""]:
                    out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read_int(path: str) -> int:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


@dataclass(frozen=True)
class CgroupParent:
    path: str
    version: int     # 1 (the memory controller's own hierarchy) or 2 (unified)


def _probe_parent(path: str, version: int) -> str:
    """'' when a child cgroup with a memory limit can be made under ``path``, else why not."""
    probe = os.path.join(path, f"rocmlab-probe-{os.getpid()}-{secrets.token_hex(3)}")
    try:
        os.mkdir(probe)
    except OSError as exc:
        return f"cannot make a cgroup under {path} ({exc.strerror})"
    try:
        _write(os.path.join(probe, "memory.max" if version == 2 else "memory.limit_in_bytes"), str(64 << 20))
        return ""
    except OSError as exc:
        return f"cannot set a memory limit under {path} ({exc.strerror})"
    finally:
        with contextlib.suppress(OSError):
            os.rmdir(probe)


_found_parent: list[CgroupParent] = []


def cgroup_parent() -> tuple[CgroupParent | None, str]:
    """Where a memory cgroup per run can be made here: (parent, '') or (None, why not). cgroup v2 (the unified
    hierarchy with the memory controller enabled for our cgroup's children, as systemd's delegation gives),
    else cgroup v1's memory hierarchy; both need write access (root, or a delegated subtree). A parent found is kept
    for the process; a failure is not (a probe that failed once on a busy machine would otherwise leave every later
    run of the process to the weaker watchdog: a loaded test run saw four 96 MB children held under a 160 MiB
    limit)."""
    if _found_parent:
        return _found_parent[0], ""
    parent, why = _find_cgroup_parent()
    if parent is not None:
        _found_parent.append(parent)
    return parent, why


def _find_cgroup_parent() -> tuple[CgroupParent | None, str]:
    own, why = _own_cgroups(), []
    for top in (CGROUP_ROOT, os.path.join(CGROUP_ROOT, "unified")):
        ctrl = os.path.join(top, "cgroup.controllers")
        if os.path.isfile(ctrl):
            parent = top + own.get("", "/").rstrip("/")
            try:
                with open(os.path.join(parent, "cgroup.subtree_control")) as f:
                    enabled = "memory" in f.read().split()
                if not enabled:
                    _write(os.path.join(parent, "cgroup.subtree_control"), "+memory")
            except OSError as exc:
                why.append(f"cgroup v2 at {parent}: memory not delegated ({exc.strerror})")
            else:
                problem = _probe_parent(parent, 2)
                if not problem:
                    return CgroupParent(parent, 2), ""
                why.append("cgroup v2: " + problem)
            break
    v1 = os.path.join(CGROUP_ROOT, "memory")
    if os.path.isfile(os.path.join(v1, "memory.limit_in_bytes")) or os.path.isdir(v1):
        parent = v1 + own.get("memory", "/").rstrip("/")
        problem = _probe_parent(parent, 1)
        if not problem:
            return CgroupParent(parent, 1), ""
        why.append("cgroup v1: " + problem)
    return None, "; ".join(why) or f"no cgroup file system at {CGROUP_ROOT}"


def memory_isolation() -> str:
    """How the whole run's memory is bounded here, in words (part of :func:`isolation`'s description)."""
    parent, why = cgroup_parent()
    if parent is not None:
        return (f"memory: one limit for the whole run (all its processes, /tmp and /dev/shm) in a cgroup "
                f"v{parent.version} of its own")
    return (f"memory: WEAKER, no cgroup can be made here ({why}): an address-space limit per process, and a "
            f"watchdog that ends the run when its processes' resident memory passes the limit (checked every "
            f"{WATCHDOG_INTERVAL_S * 1000:.0f} ms); /tmp and /dev/shm are bounded tmpfs")


class Guard:
    """The whole run's limits that no rlimit gives: its memory (a cgroup of its own, else a watchdog over its
    processes' resident memory) and, in the fallback without bubblewrap, its scratch quota (a watchdog over the
    folder's size). ``start()`` before the run, ``enter()`` in the child (preexec), ``stop()`` after."""

    def __init__(self, memory_bytes: int | None, uid: int | None, scratch: str | None, scratch_bytes: int | None,
                 outputs=()):
        self.memory_bytes, self.uid = memory_bytes, uid
        self.scratch, self.scratch_bytes = scratch, scratch_bytes
        # the quota is for what the run writes: not the files it was given (its binary, its input), and not its
        # output files (each capped by the file-size limit), as with bubblewrap's private tmpfs
        self.outputs = tuple(outputs)
        self.baseline = 0
        if scratch and scratch_bytes:
            self.baseline = self._written()
        self.cgroup: str | None = None
        self.version = 0
        self.memory_exceeded = self.scratch_exceeded = False
        self.peak = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: subprocess.Popen | None = None

    def start(self) -> None:
        if _cgroups_off or not self.memory_bytes:
            return
        parent, _ = cgroup_parent()
        if parent is None:
            return
        path = os.path.join(parent.path, f"rocmlab-run-{os.getpid()}-{secrets.token_hex(4)}")
        try:
            os.mkdir(path)
            if parent.version == 2:
                _write(os.path.join(path, "memory.max"), str(self.memory_bytes))
                with contextlib.suppress(OSError):
                    _write(os.path.join(path, "memory.swap.max"), "0")
            else:
                _write(os.path.join(path, "memory.limit_in_bytes"), str(self.memory_bytes))
                with contextlib.suppress(OSError):      # without swap accounting there is no memsw file
                    _write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(self.memory_bytes))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            raise SandboxError(f"cannot make the run's memory cgroup {path} ({exc.strerror})") from None
        self.cgroup, self.version = path, parent.version

    def enter(self) -> None:
        """In the child, before exec: join the run's cgroup (everything it starts inherits it)."""
        if self.cgroup:
            _write(os.path.join(self.cgroup, "cgroup.procs"), "0")

    def watch(self, proc: subprocess.Popen) -> None:
        """Start the fallback's watchdog (no cgroup: resident memory; no private tmpfs: the scratch's size)."""
        self._proc = proc
        memory = bool(self.memory_bytes and not self.cgroup and not _cgroups_off)
        if not (memory or self.scratch_bytes):
            return
        self._thread = threading.Thread(target=self._watch, args=(proc, memory), daemon=True)
        self._thread.start()

    def _watch(self, proc: subprocess.Popen, memory: bool) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._stop.wait(WATCHDOG_INTERVAL_S):
            resident = resident_bytes(proc.pid, self.uid, page) if memory else 0
            self.peak = max(self.peak, resident)
            if memory and resident > self.memory_bytes:
                self.memory_exceeded = True
            elif self.scratch_bytes and self._written() > self.scratch_bytes:
                self.scratch_exceeded = True
            else:
                continue
            self._kill_all(proc)
            return

    def _written(self) -> int:
        outs = 0
        for o in self.outputs:
            try:
                outs += os.lstat(o).st_blocks * 512
            except OSError:
                pass
        return _folder_bytes(self.scratch) - outs - self.baseline

    def _kill_all(self, proc: subprocess.Popen) -> None:
        kill_group(proc)
        for pid in run_pids(proc.pid, self.uid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        if not self.cgroup:
            return
        self.peak = max(self.peak, self.peak_bytes())
        if self.version == 2:
            events = os.path.join(self.cgroup, "memory.events")
            try:
                with open(events) as f:
                    ev = dict(line.split() for line in f if line.strip())
                self.memory_exceeded = self.memory_exceeded or int(ev.get("oom_kill", 0)) > 0
            except (OSError, ValueError):
                pass
        else:
            try:
                with open(os.path.join(self.cgroup, "memory.oom_control")) as f:
                    ev = dict(line.split() for line in f if line.strip())
                self.memory_exceeded = self.memory_exceeded or int(ev.get("oom_kill", 0)) > 0
            except (OSError, ValueError):
                pass
        for _ in range(40):                      # end what is left in it (nothing, normally), then remove it
            try:
                with open(os.path.join(self.cgroup, "cgroup.procs")) as f:
                    pids = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                pids = []
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            try:
                os.rmdir(self.cgroup)
                break
            except OSError:
                time.sleep(0.05)
        self.cgroup = None

    def peak_bytes(self) -> int:
        """The cgroup's peak memory (0 without one): what the run took of the host."""
        if not self.cgroup:
            return 0
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return _read_int(os.path.join(self.cgroup, name))


def _folder_bytes(folder: str | None, limit_entries: int = 100_000) -> int:
    """Bytes of the files under ``folder`` (allocated blocks, so sparse files count as what they take), links
    not followed; stops counting after ``limit_entries`` entries (then reports the quota as reached)."""
    if not folder:
        return 0
    total, seen, stack = 0, 0, [folder]
    while stack:
        try:
            with os.scandir(stack.pop()) as it:
                for e in it:
                    seen += 1
                    if seen > limit_entries:
                        return 1 << 62
                    st = e.stat(follow_symlinks=False)
                    total += max(st.st_blocks * 512, 0)
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(e.path)
        except OSError:
            continue
    return total
