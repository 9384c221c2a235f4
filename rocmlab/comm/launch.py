"""Start N ranks of a torch.distributed program from a notebook without blocking it.

``job = launch(fn, world_size=4)`` returns at once. Each rank is a fresh Python process
(``spawn``) that joins a process group (gloo on the CPU, NCCL/RCCL on GPUs: one GPU per rank)
and calls ``fn(rank, world_size, *args)``; ``fn`` must be importable (defined in a module, not
in a notebook cell). ``job.result(timeout)`` waits and returns the list of each rank's return
value. When any rank raises or dies, a watcher thread stops every other rank at once and
``result()`` raises :class:`RankFailed` with that rank's message; past the deadline every rank is
stopped and :class:`RankTimeout` is raised. Nothing is left running either way.
"""

from __future__ import annotations

import datetime
import multiprocessing as mp
import os
import pickle
import shutil
import signal
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

#: Set in every rank's environment: NVLink multicast (NVLS) off, as the lent multi-GPU machines require.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


class LaunchError(RuntimeError):
    """A launch could not be made (bad arguments): the message says what to change."""


class RankFailed(RuntimeError):
    """A rank raised or died; the others were stopped."""


class RankTimeout(TimeoutError):
    """The ranks did not finish before the deadline; all were stopped."""


def _rank_main(fn, rank, world_size, backend, outdir, collective_timeout_s, args, kwargs, env):
    """The body of one rank (runs in the child process)."""
    os.environ.update(env)
    out = Path(outdir)
    try:
        import torch
        import torch.distributed as dist

        if backend == "nccl":
            torch.cuda.set_device(rank % max(1, torch.cuda.device_count()))
        # a file store in the job's own folder: no TCP port to race for between jobs
        dist.init_process_group(backend, init_method=f"file://{out / 'store'}", rank=rank, world_size=world_size,
                                timeout=datetime.timedelta(seconds=collective_timeout_s))
        value = fn(rank, world_size, *args, **kwargs)   # an exception is reported before any teardown
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - a peer may be gone already
            pass
        tmp = out / f"rank{rank}.ok.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh)
        tmp.rename(out / f"rank{rank}.ok")
    except BaseException as exc:  # noqa: BLE001 - report everything, then exit non-zero
        (out / f"rank{rank}.err").write_text(
            f"{type(exc).__name__}: {exc}\n\n{traceback.format_exc()}")
        os._exit(1)


@dataclass
class Job:
    world_size: int
    backend: str
    timeout_s: float
    procs: list = field(default_factory=list)
    outdir: str = ""
    started: float = 0.0
    _failure: str | None = None
    _timed_out: bool = False
    _done: threading.Event = field(default_factory=threading.Event)
    _results: list | None = None
    _retry: object = None

    def done(self) -> bool:
        return self._done.is_set()

    def status(self) -> str:
        if not self.done():
            alive = sum(p.is_alive() for p in self.procs)
            return f"running: {alive} of {self.world_size} ranks alive after {time.monotonic() - self.started:.1f} s"
        if self._failure:
            return "failed: " + self._failure.splitlines()[0]
        if self._timed_out:
            return "timed out"
        return f"finished: {self.world_size} ranks"

    def result(self, timeout: float | None = None) -> list:
        """Wait (at most ``timeout`` s more, default: until the job's own deadline) and return each rank's value."""
        if not self._done.wait(timeout if timeout is not None else self.timeout_s + 30):
            self.stop()
            raise RankTimeout(f"no result within {timeout} s: all {self.world_size} ranks were stopped")
        if self._failure and "connectFullMesh" in self._failure and self._retry is not None:
            # gloo's first connection round between fresh processes sometimes fails on a loaded
            # machine ("Connection closed by peer"): that is no error of the program, so start once more
            retry, self._retry = self._retry, None
            return retry().result(timeout)
        if self._failure:
            raise RankFailed(self._failure)
        if self._timed_out:
            raise RankTimeout(f"the ranks did not finish within {self.timeout_s:.0f} s (a deadlock, a rank waiting "
                              f"for a peer, or too large a problem?): all {self.world_size} were stopped")
        return self._results

    def stop(self) -> None:
        for p in self.procs:
            if p.is_alive():
                try:
                    os.killpg(p.pid, signal.SIGKILL) if _own_group(p) else p.kill()
                except (ProcessLookupError, PermissionError):
                    pass
        for p in self.procs:
            p.join(timeout=5)

    def _dead(self, out: Path) -> list:
        return [(i, p.exitcode) for i, p in enumerate(self.procs)
                if not p.is_alive() and p.exitcode not in (None, 0) and not (out / f"rank{i}.ok").exists()
                and not (out / f"rank{i}.err").exists()]

    # the watcher thread
    def _watch(self) -> None:
        out = Path(self.outdir)
        deadline = self.started + self.timeout_s
        try:
            while True:
                if list(out.glob("rank*.err")) or self._dead(out):
                    time.sleep(0.3)   # let the peers of a first failure report theirs too
                    dead = self._dead(out)
                    errs = sorted(out.glob("rank*.err"), key=lambda f: (f.stat().st_mtime_ns, f.name))
                    msgs = []
                    for i, code in dead:   # a rank that died without a word is the likeliest cause
                        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
                        msgs.append(f"rank {i} of {self.world_size} {how} before finishing (it died, e.g. during "
                                    "a collective); the other ranks were stopped")
                    for f in errs:
                        msgs.append(f"rank {f.name[4:-4]} of {self.world_size} raised {f.read_text().strip()}")
                    self._failure = msgs[0]
                    if len(msgs) > 1:
                        others = [m.split(" of ")[0] for m in msgs[1:]]
                        self._failure += f"\n(then {', '.join(others)} failed too, most likely in consequence)"
                    break
                oks = list(out.glob("rank*.ok"))
                if len(oks) == self.world_size:
                    self._results = []
                    for r in range(self.world_size):
                        with open(out / f"rank{r}.ok", "rb") as fh:
                            self._results.append(pickle.load(fh))
                    break
                if time.monotonic() > deadline:
                    self._timed_out = True
                    break
                time.sleep(0.05)
        finally:
            self.stop()
            shutil.rmtree(self.outdir, ignore_errors=True)
            self._done.set()


