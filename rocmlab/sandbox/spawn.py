"""Starting a sandbox's process and ending it cleanly, whatever ends the caller.

:func:`spawn` starts a command line (bubblewrap's, or the fallback's: it knows nothing of isolation) in a session
of its own with the child's limits (:func:`child_setup`), drains stdout and stderr concurrently up to a cap,
waits with the wall limit (:func:`wait_exit`, woken the moment the process ends), reads the scheduler's account
at a time-out, and ends the whole process group after it, or at Ctrl-C or SIGTERM
(:func:`sigterm_raises_terminated`) before re-raising. :func:`kill_all` ends every run still live. For the
fallback without a pid namespace: :func:`become_subreaper` and :func:`sweep_orphans` end the daemons that left
the run's session.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import select
import signal
import subprocess
import threading
import time

from rocmlab import settings
from rocmlab.sandbox.guard import Guard
from rocmlab.sandbox.processes import kill_group, machine_busy_s, run_cpu_s, tree_cpu_account
from rocmlab.sandbox.terms import Completed, Limits, Terminated


_live: dict[int, subprocess.Popen] = {}
_live_lock = threading.Lock()


def kill_all() -> int:
    """End every sandbox this process has running (an interrupt handler in a pool of workers calls it)."""
    with _live_lock:
        procs = list(_live.values())
    for p in procs:
        kill_group(p)
    return len(procs)


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


def child_setup(limits: Limits | None, memory_bytes: int | None, guard: Guard | None = None):
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


def become_subreaper():
    """Fallback only: orphans of a sandboxed program (setsid() daemons) are re-parented to us, so we can end them."""
    if not _subreaper:
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        except (OSError, AttributeError):
            pass
        _subreaper.append(True)


def sweep_orphans(uid: int = settings.SANDBOX_UID):
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


def spawn(argv, *, env, cwd, stdin_data, output_bytes, wall_s, preexec, isolation_text, pass_fds=(),
          display_cmd=None, not_found=None, after_exit=None, guard: Guard | None = None,
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
            kill_group(proc)
            if after_exit:
                after_exit()
            _finish(proc, threads)
            if guard is not None:
                guard.stop()
            raise
    kill_group(proc)              # leave nothing behind: children that outlive the program go too
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
