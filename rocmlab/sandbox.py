"""The one runner for untrusted or long programs: isolation, limits, and a clean stop.

``run(cmd, limits=Limits(...), scratch=DIR, ...)`` runs a program through bubblewrap:

- as an unprivileged user (uid/gid 65534 in a user namespace; when rocmlab itself runs as root,
  bubblewrap mounts the sandbox and ``setpriv`` drops to a uid of the run's own, with no passwd entry and
  gid 65534, before the program starts, so file access never happens as root, and one run's processes
  never count against another's process limit);
- on a read-only system: ``root="/"`` binds only the system folders a program needs
  (/usr /bin /sbin /lib* /etc /opt), never /root, /home, /tmp of the host or a rocmlab checkout;
  another ``root`` (the offline ROCm root file system) becomes ``/`` read-only;
- with ``scratch`` bound read-write at its own path, the only writable place besides a private /tmp;
- without network, in its own pid, ipc and uts namespaces: ending the sandbox ends every process in
  it, ``setsid()`` daemons included;
- with limits on wall time, CPU time, address space, processes, file size and output (stdout and
  stderr are drained concurrently and capped), and one memory limit for the whole run (all its processes,
  its /tmp and /dev/shm): a cgroup of its own where one can be made (:func:`cgroup_parent`), else a watchdog
  over its processes' resident memory, named in :func:`isolation` (:func:`memory_isolation`);
- with bounded tmpfs for /tmp and /dev/shm, and, with ``Limits.scratch_bytes``, a private tmpfs scratch of
  that size into which only the named ``outputs`` are bound writable (the host folder is never handed over);
- with a clean environment (only ``env``, a default PATH and HOME=/tmp);
- with the GPU device nodes only when ``gpu=True``.

Where bubblewrap can't run (no user namespaces in some containers) the runner falls back to the
strongest isolation left and says which: :func:`isolation` names it with the reason and the fix,
every :class:`Completed` carries it in ``.isolation``, and ``rocmlab doctor`` shows it. It never
falls back silently. ``ROCMLAB_SANDBOX=no-bwrap`` forces the fallback (to test it).

The fallback still enters another ``root`` (the offline ROCm root), in the way :func:`root_entry` names: as root
with ``chroot`` and the uid drop (CAP_SYS_CHROOT is in Docker's default set), as an ordinary user with PRoot (a
ptrace-based user-space chroot, Debian/Ubuntu package ``proot``). With no bind mounts, what the run reads (its
``ro_binds``) is shown to it through a *view* (:class:`_View`): a folder of its own, readable by the run's uid,
holding hard links (or readable copies) of those paths; the command's arguments name the view, and its output
names the host paths again. The same view shows a run as root on the host system the folders its dropped uid
could not reach (a checkout or cache under a 0700 ``/root``).

Ctrl-C (KeyboardInterrupt) or SIGTERM in the caller ends everything in the sandbox within
``settings.SANDBOX_KILL_WAIT_S`` and re-raises.

A time limit presumes the program had the CPU. When a run reaches it, the scheduler's own account of the run's
threads (``/proc/PID/task/TID/schedstat``: time on a CPU, time runnable but waiting for one) is read before the run
is ended: a run the machine starved (:attr:`Completed.starved`) is the machine's fault, which graders never score
(:func:`machine_faults` collects such faults for a re-grade, whatever its caller caught).
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import hashlib
import math
import os
import re
import pwd
import resource
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from functools import cache

from rocmlab import settings

#: Top-level folders of the host bound (read-only) when ``root="/"``: what a program needs, nothing else.
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "opt")
#: What a compiler or an interpreter needs of a root's ``/etc`` (:func:`run`'s ``etc``): the loader's files, the
#: alternatives' links (``/usr/bin/c++`` and the like) and the distribution's name (a driver script may ask it;
#: ``/usr/lib`` holds it too). Nothing of the machine's users, names or settings, which learner code could otherwise
#: probe (``__has_include("/etc/passwd")``), include into a diagnostic, or read and hand back in a re-grade.
TOOL_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "os-release", "lsb-release")
#: Top-level folders of another root file system that are NOT bound (the sandbox makes its own).
ROOT_SKIPPED = ("proc", "sys", "dev", "tmp", "run", "home", "root", "mnt", "media", "lost+found")
#: GPU device nodes, bound only for ``gpu=True``.
GPU_NODES = ("/dev/kfd", "/dev/dri", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
             "/dev/nvidia-modeset", "/dev/nvidia[0-9]*", "/dev/nvidia-caps")

BWRAP = "bubblewrap"     # Isolation.level values, strongest first
SETPRIV = "setpriv"
RLIMITS = "rlimits"
NONE = "none"

CHROOT = "chroot"        # root_entry() values: how another root file system is entered without bubblewrap
PROOT = "proot"
PROOT_FIX = "install PRoot (Debian/Ubuntu: `apt-get install proot`), then check with `rocmlab doctor`"
#: Where the chroot fallback puts each run's view inside the root file system (made by root, 0711).
ROOT_VIEWS = "run/rocmlab"
#: What one run's view may copy (files that cannot be hard-linked): more is refused with a message.
VIEW_COPY_BYTES = 1 << 30
VIEW_ENTRIES = 50_000

NO_USERNS_FIX = ("let bubblewrap create namespaces: allow unprivileged user namespaces "
                 "(`sysctl -w kernel.unprivileged_userns_clone=1` and `user.max_user_namespaces=15000`; "
                 "in Docker run with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`, "
                 "or run the grader as root with CAP_SYS_ADMIN), then check with `rocmlab doctor`")


class SandboxError(RuntimeError):
    """The sandbox itself could not start (not the program's fault)."""


#: The words every "the machine was too busy" verdict carries (:meth:`Completed.explain`, the grader's static
#: analysis): :func:`too_busy` finds them in a report's error.
TOO_BUSY = "the machine was too busy"


def too_busy(text: str) -> bool:
    """True when ``text`` (a report's error) says a busy machine stopped the work: run it again later."""
    return TOO_BUSY in (text or "")


class MachineBusy(SandboxError):
    """A run reached its time limit because the machine starved it (:attr:`Completed.starved`): the machine's
    fault, not the program's. Raised by graders, never by :func:`run` (which returns what happened)."""


class Terminated(SystemExit):
    """SIGTERM arrived while a sandboxed program ran: everything in the sandbox was ended."""

    def __init__(self):
        super().__init__(128 + signal.SIGTERM)


@dataclass(frozen=True)
class Limits:
    """What a sandboxed program may use. ``None`` means no limit (``memory_bytes=None`` for GPU runtimes,
    which reserve large virtual ranges). ``cpu_s=None``: ``settings.SANDBOX_CPU_PER_WALL`` x ``wall_s``."""
    wall_s: float = settings.RUN_TIME_LIMIT_S
    cpu_s: float | None = None
    memory_bytes: int | None = settings.RUN_MEMORY_BYTES
    processes: int | None = settings.RUN_PROCESS_LIMIT
    file_bytes: int | None = settings.RUN_FILE_BYTES
    output_bytes: int = settings.RUN_OUTPUT_BYTES
    #: the run's private scratch: a tmpfs of this size (None: the scratch folder itself, on the host's disk)
    scratch_bytes: int | None = None

    def __post_init__(self):
        settings.time_limit(self.wall_s, what="wall time limit")
        if self.cpu_s is not None:
            settings.time_limit(self.cpu_s, what="CPU time limit")
        for name in ("memory_bytes", "processes", "file_bytes", "scratch_bytes"):
            v = getattr(self, name)
            if v is not None and (not isinstance(v, int) or v <= 0):
                raise ValueError(f"Limits.{name}={v!r}: give a whole number above 0, or None for no limit")
        if not isinstance(self.output_bytes, int) or self.output_bytes < 0:
            raise ValueError(f"Limits.output_bytes={self.output_bytes!r}: give a whole number of bytes >= 0")

    @property
    def cpu_limit_s(self) -> int:
        return math.ceil(self.cpu_s if self.cpu_s is not None else self.wall_s * settings.SANDBOX_CPU_PER_WALL)


@dataclass(frozen=True)
class Isolation:
    level: str           # bubblewrap | setpriv | rlimits | none
    description: str     # what a learner or instructor reads
    reason: str = ""     # why not stronger
    fix: str = ""        # how to get bubblewrap
    root_entry: str = BWRAP   # how another root file system is entered: bubblewrap | chroot | proot | "" (cannot)
    root_problem: str = ""    # with root_entry "": why not, and the fix

    def __str__(self) -> str:
        return self.description

    @property
    def namespaces(self) -> bool:
        return self.level == BWRAP


@dataclass(frozen=True)
class Completed:
    cmd: tuple[str, ...]
    returncode: int | None      # None when killed for the timeout
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool
    stdout_truncated: bool
    stderr_truncated: bool
    isolation: str = NONE       # Isolation.description of the runner that ran it
    memory_exceeded: bool = False   # the whole run reached its memory limit (cgroup, or the fallback's watchdog)
    scratch_exceeded: bool = False  # the fallback's watchdog ended it for writing more than its scratch quota
    memory_peak_bytes: int = 0      # the whole run's peak memory (cgroup), or the watchdog's highest reading
    #: (path the run saw, host path) for each path shown at another path (the fallback's view): the run's
    #: stdout/stderr are already written with the host paths; :meth:`host_paths` does it for a file it wrote
    shown: tuple[tuple[str, str], ...] = ()
    #: at a time-out, the scheduler's account of the run's live threads when it was ended (seconds on a CPU,
    #: seconds runnable but waiting for one); None where the run ended by itself or the kernel keeps no account
    cpu_run_s: float | None = None
    cpu_wait_s: float | None = None
    #: at a time-out, the CPU time the machine gave to everything OUTSIDE the run while it ran (the machine's busy
    #: time from /proc/stat less the run's own processes' CPU time, the reaped ones included); None where unknown
    cpu_outside_s: float | None = None
    cpu_capacity_s: float | None = None     # the CPUs the run could use x the time it took
    #: what the sandbox tool itself wrote (PRoot's own messages), read from a channel of its own: never the program's
    tool_stderr: str = ""

    @property
    def starved(self) -> bool:
        """Timed out because the machine was too busy: see ``settings.SANDBOX_STARVED_WAIT_RATIO``. The CPU its
        threads waited for must have gone to processes outside the run: 120 busy processes of its own make its
        threads wait too, and that is the program's doing, never the machine's."""
        return starved(self.timed_out, self.cpu_run_s, self.cpu_wait_s, self.duration_s, self.cpu_outside_s,
                       self.cpu_capacity_s)

    def host_paths(self, text: str) -> str:
        """``text`` the run wrote (a preprocessed file, a listing) with the view's paths written as host paths."""
        for inside, host in sorted(self.shown, key=lambda p: -len(p[0])):
            text = re.sub(re.escape(inside) + r"(?![\w.-])", lambda m, h=host: h, text)
        return text

    @property
    def signal(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def explain(self) -> str:
        """One sentence a learner can act on."""
        if self.starved:
            return (f"was stopped at its time limit after {self.duration_s:.1f} s, but {TOO_BUSY} to "
                    f"run it: its threads got {self.cpu_run_s:.1f} s on a CPU and waited {self.cpu_wait_s:.1f} s for "
                    f"one" + (f", while processes outside it took {self.cpu_outside_s:.1f} of the "
                              f"{self.cpu_capacity_s:.1f} CPU-seconds its CPUs had" if self.cpu_outside_s is not None
                              and self.cpu_capacity_s is not None else "")
                    + f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs). A fault of the machine, "
                    "not of the program: not scored; run it again when the machine is less busy")
        if self.timed_out:
            return (f"stopped after {self.duration_s:.1f} s: the time limit was reached "
                    "(an infinite loop, a deadlock at a barrier, or a kernel that never ends?)")
        if self.memory_exceeded and not self.ok:
            return ("was ended at the memory limit of the whole run (all its processes, /tmp and /dev/shm "
                    "together): allocate what the inputs need, not more")
        if self.scratch_exceeded and not self.ok:
            return "was ended for writing more than its scratch space allows: write only the output file"
        sig = self.signal
        if sig == "SIGSEGV":
            return ("crashed with a segmentation fault (SIGSEGV): it read or wrote memory it does not own (an index past "
                    "the end of an array, or a null or freed pointer)")
        if sig == "SIGABRT":
            return "aborted (SIGABRT): an assert failed or the runtime aborted; see stderr"
        if sig == "SIGKILL":
            return "was killed (SIGKILL), most often for exceeding the memory limit"
        if sig == "SIGXCPU":
            return "was stopped at the CPU time limit (SIGXCPU): a busy loop on several threads?"
        if sig == "SIGXFSZ":
            return "was stopped at the file size limit (SIGXFSZ): it wrote a file that is too large"
        if sig:
            return f"was ended by {sig}"
        if self.returncode != 0:
            tail = self.stderr.strip().splitlines()[-1:] or self.stdout.strip().splitlines()[-1:]
            hint = f": {tail[0][:200]}" if tail else ""
            if "bad_alloc" in self.stderr or "Cannot allocate memory" in self.stderr or "out of memory" in self.stderr.lower():
                hint += " (memory limit reached)"
            if "Resource temporarily unavailable" in self.stderr:
                hint += " (process limit reached)"
            return f"exited with status {self.returncode}{hint}"
        trunc = " (output truncated at the limit)" if self.stdout_truncated or self.stderr_truncated else ""
        return f"ran in {self.duration_s:.2f} s{trunc}"


def starved(timed_out: bool, run_s: float | None, wait_s: float | None, duration_s: float,
            outside_s: float | None = None, capacity_s: float | None = None) -> bool:
    """Whether a run that reached its time limit was starved by the machine: its threads waited for a CPU at least
    ``settings.SANDBOX_STARVED_WAIT_RATIO`` times as long as they ran, and for at least
    ``settings.SANDBOX_STARVED_MIN_FRACTION`` of the time it took; and, where the machine's account is known,
    processes OUTSIDE the run took its CPUs: of ``capacity_s`` (the CPUs it may use x the time it took), what
    ``outside_s`` left it was at most a ``1 / (1 + ratio)`` share of one CPU. A run whose own processes made its
    threads wait (a fork of busy loops) had the CPUs the outside left it: that is the program's doing, never the
    machine's. False without the scheduler's account."""
    if not timed_out or run_s is None or wait_s is None or duration_s <= 0:
        return False
    ratio = settings.SANDBOX_STARVED_WAIT_RATIO
    if outside_s is not None and capacity_s is not None and capacity_s - outside_s > duration_s / (1 + ratio):
        return False
    return wait_s >= ratio * run_s and wait_s >= settings.SANDBOX_STARVED_MIN_FRACTION * duration_s


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
    for p in _run_pids(pid, uid):
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


_faults = threading.local()


@contextlib.contextmanager
def machine_faults():
    """``with sandbox.machine_faults() as faults: ...``: the machine's faults met by this thread's :func:`run`
    calls inside the block (a sandbox that could not start; a run the machine starved), one message each. A
    re-grade that met one is not scored, whatever its own code caught (a learner's function "can fail in many
    ways")."""
    outer = getattr(_faults, "seen", None)
    _faults.seen = seen = []
    try:
        yield seen
    finally:
        _faults.seen = outer
        if outer is not None:
            outer.extend(seen)


def _note_fault(message: str) -> None:
    seen = getattr(_faults, "seen", None)
    if seen is not None:
        seen.append(message)


# --- which isolation this machine gives -------------------------------------------------------------

_forced: list[str] = []      # use(): tests and the overhead benchmark pick a weaker level on purpose


class use:
    """``with sandbox.use("none"): ...`` runs without isolation (the overhead benchmark's baseline and
    the attack suite's controls). Never used by the grader."""

    def __init__(self, level: str):
        if level not in (BWRAP, SETPRIV, RLIMITS, NONE):
            raise ValueError(f"isolation level {level!r}: use one of {BWRAP}, {SETPRIV}, {RLIMITS}, {NONE}")
        self.level = level

    def __enter__(self):
        _forced.append(self.level)
        return self

    def __exit__(self, *exc):
        _forced.pop()


def _as_root() -> bool:
    return os.geteuid() == 0


def isolation() -> Isolation:
    """The isolation :func:`run` gives on this machine, with the reason it is not stronger and the fix."""
    if _forced:
        return _describe(_forced[-1], "chosen for a comparison (sandbox.use)", "")
    return _detect(settings.env("ROCMLAB_SANDBOX", "auto"), _as_root())


def _describe(level: str, reason: str, fix: str) -> Isolation:
    if level == BWRAP:
        if _as_root():
            text = ("bubblewrap: mount, pid, net, ipc namespaces; runs as an unprivileged uid of its own (setpriv), "
                    "read-only system, only its scratch folder writable")
        else:
            text = ("bubblewrap: user, mount, pid, net namespaces; runs as uid 65534, "
                    "read-only system, only its scratch folder writable")
    elif level == SETPRIV:
        text = ("setpriv + rlimits + own session (WEAKER: no namespaces; runs as an unprivileged uid but can read "
                "world-readable files (the grader's code too), see other processes' command lines and use the network)")
    elif level == RLIMITS:
        text = ("rlimits + own session (WEAKER: no namespaces; runs as the grading user and can read and "
                "write that user's files, see other processes and use the network; setsid() daemons can outlive it)")
    else:
        text = "none (no isolation: plain subprocess with limits)"
    entry, problem = (BWRAP, "") if level == BWRAP else _root_entry(level, _as_root())
    if entry == CHROOT:
        text += ("; a root file system (the offline ROCm root) is entered with chroot"
                 + (" and the uid drop" if level != NONE else "") + ", what the run reads linked or copied into it")
    elif entry == PROOT:
        text += "; a root file system (the offline ROCm root) is entered with PRoot (ptrace), as this user"
    elif level != BWRAP:
        text += f"; a root file system (the offline ROCm root) CANNOT be entered: {problem}"
    if level in (RLIMITS, NONE) or (level == SETPRIV and not _as_root()):
        text += f"; {NOT_OF_RECORD} (the program runs as this user)"
    return Isolation(level, text if level == NONE else f"{text}; {memory_isolation()}", reason, fix, entry, problem)


#: What a report made by a weak runner says (:func:`of_record`): the words graders and the doctor show.
NOT_OF_RECORD = "PREVIEW ONLY, never a grade of record"


def of_record() -> str:
    """'' when a grade made here can be the grade of record: the learner's code runs as a uid of its own (bubblewrap,
    or as root the uid drop), so the grader's files (the seed, the results, other learners' hand-ins) stay closed
    to it. Otherwise why not and the fix: the run would be this user's own (the rlimits fallback, PRoot included),
    free to read the seed and rewrite the results; such a machine grades previews for self-study only."""
    iso = isolation()
    if iso.level == BWRAP or (iso.level == SETPRIV and _as_root()):
        return ""
    why = iso.reason or "no isolation"
    return (f"{NOT_OF_RECORD} on this machine: learner code would run as this user ({iso.level}; {why}), able to "
            "read the grading seed and other learners' hand-ins and to rewrite the results. Grade where bubblewrap "
            f"runs ({iso.fix or NO_USERNS_FIX}), or as root (each run then gets a uid of its own)")


def root_entry() -> tuple[str, str]:
    """How :func:`run` enters another root file system here: (``bubblewrap`` | ``chroot`` | ``proot``, '') or
    ('', why not and the fix)."""
    iso = isolation()
    return iso.root_entry, iso.root_problem


def paths_kept() -> bool:
    """Whether a run sees every path it is shown at its own path (bubblewrap's and PRoot's binds, or a run as the
    caller's own user). False as root without bubblewrap: a path the dropped uid cannot reach is shown at
    another path (a view), so what records its path (a precompiled header) must not be used there."""
    return isolation().level == BWRAP or not _as_root()


def fallback_entry(proot: str | None) -> tuple[str, str]:
    """How the fallback (no bubblewrap) would enter a root file system here: as root chroot, else PRoot where
    ``proot`` (its path) is given; ('', why not and the fix) otherwise."""
    if _as_root():
        return _root_entry(SETPRIV, True)
    return (PROOT, "") if proot else ("", f"PRoot is not installed: {PROOT_FIX}")


@cache
def _root_entry(level: str, as_root: bool) -> tuple[str, str]:
    if as_root:
        why = _chroot_refused()
        if why:
            return "", (f"chroot is refused here ({why}): give the container CAP_SYS_CHROOT (Docker has it by "
                        "default), or let bubblewrap run")
        return CHROOT, ""
    if shutil.which("proot"):
        return PROOT, ""
    return "", f"PRoot is not installed: {PROOT_FIX}"


@cache
def _chroot_refused() -> str:
    """'' when this process may chroot (tried in a child), else why not."""
    try:
        done = subprocess.run(["true"], preexec_fn=lambda: os.chroot("/"), capture_output=True, timeout=30)
    except subprocess.SubprocessError:
        return "chroot: operation not permitted"
    except OSError as exc:
        return str(exc)
    return "" if done.returncode == 0 else f"exit status {done.returncode}"


@cache
def _detect(mode: str, as_root: bool) -> Isolation:
    weaker = SETPRIV if as_root and shutil.which("setpriv") else RLIMITS
    if mode == "no-bwrap":
        return _describe(weaker, "ROCMLAB_SANDBOX=no-bwrap asks for the fallback", "unset ROCMLAB_SANDBOX")
    if mode not in ("", "auto"):
        raise ValueError(f"ROCMLAB_SANDBOX={mode!r}: use auto or no-bwrap")
    if not shutil.which("bwrap"):
        return _describe(weaker, "bubblewrap is not installed",
                         "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`), then `rocmlab doctor`")
    if as_root and not shutil.which("setpriv"):
        return _describe(RLIMITS, "setpriv is missing (needed to drop root)", "apt-get install util-linux")
    argv = _bwrap_argv(["true"], root="/", scratch=None, ro_binds=(), gpu=False, cwd=None, info_fd=None)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": settings.SANDBOX_PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _describe(weaker, f"bubblewrap does not start ({exc})", NO_USERNS_FIX)
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return _describe(weaker, f"bubblewrap cannot create namespaces here ({why})", NO_USERNS_FIX)
    return _describe(BWRAP, "", "")


# --- the whole run's memory: a cgroup where one can be made, else a watchdog -----------------------------

CGROUP_ROOT = "/sys/fs/cgroup"
#: A graded run's private scratch (a tmpfs: its binary and input are bound in, only its output file reaches disk).
RUN_SCRATCH_BYTES = 64 << 20
#: /dev/shm in the sandbox is a tmpfs of this size (its pages are memory: they count in the whole run's limit too).
SHM_BYTES = 64 << 20
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


class _Guard:
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
            resident = _resident(proc.pid, self.uid, page) if memory else 0
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
        _kill_group(proc)
        for pid in _run_pids(proc.pid, self.uid):
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


def _run_pids(root_pid: int, uid: int | None) -> list[int]:
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


def _resident(root_pid: int, uid: int | None, page: int) -> int:
    total = 0
    for pid in _run_pids(root_pid, uid):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total


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


# --- building the command line ------------------------------------------------------------------------

def _system_binds(root: str, etc=None) -> list[str]:
    """The root's folders, read-only; with ``etc`` (names), its ``/etc`` holds those entries only."""
    args: list[str] = []
    names = SYSTEM_DIRS if root == "/" else sorted(os.listdir(root))
    for name in names:
        src = os.path.join(root, name)
        if name in ROOT_SKIPPED or not os.path.lexists(src):
            continue
        if os.path.islink(src):
            args += ["--symlink", os.readlink(src), "/" + name]
        elif name == "etc" and etc is not None and os.path.isdir(src):
            args += ["--dir", "/etc"]
            for entry in etc:
                path = os.path.join(src, entry)
                if os.path.islink(path):
                    args += ["--symlink", os.readlink(path), "/etc/" + entry]
                elif os.path.lexists(path):
                    args += ["--ro-bind", path, "/etc/" + entry]
        elif os.path.isdir(src):
            args += ["--ro-bind", src, "/" + name]
    return args


def _gpu_nodes() -> list[str]:
    found: list[str] = []
    for pattern in GPU_NODES:
        found += sorted(glob.glob(pattern))
    return found


def _bwrap_argv(cmd, *, root, scratch, ro_binds, gpu, cwd, info_fd, uid=None, private=None, etc=None) -> list[str]:
    """``private``: (bytes, files) to make the scratch a tmpfs of that size, with ``files`` (host path,
    writable) bound into it at the same path; None binds the scratch folder itself, read-write. ``etc``: see
    :func:`run`."""
    a = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--unshare-ipc",
         "--unshare-uts", "--unshare-cgroup-try"]
    if not _as_root():
        a += ["--unshare-user", "--uid", str(settings.SANDBOX_UID), "--gid", str(settings.SANDBOX_GID)]
    if info_fd is not None:
        a += ["--info-fd", str(info_fd)]
    a += ["--tmpfs", "/", *_system_binds(root, etc), "--dev", "/dev", "--proc", "/proc",
          "--size", str(settings.SANDBOX_TMP_BYTES), "--perms", "1777", "--tmpfs", "/tmp",
          "--size", str(SHM_BYTES), "--perms", "1777", "--tmpfs", "/dev/shm"]
    made: set[str] = set()
    system = {"/" + x for x in (SYSTEM_DIRS if root == "/" else os.listdir(root)) if x not in ROOT_SKIPPED}
    for path in ro_binds:
        a += _parents(path, system, made) + ["--ro-bind", os.path.realpath(path), path]
    if scratch and private is not None:
        size, files = private
        a += _parents(scratch, system, made) + ["--size", str(size), "--perms", "1777", "--tmpfs", scratch]
        for path, writable in files:
            a += ["--bind" if writable else "--ro-bind", path, path]
    elif scratch:
        a += _parents(scratch, system, made) + ["--bind", scratch, scratch]
    groups: list[int] = []
    if gpu:
        for node in _gpu_nodes():
            a += ["--dev-bind", node, node]
            for n in [node, *glob.glob(node + "/*")]:
                try:
                    groups.append(os.stat(n).st_gid)
                except OSError:
                    pass
        a += ["--ro-bind", "/sys", "/sys"]
    a += ["--remount-ro", "/", "--chdir", cwd or scratch or "/tmp", "--"]
    if _as_root():
        a += _setpriv(groups, uid)
    return a + list(cmd)


