"""The terms every part of the sandbox shares: the isolation levels and the ways into another root file system,
what a run may use (:class:`Limits`), how it is isolated (:class:`Isolation`), what happened (:class:`Completed`,
and :func:`starved`: whether a time-out was the machine's fault), and the sandbox's errors.

Values and their words only: nothing here starts a process or reads the machine, so every other module of the
sandbox imports from here and this module imports none of them.
"""

from __future__ import annotations

import math
import os
import re
import signal
from dataclasses import dataclass

from rocmlab import settings


BWRAP = "bubblewrap"     # Isolation.level values, strongest first
SETPRIV = "setpriv"
RLIMITS = "rlimits"
NONE = "none"

CHROOT = "chroot"        # root_entry() values: how another root file system is entered without bubblewrap
PROOT = "proot"


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
