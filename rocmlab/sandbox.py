"""Run a program with time, memory and output limits, and never hang or crash the caller.

The learner's binary runs in its own process session. On timeout the whole process
group is killed. ``RLIMIT_AS`` caps its address space; stdout and stderr are read
concurrently and capped, so megabytes of output cannot fill the notebook. The result
says plainly what happened (exit code, signal, timeout, truncation).
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import threading
import time
from dataclasses import dataclass


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
        if self.timed_out:
            return (f"stopped after {self.duration_s:.1f} s: the time limit was reached "
                    "(an infinite loop, a deadlock at a barrier, or a kernel that never ends?)")
        sig = self.signal
        if sig == "SIGSEGV":
            return "crashed with a segmentation fault (SIGSEGV): an out-of-bounds or null pointer access on the host"
        if sig == "SIGABRT":
            return "aborted (SIGABRT): an assert failed or the runtime aborted; see stderr"
        if sig == "SIGKILL":
            return "was killed (SIGKILL), most often for exceeding the memory limit"
        if sig:
            return f"was ended by {sig}"
        if self.returncode != 0:
            tail = self.stderr.strip().splitlines()[-1:] or self.stdout.strip().splitlines()[-1:]
            hint = f": {tail[0][:200]}" if tail else ""
            if "bad_alloc" in self.stderr or "Cannot allocate memory" in self.stderr or "out of memory" in self.stderr.lower():
                hint += " (memory limit reached)"
            return f"exited with status {self.returncode}{hint}"
        trunc = " (output truncated at the limit)" if self.stdout_truncated or self.stderr_truncated else ""
        return f"ran in {self.duration_s:.2f} s{trunc}"


def _reader(stream, limit: int, sink: list, flag: list):
    size = 0
    while True:
        chunk = stream.read(65536)
        if not chunk:
            break
        if size < limit:
            sink.append(chunk[: limit - size])
        size += len(chunk)
        if size > limit:
            flag[0] = True   # keep draining so the child never blocks on a full pipe
    stream.close()


def run_limited(cmd, *, timeout_s: float = 10.0, memory_bytes: int | None = 4 << 30,
                output_bytes: int = 1 << 20, cwd=None, env=None, stdin_data: bytes | None = None) -> Completed:
    """Run ``cmd`` with limits. Output beyond ``output_bytes`` per stream is dropped (and flagged).

    ``memory_bytes`` limits the address space (RLIMIT_AS). GPU runtimes reserve large
    virtual ranges, so pass None (no limit) for programs that use a real GPU driver.
    """
    cmd = tuple(str(c) for c in cmd)

    def limits():
        os.setsid()
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    start = time.monotonic()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE if stdin_data else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limits)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"cannot run {cmd[0]}: not found ({exc.strerror})") from exc
    out, err, out_t, err_t = [], [], [False], [False]
    threads = [threading.Thread(target=_reader, args=(proc.stdout, output_bytes, out, out_t), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, output_bytes, err, err_t), daemon=True)]
    for t in threads:
        t.start()
    if stdin_data:
        try:
            proc.stdin.write(stdin_data)
            proc.stdin.close()
        except BrokenPipeError:
            pass
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    try:  # leave nothing behind: children that outlive the program go too
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for t in threads:
        t.join(timeout=5)
    duration = time.monotonic() - start
    return Completed(cmd, None if timed_out else proc.returncode,
                     b"".join(out).decode(errors="replace"), b"".join(err).decode(errors="replace"),
                     duration, timed_out, out_t[0], err_t[0])