def _parents(path: str, system: set[str], made: set[str]) -> list[str]:
    """Make a bind's missing parent folders traversable (bubblewrap would copy the host folders' modes,
    and a 0700 temporary folder above the scratch would lock the unprivileged program out)."""
    out: list[str] = []
    parts = path.strip("/").split("/")[:-1]
    if not parts or "/" + parts[0] in system:
        return out
    cur = ""
    for p in parts:
        cur += "/" + p
        if cur not in made and cur not in ("/tmp", "/dev", "/proc"):
            made.add(cur)
            out += ["--perms", "0755", "--dir", cur]
    return out


def run_uid() -> int:
    """The uid a run gets: as root one of its own (RLIMIT_NPROC counts per uid, so runs in parallel never starve
    each other), never one with a passwd entry; otherwise SANDBOX_UID (inside the user namespace)."""
    if not _as_root():
        return settings.SANDBOX_UID

    for _ in range(100):
        uid = settings.SANDBOX_UID_BASE + secrets.randbelow(settings.SANDBOX_UID_COUNT)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    return settings.SANDBOX_UID


def _setpriv(groups: list[int], uid: int | None = None) -> list[str]:
    keep = sorted({g for g in groups if g != 0})
    return ["setpriv", f"--reuid={settings.SANDBOX_UID if uid is None else uid}", f"--regid={settings.SANDBOX_GID}",
            f"--groups={','.join(map(str, keep))}" if keep else "--clear-groups",
            "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]


def _clean_env(env: dict | None) -> dict:
    out = {"PATH": settings.SANDBOX_PATH, "HOME": "/tmp"}
    out.update({str(k): str(v) for k, v in (env or {}).items()})
    return out


def _check_paths(root, scratch, ro_binds, cwd):
    for what, p in (("root", root), ("scratch", scratch), ("cwd", cwd), *(("ro_binds", b) for b in ro_binds)):
        if p is not None and not os.path.isabs(p):
            raise ValueError(f"sandbox {what} {p!r} must be an absolute path")
    if not os.path.isdir(root):
        raise ValueError(f"sandbox root {root!r} is not a folder: pass an existing root file system")
    if scratch is not None and not os.path.isdir(scratch):
        raise ValueError(f"sandbox scratch {scratch!r} is not a folder: create it first")
    for b in ro_binds:
        if not os.path.exists(b):
            raise ValueError(f"sandbox ro_binds: {b!r} does not exist")


# --- running ----------------------------------------------------------------------------------------

_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()


def kill_all() -> int:
    """End every sandbox this process has running (an interrupt handler in a pool of workers calls it)."""
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        _kill_group(p)
    return len(procs)


def _kill_group(proc: subprocess.Popen):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reader(stream, limit: int, sink: list, flag: list):
    size = 0
    while True:
        chunk = stream.read1(65536)
        if not chunk:
            break
        if size < limit:
            sink.append(chunk[: limit - size])
        size += len(chunk)
        if size > limit:
            flag[0] = True   # keep draining so the child never blocks on a full pipe
    stream.close()


def _preexec(limits: Limits | None, memory_bytes: int | None, guard: _Guard | None = None):
    def apply():
        if guard is not None:
            guard.enter()
        os.setsid()
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        if limits is not None:
            cpu = limits.cpu_limit_s
            resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
            if limits.processes:
                resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes, limits.processes))
            if limits.file_bytes:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    return apply


