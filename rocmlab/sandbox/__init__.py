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
``ro_binds``) is shown to it through a *view* (:class:`View`): a folder of its own, readable by the run's uid,
holding hard links (or readable copies) of those paths; the command's arguments name the view, and its output
names the host paths again. The same view shows a run as root on the host system the folders its dropped uid
could not reach (a checkout or cache under a 0700 ``/root``).

Ctrl-C (KeyboardInterrupt) or SIGTERM in the caller ends everything in the sandbox within
``settings.SANDBOX_KILL_WAIT_S`` and re-raises.

A time limit presumes the program had the CPU. When a run reaches it, the scheduler's own account of the run's
threads (``/proc/PID/task/TID/schedstat``: time on a CPU, time runnable but waiting for one) is read before the run
is ended: a run the machine starved (:attr:`Completed.starved`) is the machine's fault, which graders never score
(:func:`machine_faults` collects such faults for a re-grade, whatever its caller caught).

The package, one idea a module, each importing only the modules above it. This ``__init__`` is the one public
entry: it imports every public name from the module that owns it, so each is ``rocmlab.sandbox.NAME`` as when the
sandbox was one file (a test that patches a name the sandbox itself calls patches the owning module):

- ``uid_drop``: whether rocmlab runs as root, and the uid of its own a run then drops to (setpriv)
- ``terms``: the levels, :class:`Limits`, :class:`Isolation`, :class:`Completed` (with :func:`starved`), the errors
- ``processes``: a run's processes as /proc shows them (memory, CPU time, the scheduler's account), and their end
- ``guard``: the whole run's memory (a cgroup, else a watchdog) and the fallback's scratch quota
- ``bubblewrap``: bubblewrap's command line
- ``detection``: which isolation this machine gives (:func:`isolation`), with the reason and the fix
- ``spawn``: starting a run's process, draining its output, waiting, and ending it at any interrupt
- ``view``: what a run without bind mounts is shown, and what a dropped uid can reach
- ``fallback``: running without bubblewrap (setpriv or rlimits; chroot or PRoot)
- ``runner``: :func:`run`, :func:`machine_faults` and :func:`run_limited`
"""

from __future__ import annotations

from rocmlab.sandbox.bubblewrap import (
    GPU_NODES,
    ROOT_SKIPPED,
    RUN_SCRATCH_BYTES,
    SHM_BYTES,
    SYSTEM_DIRS,
    TOOL_ETC,
)
from rocmlab.sandbox.detection import (
    NO_USERNS_FIX,
    NOT_OF_RECORD,
    PROOT_FIX,
    fallback_entry,
    isolation,
    of_record,
    paths_kept,
    root_entry,
    use,
)
from rocmlab.sandbox.guard import (
    CGROUP_ROOT,
    WATCHDOG_INTERVAL_S,
    CgroupParent,
    cgroup_parent,
    memory_isolation,
    no_cgroup,
)
from rocmlab.sandbox.processes import machine_busy_s, run_cpu_s, tree_cpu_account
from rocmlab.sandbox.runner import machine_faults, run, run_limited
from rocmlab.sandbox.spawn import SIGNAL_SLICE_S, kill_all, sigterm_raises_terminated, wait_exit
from rocmlab.sandbox.terms import (
    BWRAP,
    CHROOT,
    NONE,
    PROOT,
    RLIMITS,
    SETPRIV,
    TOO_BUSY,
    Completed,
    Isolation,
    Limits,
    MachineBusy,
    SandboxError,
    Terminated,
    starved,
    too_busy,
)
from rocmlab.sandbox.uid_drop import run_uid
from rocmlab.sandbox.view import ROOT_VIEWS, SITE_VIEW_ENTRIES, VIEW_COPY_BYTES, VIEW_ENTRIES, unreadable

#: The one public entry, in the order the single file had it (the API page lists them so).
__all__ = [
    "SYSTEM_DIRS", "TOOL_ETC", "ROOT_SKIPPED", "GPU_NODES", "BWRAP", "SETPRIV", "RLIMITS", "NONE", "CHROOT",
    "PROOT", "PROOT_FIX", "ROOT_VIEWS", "VIEW_COPY_BYTES", "VIEW_ENTRIES", "NO_USERNS_FIX", "SandboxError",
    "TOO_BUSY", "too_busy", "MachineBusy", "Terminated", "Limits", "Isolation", "Completed", "starved",
    "machine_busy_s", "run_cpu_s", "tree_cpu_account", "machine_faults", "use", "isolation", "NOT_OF_RECORD",
    "of_record", "root_entry", "paths_kept", "fallback_entry", "CGROUP_ROOT", "RUN_SCRATCH_BYTES",
    "SHM_BYTES", "WATCHDOG_INTERVAL_S", "no_cgroup", "CgroupParent", "cgroup_parent", "memory_isolation",
    "run_uid", "kill_all", "wait_exit", "SIGNAL_SLICE_S", "sigterm_raises_terminated", "run", "unreadable",
    "SITE_VIEW_ENTRIES", "run_limited",
]