def _own_group(p) -> bool:
    try:
        return os.getpgid(p.pid) == p.pid
    except (ProcessLookupError, PermissionError):
        return False


_CTX = None


def _context():
    """forkserver with torch and rocmlab.comm preloaded: each rank starts in well under a second,
    not the several seconds a spawned interpreter needs to import torch. The fork server itself
    never touches a GPU, so its children may. ``spawn`` where forkserver does not exist."""
    global _CTX
    if _CTX is None:
        try:
            ctx = mp.get_context("forkserver")
            ctx.set_forkserver_preload(["torch", "torch.distributed", "rocmlab.comm.workers"])
        except ValueError:
            ctx = mp.get_context("spawn")
        _CTX = ctx
    return _CTX


def launch(fn, world_size: int, *args, backend: str = "gloo", timeout_s: float = 120.0,
           collective_timeout_s: float | None = None, env: dict | None = None, _retry_left: bool = True,
           **kwargs) -> Job:
    """Start ``world_size`` ranks running ``fn(rank, world_size, *args, **kwargs)``; return at once."""
    if not callable(fn) or getattr(fn, "__module__", "__main__") in ("__main__", None) or "<locals>" in getattr(
            fn, "__qualname__", ""):
        raise LaunchError(f"{getattr(fn, '__qualname__', fn)!r} cannot be sent to a new process: define it at the "
                          "top level of an importable module (a .py file), not in a notebook cell or inside a function")
    if not isinstance(world_size, int) or world_size < 1:
        raise LaunchError(f"world_size must be a positive integer, not {world_size!r}")
    if backend not in ("gloo", "nccl"):
        raise LaunchError(f"backend must be 'gloo' (CPU) or 'nccl' (NCCL on NVIDIA, RCCL on AMD), not {backend!r}")
    if backend == "nccl":
        import torch
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n < world_size:
            raise LaunchError(f"backend 'nccl' needs one GPU per rank: {world_size} ranks, {n} GPU(s) here. "
                              "Use backend='gloo' (CPU) or fewer ranks")
    ctx = _context()
    job = Job(world_size, backend, float(timeout_s))
    job.outdir = tempfile.mkdtemp(prefix="rocmlab-launch-")
    job.started = time.monotonic()
    cto = collective_timeout_s if collective_timeout_s is not None else max(5.0, timeout_s)
    child_env = dict(SAFE_ENV)
    child_env.update(env or {})
    for r in range(world_size):
        p = ctx.Process(target=_rank_main, args=(fn, r, world_size, backend, job.outdir, cto, args, kwargs,
                                                 child_env), daemon=True)
        p.start()
        job.procs.append(p)
    threading.Thread(target=job._watch, daemon=True).start()
    if _retry_left:
        job._retry = lambda: launch(fn, world_size, *args, backend=backend, timeout_s=timeout_s,
                                    collective_timeout_s=collective_timeout_s, env=env, _retry_left=False, **kwargs)
    return job


def run(fn, world_size: int, *args, **kwargs) -> list:
    """launch(...).result(): for scripts and tests."""
    return launch(fn, world_size, *args, **kwargs).result()