_PR_SET_CHILD_SUBREAPER = 36
_subreaper = []


def _become_subreaper():
    """Fallback only: orphans of a sandboxed program (setsid() daemons) are re-parented to us, so we can end them."""
    if not _subreaper:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        _subreaper.append(True)


def _sweep_orphans(uid: int = settings.SANDBOX_UID):
    """Fallback as root: end the run's uid's processes re-parented to us (daemons that left their session)."""
    me = str(os.getpid())
    with _live_lock:
        live = set(_live)
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in live:
            continue
        try:
            with open(f"/proc/{d}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if status.get("PPid", "").strip() == me and status.get("Uid", "").split()[:1] == [str(uid)]:
            try:
                os.kill(int(d), signal.SIGKILL)
                os.waitpid(int(d), 0)
            except (ProcessLookupError, ChildProcessError, PermissionError):
                pass


def _spawn(argv, *, env, cwd, stdin_data, output_bytes, wall_s, preexec, isolation_text, pass_fds=(),
           display_cmd=None, not_found=None, after_exit=None, guard: _Guard | None = None,
           program_stderr: tuple[int, int] | None = None) -> tuple[Completed, subprocess.Popen]:
    """Start ``argv``, drain its output, wait with the wall limit; any interrupt ends its process group and re-raises.
    ``program_stderr`` (read end, write end of a pipe; the write end passed to the child, which moves the program's
    stderr onto it): the program's stderr is read there, and what comes on the child's own stderr is the sandbox
    tool's (:attr:`Completed.tool_stderr`)."""
    display_cmd = tuple(display_cmd or argv)
    start = time.monotonic()
    cpus = os.sched_getaffinity(0)           # the run inherits them
    busy_at_start = machine_busy_s(cpus)
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec,
                                pass_fds=pass_fds)
    except FileNotFoundError as exc:
        raise FileNotFoundError(not_found or f"cannot run {argv[0]}: not found ({exc.strerror})") from exc
    finally:
        if program_stderr is not None:
            os.close(program_stderr[1])          # the child holds it now: EOF comes when the program's side closes
    with _live_lock:
        _live[proc.pid] = proc
    if guard is not None:
        guard.watch(proc)
    out, err, out_t, err_t = [], [], [False], [False]
    tool, tool_t = [], [False]
    threads = [threading.Thread(target=_reader, args=(proc.stdout, output_bytes, out, out_t), daemon=True)]
    if program_stderr is None:
        threads.append(threading.Thread(target=_reader, args=(proc.stderr, output_bytes, err, err_t), daemon=True))
    else:
        threads += [threading.Thread(target=_reader, args=(os.fdopen(program_stderr[0], "rb"), output_bytes, err,
                                                           err_t), daemon=True),
                    threading.Thread(target=_reader, args=(proc.stderr, 1 << 16, tool, tool_t), daemon=True)]
    for t in threads:
        t.start()
    timed_out, account, outside, capacity = False, None, None, None
    with sigterm_raises_terminated():
        try:
            if stdin_data:
                try:
                    proc.stdin.write(stdin_data)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
            try:
                wait_exit(proc, wall_s)
            except subprocess.TimeoutExpired:
                timed_out = True
                account = tree_cpu_account(proc.pid)    # before it is ended: was it hung, or starved?
                busy_now = machine_busy_s(cpus)
                if account is not None and busy_at_start is not None and busy_now is not None:
                    # starved by whom? what its CPUs did meanwhile, less what the run itself used
                    own = run_cpu_s(proc.pid, guard.uid if guard is not None else None)
                    outside = max(0.0, busy_now - busy_at_start - own)
                    capacity = len(cpus) * (time.monotonic() - start)
        except BaseException:          # KeyboardInterrupt, Terminated, ...: end everything, then re-raise
            _kill_group(proc)
            if after_exit:
                after_exit()
            _finish(proc, threads)
            if guard is not None:
                guard.stop()
            raise
    _kill_group(proc)              # leave nothing behind: children that outlive the program go too
    if after_exit:
        after_exit()
    _finish(proc, threads)
    if guard is not None:
        guard.stop()
    duration = time.monotonic() - start
    done = Completed(display_cmd, None if timed_out else proc.returncode,
                     b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace"),
                     duration, timed_out, out_t[0], err_t[0], isolation_text,
                     bool(guard and guard.memory_exceeded), bool(guard and guard.scratch_exceeded),
                     guard.peak if guard else 0, cpu_run_s=account and account[0], cpu_wait_s=account and account[1],
                     cpu_outside_s=outside, cpu_capacity_s=capacity,
                     tool_stderr=b"".join(tool).decode(errors="replace"))
    return done, proc


