"""Which isolation this machine gives, said with the reason it is not stronger and the fix.

Bubblewrap where it can create its namespaces here, else the strongest fallback left: ``setpriv`` as root (a uid
of the run's own), rlimits otherwise (the caller's own user: a preview, never a grade of record,
:func:`of_record`); never silently (:func:`isolation`, shown by ``rocmlab doctor``). Without bubblewrap another
root file system is entered with chroot (as root) or PRoot (as an ordinary user), or cannot be, with the fix
(:func:`root_entry`). Decided once per process from ``ROCMLAB_SANDBOX`` and whether it runs as root;
``with use(level):`` picks a weaker level on purpose (the overhead benchmark, the attack suite's controls).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache

from rocmlab import settings
from rocmlab.sandbox import uid_drop
from rocmlab.sandbox.bubblewrap import bwrap_argv
from rocmlab.sandbox.guard import memory_isolation
from rocmlab.sandbox.terms import BWRAP, CHROOT, NONE, PROOT, RLIMITS, SETPRIV, Isolation


PROOT_FIX = "install PRoot (Debian/Ubuntu: `apt-get install proot`), then check with `rocmlab doctor`"

NO_USERNS_FIX = ("let bubblewrap create namespaces: allow unprivileged user namespaces "
                 "(`sysctl -w kernel.unprivileged_userns_clone=1` and `user.max_user_namespaces=15000`; "
                 "in Docker run with `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`, "
                 "or run the grader as root with CAP_SYS_ADMIN), then check with `rocmlab doctor`")


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


def isolation() -> Isolation:
    """The isolation :func:`run` gives on this machine, with the reason it is not stronger and the fix."""
    if _forced:
        return _describe(_forced[-1], "chosen for a comparison (sandbox.use)", "")
    return _detect(settings.env("ROCMLAB_SANDBOX", "auto"), uid_drop.as_root())


def _describe(level: str, reason: str, fix: str) -> Isolation:
    if level == BWRAP:
        if uid_drop.as_root():
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
    entry, problem = (BWRAP, "") if level == BWRAP else _root_entry(level, uid_drop.as_root())
    if entry == CHROOT:
        text += ("; a root file system (the offline ROCm root) is entered with chroot"
                 + (" and the uid drop" if level != NONE else "") + ", what the run reads linked or copied into it")
    elif entry == PROOT:
        text += "; a root file system (the offline ROCm root) is entered with PRoot (ptrace), as this user"
    elif level != BWRAP:
        text += f"; a root file system (the offline ROCm root) CANNOT be entered: {problem}"
    if level in (RLIMITS, NONE) or (level == SETPRIV and not uid_drop.as_root()):
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
    if iso.level == BWRAP or (iso.level == SETPRIV and uid_drop.as_root()):
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
    return isolation().level == BWRAP or not uid_drop.as_root()


def fallback_entry(proot: str | None) -> tuple[str, str]:
    """How the fallback (no bubblewrap) would enter a root file system here: as root chroot, else PRoot where
    ``proot`` (its path) is given; ('', why not and the fix) otherwise."""
    if uid_drop.as_root():
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
    argv = bwrap_argv(["true"], root="/", scratch=None, ro_binds=(), gpu=False, cwd=None, info_fd=None)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=30, env={"PATH": settings.SANDBOX_PATH})
    except (OSError, subprocess.TimeoutExpired) as exc:
        return _describe(weaker, f"bubblewrap does not start ({exc})", NO_USERNS_FIX)
    if done.returncode != 0:
        why = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        return _describe(weaker, f"bubblewrap cannot create namespaces here ({why})", NO_USERNS_FIX)
    return _describe(BWRAP, "", "")
