"""Running without bubblewrap (:func:`run_fallback`): the strongest isolation left, said in every result.

As root, ``setpriv`` drops the program to a uid of its own; otherwise rlimits and a session of its own are all
there is (the run is this user's own). Another root file system (the offline ROCm root) is entered with
``chroot`` and the uid drop in the child (as root; CAP_SYS_CHROOT is in Docker's default set) or with PRoot, a
ptrace-based user-space chroot (as an ordinary user), whose own messages come on a channel of their own, never
mixed with the program's. With no bind mounts, what the run reads is shown through a
:class:`~rocmlab.sandbox.view.View`.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace

from rocmlab import settings
from rocmlab.sandbox import uid_drop
from rocmlab.sandbox.guard import Guard
from rocmlab.sandbox.spawn import become_subreaper, child_setup, spawn, sweep_orphans
from rocmlab.sandbox.terms import CHROOT, NONE, PROOT, RLIMITS, SETPRIV, Completed, Isolation, Limits, SandboxError
from rocmlab.sandbox.view import View, python_unreachable, reachable, relative_to


def run_fallback(cmd, iso: Isolation, *, limits: Limits, root: str, scratch, ro_binds, envd, env, stdin_data, cwd,
                 outputs) -> Completed:
    """:func:`run` without bubblewrap: setpriv (as root) or rlimits, with a root file system entered by chroot (as
    root) or PRoot, and a :class:`View` for what the run's uid could not reach otherwise."""
    uid = uid_drop.run_uid() if iso.level == SETPRIV else settings.SANDBOX_UID
    drop = iso.level == SETPRIV or (iso.level == RLIMITS and uid_drop.as_root())
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
            view = View.in_root(root)
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
            view = View.private(argv)     # only its /tmp
        elif drop:
            python = python_unreachable(cmd[0])
            covered = {os.path.realpath(sys.base_prefix)} if python else set()
            hidden = [b for b in ro_binds if not reachable(b) and os.path.realpath(b) not in covered]
            if hidden or python:
                view = View.on_host()
                if python:
                    exe, libdir = view.add_python()
                    env_run = {**env_run, "LD_LIBRARY_PATH": libdir}
                for b in hidden:
                    view.add(b)
                argv = [view.rewrite(a) for a in cmd]
                if python:
                    argv[0] = exe
            if scratch and not reachable(scratch) and (cwd in (None, scratch)):
                argv = [relative_to(a, scratch) for a in argv]   # the run starts in its scratch folder
        if iso.level in (SETPRIV, RLIMITS):
            become_subreaper()
        st = uid_drop.own_scratch(run_scratch, uid) if drop else None
        guard = None
        if iso.level != NONE:
            guard = Guard(limits.memory_bytes, uid if drop else None, run_scratch, limits.scratch_bytes, run_outputs)
            guard.start()
        preexec = child_setup(limits, limits.memory_bytes, guard)
        if entry == CHROOT:
            preexec = _entering(preexec, root, run_cwd, uid if drop else None)
        elif drop:
            argv = uid_drop.setpriv_argv([], uid) + argv
        try:
            try:
                done, _ = spawn(argv, env=env_run, cwd=None if entry == CHROOT else (
                                    run_cwd or scratch or ("/tmp" if iso.level != NONE else None)),
                                stdin_data=stdin_data, output_bytes=limits.output_bytes, wall_s=limits.wall_s,
                                preexec=preexec, isolation_text=iso.description, display_cmd=cmd,
                                after_exit=(lambda: sweep_orphans(uid)) if drop else None, guard=guard,
                                pass_fds=(proot_err[1],) if proot_err else (), program_stderr=proot_err)
                proot_err = None
            except subprocess.SubprocessError as exc:     # the chroot or the uid drop failed in the child
                raise SandboxError(f"the sandbox could not enter {root} ({exc}); check `rocmlab doctor` "
                                   "(isolation)") from None
        finally:
            if guard is not None:
                guard.stop()
            uid_drop.return_scratch(run_scratch, st)
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