def wait_exit(proc: subprocess.Popen, timeout_s: float | None) -> int:
    """``proc.wait(timeout_s)``, woken the moment the process ends. Python's own wait with a timeout polls, sleeping
    up to 50 ms between looks: 25 ms on average after every compile and run, which a cell pays several times.
    Here the kernel wakes us (a pidfd, Linux 5.3+); elsewhere it is Python's wait. The wait is cut into slices of
    :data:`SIGNAL_SLICE_S`: a Ctrl-C or SIGTERM the kernel hands to another thread of this process (a reader thread,
    a pytest-xdist or Jupyter thread) does not wake a select in the main thread, and Python raises its exception
    there only when the main thread returns to Python."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return proc.wait(timeout=timeout_s)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    try:
        while True:
            left = SIGNAL_SLICE_S if deadline is None else min(SIGNAL_SLICE_S, deadline - time.monotonic())
            if left <= 0:
                raise subprocess.TimeoutExpired(proc.args, timeout_s)
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                break
    finally:
        os.close(fd)
    return proc.wait()


#: The longest a sandbox's wait goes without returning to Python (where a pending Ctrl-C is raised).
SIGNAL_SLICE_S = 0.2


def _finish(proc, threads):
    try:
        proc.wait(timeout=settings.SANDBOX_KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        pass
    for t in threads:
        t.join(timeout=settings.SANDBOX_KILL_WAIT_S)
    with _live_lock:
        _live.pop(proc.pid, None)


def _raise_terminated(signum, frame):
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises_terminated():
    """While the block runs in the main thread, SIGTERM raises :class:`Terminated` (as Ctrl-C raises
    KeyboardInterrupt), so a sandbox, or a batch of them, is ended cleanly instead of Python dying on the spot;
    forked workers inherit it. A handler the application installed is left alone."""
    installed = False
    if threading.current_thread() is threading.main_thread():
        try:
            if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
                signal.signal(signal.SIGTERM, _raise_terminated)
                installed = True
        except ValueError:
            pass
    try:
        yield
    finally:
        if installed:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _own_scratch(scratch, uid: int = settings.SANDBOX_UID):
    """As root, the program runs as an unprivileged uid: hand it the scratch folder, and return how to take it back."""
    if not (_as_root() and scratch):
        return None
    st = os.stat(scratch)
    os.chown(scratch, uid, settings.SANDBOX_GID)
    os.chmod(scratch, 0o700)
    return st


def _return_scratch(scratch, st):
    if st is not None:
        try:
            os.chown(scratch, st.st_uid, st.st_gid)
            os.chmod(scratch, st.st_mode & 0o7777)
        except OSError:
            pass


def run(cmd, *, limits: Limits = Limits(), root: str = "/", scratch: str | None = None, ro_binds=(),
        env: dict | None = None, gpu: bool = False, stdin_data: bytes | None = None,
        cwd: str | None = None, outputs=(), etc=None) -> Completed:
    """Run ``cmd`` isolated (see the module's text) and return what happened; never raises for the program's
    own failures (crash, time limit, output flood). Raises FileNotFoundError when ``cmd[0]`` is not in the
    sandbox, SandboxError when the sandbox itself cannot start, and re-raises KeyboardInterrupt / Terminated
    after ending every process in the sandbox. A SandboxError, and a run the machine starved
    (:attr:`Completed.starved`), are noted for :func:`machine_faults`.

    ``limits.scratch_bytes`` makes the scratch private with bubblewrap: a tmpfs of that size at the scratch's
    path, the files the scratch folder holds bound in read-only, and each path in ``outputs`` (files directly
    in the scratch folder) created empty, the run's own, and bound in writable (its size capped by
    ``limits.file_bytes``). The host folder's owner and mode never change. Without bubblewrap, a watchdog
    ends the run when the scratch folder grows past the quota.

    ``etc``: the names of the root's ``/etc`` entries the program sees, none other (None: all of ``/etc``). A
    compiler needs the loader's files, not the machine's users, names or settings (a learner's source could
    probe them with ``__has_include`` or read them with ``#include``). With bubblewrap only: the fallbacks show
    the root's ``/etc`` as the run's uid may read it."""
    try:
        done = _run(cmd, limits=limits, root=root, scratch=scratch, ro_binds=ro_binds, env=env, gpu=gpu,
                    stdin_data=stdin_data, cwd=cwd, outputs=outputs, etc=etc)
    except SandboxError as exc:
        _note_fault(str(exc))
        raise
    if done.starved:
        _note_fault(f"{done.cmd[0]} {done.explain()}")
    return done


def _run(cmd, *, limits: Limits, root: str, scratch: str | None, ro_binds, env: dict | None, gpu: bool,
         stdin_data: bytes | None, cwd: str | None, outputs, etc=None) -> Completed:
    cmd = tuple(str(c) for c in cmd)
    if not cmd:
        raise ValueError("sandbox.run: give the program to run")
    root = os.path.abspath(str(root))
    scratch = None if scratch is None else os.path.abspath(str(scratch))
    ro_binds = tuple(os.path.abspath(str(b)) for b in ro_binds)
    outputs = tuple(os.path.abspath(str(o)) for o in outputs)
    cwd = None if cwd is None else str(cwd)
    _check_paths(root, scratch, ro_binds, cwd)
    for o in outputs:
        if scratch is None or os.path.dirname(o) != scratch:
            raise ValueError(f"sandbox outputs: {o!r} must be a file directly in the scratch folder {scratch!r}")
    iso = isolation()
    envd = _clean_env(env)
    if iso.level == BWRAP:
        r, w = os.pipe()
        uid = run_uid()
        private = _private_scratch(scratch, outputs, limits, uid)
        argv = _bwrap_argv(cmd, root=root, scratch=scratch, ro_binds=ro_binds, gpu=gpu, cwd=cwd, info_fd=w, uid=uid,
                           private=private, etc=etc)
        st = None if private is not None else _own_scratch(scratch, uid)
        guard = _Guard(limits.memory_bytes, uid if _as_root() else None, None, None)
        try:
            guard.start()
            try:
                done, proc = _spawn(argv, env=envd, cwd="/", stdin_data=stdin_data, output_bytes=limits.output_bytes,
                                    wall_s=limits.wall_s, preexec=_preexec(limits, limits.memory_bytes, guard),
                                    isolation_text=iso.description, pass_fds=(w,), display_cmd=cmd,
                                    not_found="cannot run bwrap: not found (apt-get install bubblewrap)", guard=guard)
            finally:
                os.close(w)
                guard.stop()
            with os.fdopen(r, "rb") as f:
                started = bool(f.read())
        finally:
            _return_scratch(scratch, st)
        return _checked(done, started, cmd)
    return _run_fallback(cmd, iso, limits=limits, root=root, scratch=scratch, ro_binds=ro_binds, envd=envd, env=env,
                         stdin_data=stdin_data, cwd=cwd, outputs=outputs)


def _run_fallback(cmd, iso: Isolation, *, limits: Limits, root: str, scratch, ro_binds, envd, env, stdin_data, cwd,
                  outputs) -> Completed:
    """:func:`run` without bubblewrap: setpriv (as root) or rlimits, with a root file system entered by chroot (as
    root) or PRoot, and a :class:`_View` for what the run's uid could not reach otherwise."""
    uid = run_uid() if iso.level == SETPRIV else settings.SANDBOX_UID
    drop = iso.level == SETPRIV or (iso.level == RLIMITS and _as_root())
    entry = ""
    if root != "/":
        entry, problem = iso.root_entry, iso.root_problem
        if not entry:
            raise SandboxError(f"cannot enter the root file system {root} without bubblewrap ({iso.reason}): "
                               f"{problem}; or let bubblewrap run: {iso.fix}")
        if iso.level == NONE and entry == CHROOT:
            drop = False
        if entry == CHROOT and not drop:
            uid = os.geteuid()
    if drop and not entry and iso.level == RLIMITS:
        drop = False                       # rlimits as root without setpriv: runs as the caller, as it says
    view = None
    argv, env_run, run_cwd, run_scratch, run_outputs = list(cmd), envd, cwd, scratch, outputs
    if iso.level == NONE and not entry:
        env_run = {**os.environ, **(env or {})}
    moved = None
    proot_err = None
    try:
        if entry == CHROOT:
            view = _View.in_root(root)
            if scratch:
                moved = view.move_in(scratch)
            for b in ro_binds:
                view.add(b)
            tmp = view.private_tmp(uid if drop else None)
            env_run = {**envd, "TMPDIR": tmp, "HOME": tmp}
            run_cwd = view.inside_path(cwd) if cwd else (view.inside_path(scratch) if scratch else tmp)
            argv = [view.rewrite(a) for a in cmd]
            run_scratch = view.host_path_of(scratch) if scratch else None
            run_outputs = tuple(view.host_path_of(o) for o in outputs)
        elif entry == PROOT:
            _proot_program_exists(cmd[0], root, scratch, ro_binds, envd)
            proot_err = os.pipe()
            os.set_inheritable(proot_err[1], True)
            argv = _proot_argv(cmd, root=root, scratch=scratch, ro_binds=ro_binds, cwd=cwd, stderr_fd=proot_err[1])
            view = _View.private(argv)     # only its /tmp
        elif drop:
            python = _python_unreachable(cmd[0])
            covered = {os.path.realpath(sys.base_prefix)} if python else set()
            hidden = [b for b in ro_binds if not _reachable(b) and os.path.realpath(b) not in covered]
            if hidden or python:
                view = _View.on_host()
                if python:
                    exe, libdir = view.add_python()
                    env_run = {**env_run, "LD_LIBRARY_PATH": libdir}
                for b in hidden:
                    view.add(b)
                argv = [view.rewrite(a) for a in cmd]
                if python:
                    argv[0] = exe
            if scratch and not _reachable(scratch) and (cwd in (None, scratch)):
                argv = [_relative_to(a, scratch) for a in argv]   # the run starts in its scratch folder
        if iso.level in (SETPRIV, RLIMITS):
            _become_subreaper()
        st = _own_scratch(run_scratch, uid) if drop else None
        guard = None
        if iso.level != NONE:
            guard = _Guard(limits.memory_bytes, uid if drop else None, run_scratch, limits.scratch_bytes, run_outputs)
            guard.start()
        preexec = _preexec(limits, limits.memory_bytes, guard)
        if entry == CHROOT:
            preexec = _entering(preexec, root, run_cwd, uid if drop else None)
        elif drop:
            argv = _setpriv([], uid) + argv
        try:
            try:
                done, _ = _spawn(argv, env=env_run, cwd=None if entry == CHROOT else (
                                     run_cwd or scratch or ("/tmp" if iso.level != NONE else None)),
                                 stdin_data=stdin_data, output_bytes=limits.output_bytes, wall_s=limits.wall_s,
                                 preexec=preexec, isolation_text=iso.description, display_cmd=cmd,
                                 after_exit=(lambda: _sweep_orphans(uid)) if drop else None, guard=guard,
                                 pass_fds=(proot_err[1],) if proot_err else (), program_stderr=proot_err)
                proot_err = None
            except subprocess.SubprocessError as exc:     # the chroot or the uid drop failed in the child
                raise SandboxError(f"the sandbox could not enter {root} ({exc}); check `rocmlab doctor` "
                                   "(isolation)") from None
        finally:
            if guard is not None:
                guard.stop()
            _return_scratch(run_scratch, st)
    finally:
        if proot_err is not None:      # never handed to a run
            for fd in proot_err:
                with contextlib.suppress(OSError):
                    os.close(fd)
        if moved is not None:
            view.move_out(scratch, moved)
        if view is not None:
            view.remove()
    if view is not None:
        first: dict[str, str] = {}
        for host, inside in view.pairs:
            first.setdefault(inside, host)
        done = replace(done, stdout=view.unrewrite(done.stdout), stderr=view.unrewrite(done.stderr),
                       shown=tuple(first.items()))
    if drop and not entry and done.returncode == 127 and "failed to execute" in done.stderr:
        raise FileNotFoundError(f"cannot run {cmd[0]}: not found ({done.stderr.strip()[:200]})")
    if entry == PROOT:
        # PRoot's own messages come on its own stderr, the program's on a pipe of its own: what the program prints
        # ("proot error: execve(...)" included) is never read as PRoot's
        tool = done.tool_stderr
        if done.returncode not in (0, None) and "proot error:" in tool and not _PROOT_SIGNAL.search(tool):
            raise SandboxError(f"PRoot could not enter {root} or start {cmd[0]} ({tool.strip()[:300]}); check "
                               "`rocmlab doctor`")
        done = _proot_status(done)
    return done


_PROOT_SIGNAL = re.compile(r"^proot info: pid \d+: terminated with signal (\d+)\n?", re.M)


def _proot_status(done: Completed) -> Completed:
    """PRoot exits 255 when the program was ended by a signal, and says which on its own channel ("proot info: pid N:
    terminated with signal S"): the run's status as a program's own (a negative signal number)."""
    found = _PROOT_SIGNAL.findall(done.tool_stderr)
    if done.returncode == 255 and found:
        return replace(done, returncode=-int(found[-1]))
    return done


def _proot_program_exists(program: str, root: str, scratch, ro_binds, env: dict) -> None:
    """FileNotFoundError when ``program`` is not in the run's view under PRoot (``root`` as /, the scratch and
    ``ro_binds`` at their own paths; a bare name searched on the run's PATH): decided before the run, from the file
    system, never from what the run prints."""
    def there(path: str) -> bool:
        for b in [*(ro_binds or ()), *([scratch] if scratch else [])]:
            if path == b or path.startswith(b.rstrip("/") + "/"):
                return os.path.isfile(path)
        return os.path.lexists(os.path.join(root, path.lstrip("/")))

    if "/" in program:
        if there(program if program.startswith("/") else os.path.join(scratch or "/tmp", program)):
            return
    elif any(there(os.path.join(d, program)) for d in env.get("PATH", settings.SANDBOX_PATH).split(":") if d):
        return
    raise FileNotFoundError(f"cannot run {program}: not found in {root}")


_libc = None


def _prctl():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc.prctl


_PR_SET_NO_NEW_PRIVS = 38


def _entering(apply, root: str, cwd: str, uid: int | None):
    """The chroot fallback's child set-up, after the limits: enter ``root``, start in ``cwd`` (a path inside it),
    and (``uid``) drop to that uid with the sandbox's gid, no supplementary groups and no new privileges."""
    prctl = _prctl()

    def enter():
        apply()
        os.chroot(root)
        os.chdir(cwd)
        if uid is not None:
            os.setgroups([])
            os.setresgid(settings.SANDBOX_GID, settings.SANDBOX_GID, settings.SANDBOX_GID)
            os.setresuid(uid, uid, uid)
            if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    return enter


def _proot_argv(cmd, *, root: str, scratch, ro_binds, cwd, stderr_fd: int | None = None) -> list[str]:
    """PRoot's command line: ``root`` as /, the host's /dev and /proc, the scratch and ``ro_binds`` at their own
    paths (PRoot binds are not read-only: the run is this user's own, as the rlimits level says). With
    ``stderr_fd`` the root's /bin/sh moves the program's stderr onto that descriptor before it starts the program,
    so that PRoot's own stderr carries PRoot's messages only."""
    if not os.access(os.path.join(root, "usr"), os.R_OK | os.X_OK):
        raise SandboxError(f"this user cannot read the root file system {root}: build it as this user "
                           "(bash scripts/setup/20-rocm-root.sh with ROCMLAB_HOME set) or point ROCMLAB_ROCM_ROOT at a "
                           "copy this user can read")
    a = [shutil.which("proot") or "proot", "-r", root, "-b", "/dev", "-b", "/proc"]
    for path in dict.fromkeys([*(b for b in ro_binds), *([scratch] if scratch else [])]):
        a += ["-b", path]
    a += ["-w", cwd or scratch or "/tmp"]
    if stderr_fd is not None:
        # by its /proc path: dash redirects descriptors 0-9 only, and this one's number may be higher
        a += ["/bin/sh", "-c", f'exec 2>/proc/self/fd/{stderr_fd}; exec "$0" "$@"']
    return a + list(cmd)


def _python_unreachable(program: str) -> bool:
    """Whether ``program`` is this process's own Python and a uid of the sandbox's cannot run it where it is
    (its installation is under a folder closed to others, as a pyenv Python under ``/root``)."""
    try:
        same = os.path.realpath(program) == os.path.realpath(sys.executable)
    except OSError:
        return False
    return same and not (_reachable_folder(os.path.realpath(sys.executable))
                         and _reachable_folder(os.path.realpath(sys.base_prefix)))


def _relative_to(arg: str, folder: str) -> str:
    """``arg`` with ``folder`` (the run's working folder) written as ``.``: the dropped uid reaches it only that way."""
    return _rewrite_arg(arg, folder, ".")


#: Flags written together with the path they take (``-I/dir``); ``--flag=/path`` is split at its ``=``.
_ARG_PREFIXES = ("-include-pch", "-isystem", "-iquote", "-idirafter", "-include", "-imacros", "-I", "-L", "-B", "-o")


def _rewrite_arg(arg: str, host: str, inside: str) -> str:
    """One argument with the path ``host`` (or a path under it) at its start, after a flag of _ARG_PREFIXES or
    after ``--flag=``, written as ``inside``."""
    head, rest = "", arg
    if arg.startswith("-"):
        if "=" in arg:
            head, rest = arg.split("=", 1)
            head += "="
        else:
            for p in _ARG_PREFIXES:
                if arg.startswith(p + "/"):
                    head, rest = p, arg[len(p):]
                    break
    if rest == host or rest.startswith(host.rstrip("/") + "/"):
        return head + inside + rest[len(host):]
    return arg


def _reachable(path: str, uid: int = settings.SANDBOX_UID_BASE) -> bool:
    """Whether an unprivileged uid of the sandbox's (not the owner, not in the group) can reach ``path`` and read
    what is in it (checked up to 2,000 entries): every folder above it searchable by others, it and its folders
    readable and searchable, its files readable."""
    real = os.path.realpath(path)
    if real != "/" and not _reachable_folder(os.path.dirname(real)):
        return False
    seen = 0
    for top in [real]:
        try:
            st = os.stat(top)
        except OSError:
            return False
        if stat.S_ISREG(st.st_mode):
            return bool(st.st_mode & stat.S_IROTH)
        if (st.st_mode & 0o005) != 0o005:
            return False
        for dirpath, dirs, files in os.walk(top):
            for name in dirs + files:
                seen += 1
                if seen > 2000:
                    return True
                try:
                    m = os.lstat(os.path.join(dirpath, name)).st_mode
                except OSError:
                    continue
                if stat.S_ISDIR(m) and (m & 0o005) != 0o005 or stat.S_ISREG(m) and not m & stat.S_IROTH:
                    return False
    return True


class _View:
    """What a run without bind mounts is shown: a folder of its own (``host``, seen by the run as ``inside``) with
    one entry per path it must read (``add``): hard links to the files where they may be linked (same file system,
    readable and not writable by others), else copies readable by the run's uid; folders re-made 0755. As with a
    bind, the folders above a shown path do not count, and in it what others may not read stays unreadable. Arguments
    naming a shown path are rewritten to its entry (``rewrite``), the run's output back (``unrewrite``)."""

    def __init__(self, host: str, inside: str):
        self.host, self.inside = host, inside
        self.pairs: list[tuple[str, str]] = []        # (host path, inside path), for the rewriting
        self.copied = self.entries = 0
        self.entries_limit = VIEW_ENTRIES
        self.proot_tmp: str | None = None
        self.skip: set[str] = set()             # host paths a mirror leaves out

    @classmethod
    def in_root(cls, root: str) -> _View:
        """A view inside the root file system (the chroot fallback): ``root/run/rocmlab/PID-TOKEN``."""
        base = os.path.join(root, ROOT_VIEWS)
        os.makedirs(base, mode=0o711, exist_ok=True)
        st = os.lstat(base)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise SandboxError(f"{base} is not a folder of this user's: remove it, then run again")
        _sweep_views(base)
        name = f"{os.getpid()}-{secrets.token_hex(6)}"
        os.mkdir(os.path.join(base, name), 0o755)
        os.chmod(os.path.join(base, name), 0o755)
        return cls(os.path.join(base, name), "/" + ROOT_VIEWS + "/" + name)

    @classmethod
    def on_host(cls) -> _View:
        """A view on the host (a run as root on the host system): a 0711 folder in a temporary folder others reach."""
        for tmp in (tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"):
            if os.path.isdir(tmp) and _reachable_folder(tmp):
                break
        else:
            raise SandboxError("no temporary folder the sandbox's user can reach (/tmp must be mode 1777)")
        _sweep_views(tmp, prefix="rocmlab-view-")
        host = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-", dir=tmp)
        os.chmod(host, 0o711)
        return cls(host, host)

    @classmethod
    def private(cls, proot_argv: list[str]) -> _View:
        """PRoot's run: only a private /tmp of its own (bound over the root's), no rewriting."""
        v = cls("", "")
        v.proot_tmp = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-")
        at = proot_argv.index("-w")
        proot_argv[at:at] = ["-b", f"{v.proot_tmp}:/tmp"]
        return v

    def add_python(self) -> tuple[str, str]:
        """This process's Python (``sys.executable``) shown to a dropped uid that cannot reach its installation (a
        pyenv Python under a 0700 ``/root``): its interpreter, its shared library and its standard library in
        ``base/`` (without the base installation's site-packages: tens of thousands of files a virtual environment
        does not use), and, for a virtual environment, ``py/pyvenv.cfg`` naming ``base/`` with the environment's
        site-packages (linked where the uid reaches it, else shown). Returns (the interpreter the run starts, the
        folder for LD_LIBRARY_PATH)."""
        ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
        base = os.path.realpath(sys.base_prefix)
        venv = os.path.realpath(sys.prefix) != base
        stdlib = os.path.realpath(sysconfig.get_path("stdlib", vars={"installed_base": base, "base": base}))
        base_site = os.path.join(stdlib, "site-packages")
        b = os.path.join(self.host, "base")
        for d in (b, os.path.join(b, "bin"), os.path.join(b, "lib")):
            os.mkdir(d, 0o755)
            os.chmod(d, 0o755)
        for lib in glob.glob(os.path.join(base, "lib", "libpython*.so*")):
            self._place(lib, os.path.join(b, "lib", os.path.basename(lib)), os.stat(lib))
        os.mkdir(os.path.join(b, "lib", ver), 0o755)
        os.chmod(os.path.join(b, "lib", ver), 0o755)
        self.skip.add(base_site)
        self._mirror_tree(stdlib, os.path.join(b, "lib", ver))
        exe_real = os.path.realpath(sys.executable)
        if not venv:
            self.skip.discard(base_site)
            if os.path.isdir(base_site):
                self._mirror(base_site, os.path.join(b, "lib", ver, "site-packages"))
            self._place(exe_real, os.path.join(b, "bin", ver), os.stat(exe_real))
            self.pairs.append((base, os.path.join(self.inside, "base")))
            return os.path.join(self.inside, "base", "bin", ver), os.path.join(self.inside, "base", "lib")
        py = os.path.join(self.host, "py")
        for d in (py, os.path.join(py, "bin"), os.path.join(py, "lib"), os.path.join(py, "lib", ver)):
            os.mkdir(d, 0o755)
            os.chmod(d, 0o755)
        self._place(exe_real, os.path.join(py, "bin", ver), os.stat(exe_real))
        with open(os.path.join(py, "pyvenv.cfg"), "w") as f:
            f.write(f"home = {os.path.join(self.inside, 'base', 'bin')}\ninclude-system-site-packages = false\n"
                    f"version = {sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}\n")
        os.chmod(os.path.join(py, "pyvenv.cfg"), 0o644)
        site = os.path.realpath(sysconfig.get_path("purelib"))
        dst = os.path.join(py, "lib", ver, "site-packages")
        if _reachable_folder(site) and os.stat(site).st_mode & 0o005 == 0o005:
            os.symlink(site, dst)
        elif self.inside == self.host:          # on the host: one shown copy, kept while the environment is unchanged
            shown = _shown_site_packages(site)
            os.symlink(shown, dst)
            self.pairs.append((site, shown))
        else:
            self._mirror(site, dst)
        self.pairs.append((base, os.path.join(self.inside, "base")))
        return os.path.join(self.inside, "py", "bin", ver), os.path.join(self.inside, "base", "lib")

    def add(self, path: str) -> str:
        dst = os.path.join(self.host, f"b{len(self.pairs)}")
        self._mirror(path, dst)
        inside = os.path.join(self.inside, os.path.basename(dst))
        self.pairs.append((path, inside))
        real = os.path.realpath(path)
        if real != path:
            self.pairs.append((real, inside))
        return inside

    def move_in(self, scratch: str):
        """The run's scratch folder moved into the view (renamed; copied where the file systems differ)."""
        dst = os.path.join(self.host, "s")
        try:
            os.rename(scratch, dst)
            how = "renamed"
        except OSError:
            shutil.copytree(scratch, dst, symlinks=True)
            how = "copied"
        self.pairs.append((scratch, os.path.join(self.inside, "s")))
        return how

    def move_out(self, scratch: str, how: str) -> None:
        src = os.path.join(self.host, "s")
        if how == "renamed":
            os.rename(src, scratch)
            return
        for e in os.scandir(scratch):
            if e.is_dir(follow_symlinks=False):
                shutil.rmtree(e.path, ignore_errors=True)
            else:
                os.unlink(e.path)
        shutil.copytree(src, scratch, symlinks=True, dirs_exist_ok=True)

    def private_tmp(self, uid: int | None) -> str:
        """The run's own /tmp in the view (its TMPDIR and HOME), owned by its uid."""
        t = os.path.join(self.host, "t")
        os.mkdir(t, 0o700)
        if uid is not None and _as_root():
            os.chown(t, uid, settings.SANDBOX_GID)
        return os.path.join(self.inside, "t")

    def host_path_of(self, path: str) -> str:
        """Where a host path in a shown folder is during the run, on the host."""
        inside = self.rewrite(path)
        return self.host + inside[len(self.inside):] if inside.startswith(self.inside) else path

    def inside_path(self, path: str) -> str:
        return self.rewrite(path)

    def rewrite(self, arg: str) -> str:
        """An argument naming a shown path (or one under it) as the run sees it."""
        for host, inside in sorted(self.pairs, key=lambda p: -len(p[0])):
            out = _rewrite_arg(arg, host, inside)
            if out != arg:
                return out
        return arg

    def unrewrite(self, text: str) -> str:
        """The run's output with the view's paths written as the host paths they show."""
        first: dict[str, str] = {}
        for host, inside in self.pairs:
            first.setdefault(inside, host)
        for inside, host in sorted(first.items(), key=lambda p: -len(p[0])):
            text = re.sub(re.escape(inside) + r"(?![\w.-])", lambda m, h=host: h, text)
        return text

    def remove(self) -> None:
        for d in (self.host, self.proot_tmp):
            if d:
                shutil.rmtree(d, ignore_errors=True)

    def _mirror(self, src: str, dst: str) -> None:
        """``src`` at ``dst``: it and the folders above it do not count (the caller shows it: a build folder is
        0700), but in it only what others may read is shown (a file or folder closed to others stays closed to the
        run's uid)."""
        st = os.stat(src)
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(dst, 0o755)
            os.chmod(dst, 0o755)
            self._mirror_tree(src, dst)
        elif stat.S_ISREG(st.st_mode):
            if not st.st_mode & stat.S_IROTH:
                with open(dst, "w"):
                    pass
                os.chmod(dst, 0o600)
                return
            self._place(src, dst, st)
        else:
            raise SandboxError(f"cannot show {src} to the sandboxed program: not a file or folder")

    def _mirror_tree(self, src: str, dst: str) -> None:
        skip = {h for h, _ in self.pairs} | self.skip
        with os.scandir(src) as it:
            for e in it:
                self.entries += 1
                if self.entries > self.entries_limit:
                    raise SandboxError(f"cannot show {src} to the sandboxed program without bubblewrap: more than "
                                       f"{self.entries_limit} entries; let bubblewrap run (`rocmlab doctor` says how)")
                if e.path in skip:
                    continue
                target = os.path.join(dst, e.name)
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(e.path), target)
                elif stat.S_ISDIR(st.st_mode):
                    if (st.st_mode & 0o005) != 0o005:     # closed to others: shown closed (as a bind would be)
                        os.mkdir(target, 0o700)
                        continue
                    os.mkdir(target, 0o755)
                    os.chmod(target, 0o755)
                    self._mirror_tree(e.path, target)
                elif stat.S_ISREG(st.st_mode) and st.st_mode & stat.S_IROTH:   # what others may not read: not shown
                    self._place(e.path, target, st)

    def _place(self, src: str, dst: str, st: os.stat_result) -> None:
        linkable = (st.st_mode & stat.S_IROTH and not st.st_mode & stat.S_IWOTH
                    and st.st_dev == os.stat(os.path.dirname(dst)).st_dev)
        if linkable:
            try:
                os.link(src, dst)
                return
            except OSError:
                pass
        self.copied += st.st_size
        if self.copied > VIEW_COPY_BYTES:
            raise SandboxError(f"cannot show {src} to the sandboxed program without bubblewrap: more than "
                               f"{VIEW_COPY_BYTES >> 20} MB to copy; let bubblewrap run (`rocmlab doctor` says how)")
        shutil.copyfile(src, dst)
        os.chmod(dst, 0o755 if st.st_mode & 0o111 else 0o644)


def unreadable(paths) -> str:
    """The first of ``paths`` (or of the files and folders in one, up to 2,000 entries each) that a sandboxed run
    cannot read here, as 'PATH (mode)'; '' when it reads them all. The folders above a path do not count
    (bubblewrap and the fallback's view show the path itself). As root a run has a uid of its own: what others may
    read; otherwise this user's own access."""
    for top in paths:
        for path in _walk_bounded(str(top), 2000):
            try:
                st = os.stat(path)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if _as_root():
                ok = (st.st_mode & 0o005) == 0o005 if is_dir else bool(st.st_mode & stat.S_IROTH)
            else:
                ok = os.access(path, os.R_OK | (os.X_OK if is_dir else 0))
            if not ok:
                return f"{path} (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def _walk_bounded(top: str, limit: int):
    yield top
    n = 0
    if not os.path.isdir(top):
        return
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            n += 1
            if n > limit:
                return
            yield os.path.join(dirpath, name)


def _reachable_folder(path: str) -> bool:
    real = os.path.realpath(path)
    cur = "/"
    for p in real.strip("/").split("/"):
        cur = os.path.join(cur, p)
        try:
            if not os.stat(cur).st_mode & stat.S_IXOTH:
                return False
        except OSError:
            return False
    return True


#: Entries a shown environment's site-packages may have (torch alone is about 50,000; hard links, made once).
SITE_VIEW_ENTRIES = 400_000


def _shown_site_packages(site: str) -> str:
    """The environment's ``site-packages`` shown to a dropped uid that cannot reach it (a virtual environment under
    root's 0700 home, as root without bubblewrap): a tree of hard links in a 0755 folder of root's in the temporary
    folder, made once and kept while the environment is unchanged (named by its path and by the names and times of
    its top-level entries: installing, removing or upgrading a package changes them). Only what others may read is
    shown. A folder of that name not owned by this user, or writable by others, is never used (a learner could have
    made it): another name is chosen."""
    tmp = next((t for t in (tempfile.gettempdir(), "/tmp", "/var/tmp") if os.path.isdir(t) and _reachable_folder(t)),
               None)
    if tmp is None:
        raise SandboxError("no temporary folder the sandbox's user can reach (/tmp must be mode 1777)")
    stamp = hashlib.sha256(site.encode())
    with os.scandir(site) as it:
        for e in sorted(it, key=lambda e: e.name):
            stamp.update(f"{e.name}:{e.stat(follow_symlinks=False).st_mtime_ns}\n".encode())
    where = hashlib.sha256(site.encode()).hexdigest()[:12]
    name = f"rocmlab-site-{os.geteuid()}-{where}-{stamp.hexdigest()[:16]}"
    for attempt in range(4):
        final = os.path.join(tmp, name if attempt == 0 else f"{name}-{secrets.token_hex(4)}")
        try:
            st = os.lstat(final)
        except FileNotFoundError:
            break
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022:
            return final
    else:
        raise SandboxError(f"cannot show {site} to the sandboxed program: folders named like it in {tmp} are not "
                           "this user's; remove them, or let bubblewrap run (`rocmlab doctor` says how)")
    for old in glob.glob(os.path.join(tmp, f"rocmlab-site-{os.geteuid()}-{where}-*")):
        st = os.lstat(old)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and old != final:
            shutil.rmtree(old, ignore_errors=True)            # an older state of the same environment
    building = tempfile.mkdtemp(prefix=f"rocmlab-view-{os.getpid()}-", dir=tmp)
    try:
        maker = _View(building, building)
        maker.entries_limit = SITE_VIEW_ENTRIES
        maker._mirror(site, os.path.join(building, "site-packages"))
        made = os.path.join(building, "site-packages")
        try:
            os.rename(made, final)
        except OSError:                           # another grader made it first
            st = os.lstat(final)
            if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022):
                raise SandboxError(f"{final} is not a folder of this user's: remove it, then run again")
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return final


