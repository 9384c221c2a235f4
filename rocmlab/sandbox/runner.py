"""The sandbox's entry: :func:`run` runs a program isolated and says what happened.

It checks the paths it is given, then runs through bubblewrap where :func:`rocmlab.sandbox.isolation` says it
runs (a uid of the run's own as root, a private tmpfs scratch with ``Limits.scratch_bytes``, the whole run's
memory guarded), else through :func:`~rocmlab.sandbox.fallback.run_fallback`. A sandbox that could not start and a
run the machine starved are the machine's faults: :func:`machine_faults` collects them for a caller (a re-grade
that met one is not scored). :func:`run_limited` is the compatibility wrapper without isolation.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from dataclasses import replace

from rocmlab import settings
from rocmlab.sandbox import uid_drop
from rocmlab.sandbox.bubblewrap import bwrap_argv
from rocmlab.sandbox.detection import isolation
from rocmlab.sandbox.fallback import run_fallback
from rocmlab.sandbox.guard import Guard
from rocmlab.sandbox.spawn import child_setup, spawn
from rocmlab.sandbox.terms import BWRAP, Completed, Limits, SandboxError


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
        uid = uid_drop.run_uid()
        private = _private_scratch(scratch, outputs, limits, uid)
        argv = bwrap_argv(cmd, root=root, scratch=scratch, ro_binds=ro_binds, gpu=gpu, cwd=cwd, info_fd=w, uid=uid,
                          private=private, etc=etc)
        st = None if private is not None else uid_drop.own_scratch(scratch, uid)
        guard = Guard(limits.memory_bytes, uid if uid_drop.as_root() else None, None, None)
        try:
            guard.start()
            try:
                done, proc = spawn(argv, env=envd, cwd="/", stdin_data=stdin_data, output_bytes=limits.output_bytes,
                                   wall_s=limits.wall_s, preexec=child_setup(limits, limits.memory_bytes, guard),
                                   isolation_text=iso.description, pass_fds=(w,), display_cmd=cmd,
                                   not_found="cannot run bwrap: not found (apt-get install bubblewrap)", guard=guard)
            finally:
                os.close(w)
                guard.stop()
            with os.fdopen(r, "rb") as f:
                started = bool(f.read())
        finally:
            uid_drop.return_scratch(scratch, st)
        return _checked(done, started, cmd)
    return run_fallback(cmd, iso, limits=limits, root=root, scratch=scratch, ro_binds=ro_binds, envd=envd, env=env,
                        stdin_data=stdin_data, cwd=cwd, outputs=outputs)


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
            if uid_drop.as_root():
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
    done, _ = spawn(cmd, env=env, cwd=cwd, stdin_data=stdin_data, output_bytes=output_bytes, wall_s=timeout_s,
                    preexec=child_setup(None, memory_bytes),
                    isolation_text="rlimits + own session (run_limited: not isolated)")
    return done