def _sweep_views(folder: str, prefix: str = "") -> None:
    """Remove the views (and a scratch moved into one) of processes that are gone."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for e in entries:
        m = re.match(re.escape(prefix) + r"(\d+)-", e.name)
        if not m or not e.is_dir(follow_symlinks=False):
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue
        except ProcessLookupError:
            shutil.rmtree(e.path, ignore_errors=True)
        except (PermissionError, OverflowError):
            continue


def _private_scratch(scratch: str | None, outputs: tuple[str, ...], limits: Limits, uid: int):
    """(size, [(host file, writable)]) for a private tmpfs scratch, or None (see :func:`run`)."""
    if not scratch or not limits.scratch_bytes:
        return None
    files = []
    for name in sorted(os.listdir(scratch)):
        path = os.path.join(scratch, name)
        if path not in outputs and stat.S_ISREG(os.lstat(path).st_mode):
            files.append((path, False))
    for path in outputs:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            if _as_root():
                os.fchown(fd, uid, settings.SANDBOX_GID)
        finally:
            os.close(fd)
        files.append((path, True))
    return limits.scratch_bytes, files


def _checked(done: Completed, started: bool, cmd) -> Completed:
    if not started and not done.timed_out:
        why = done.stderr.strip()[-500:] or f"exit status {done.returncode}"
        raise SandboxError(f"the sandbox could not start ({why}); check `rocmlab doctor` (isolation)")
    err = done.stderr
    if done.returncode in (1, 126, 127) and (err.startswith("bwrap: execvp ") or err.startswith("setpriv: failed to execute")):
        raise FileNotFoundError(f"cannot run {cmd[0]}: not found in the sandbox ({err.strip()[:200]})")
    rc = done.returncode
    if rc is not None and 128 < rc < 128 + 65:      # bwrap reports a program ended by signal N as 128 + N
        return replace(done, returncode=-(rc - 128))
    return done


def run_limited(cmd, *, timeout_s: float = settings.RUN_TIME_LIMIT_S, memory_bytes: int | None = 4 << 30,
                output_bytes: int = settings.RUN_OUTPUT_BYTES, cwd=None, env=None,
                stdin_data: bytes | None = None) -> Completed:
    """Compatibility wrapper (no isolation: own session, address-space limit, capped output, time limit):
    for callers that have not moved to :func:`run` yet. Learner code must go through :func:`run`."""
    cmd = tuple(str(c) for c in cmd)
    done, _ = _spawn(cmd, env=env, cwd=cwd, stdin_data=stdin_data, output_bytes=output_bytes, wall_s=timeout_s,
                     preexec=_preexec(None, memory_bytes),
                     isolation_text="rlimits + own session (run_limited: not isolated)")
    return done
