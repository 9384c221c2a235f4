"""Who a run is: whether rocmlab itself runs as root, and, as root, the uid of its own each run drops to.

As root, every run gets an unprivileged uid with no passwd entry (:func:`run_uid`: RLIMIT_NPROC counts per uid,
so runs in parallel never starve each other), reached through ``setpriv`` (:func:`setpriv_argv`: after
bubblewrap's mounts, or in the fallback) and lent the run's scratch folder for the run (:func:`own_scratch`,
:func:`return_scratch`). As an ordinary user a run is ``settings.SANDBOX_UID`` inside bubblewrap's user namespace.

The other modules of the sandbox call these through the module (``uid_drop.as_root()``), never a copy imported
by name: a test that makes this process an ordinary user (``monkeypatch.setattr(uid_drop, "as_root", ...)``) or
gives every run one uid reaches every caller with one patch.
"""

from __future__ import annotations

import os
import pwd
import secrets

from rocmlab import settings


def as_root() -> bool:
    """Whether this process runs as root (then each run drops to a uid of its own)."""
    return os.geteuid() == 0


def run_uid() -> int:
    """The uid a run gets: as root one of its own (RLIMIT_NPROC counts per uid, so runs in parallel never starve
    each other), never one with a passwd entry; otherwise SANDBOX_UID (inside the user namespace)."""
    if not as_root():
        return settings.SANDBOX_UID

    for _ in range(100):
        uid = settings.SANDBOX_UID_BASE + secrets.randbelow(settings.SANDBOX_UID_COUNT)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    return settings.SANDBOX_UID


def setpriv_argv(groups: list[int], uid: int | None = None) -> list[str]:
    keep = sorted({g for g in groups if g != 0})
    return ["setpriv", f"--reuid={settings.SANDBOX_UID if uid is None else uid}", f"--regid={settings.SANDBOX_GID}",
            f"--groups={','.join(map(str, keep))}" if keep else "--clear-groups",
            "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all", "--"]


def own_scratch(scratch, uid: int = settings.SANDBOX_UID):
    """As root, the program runs as an unprivileged uid: hand it the scratch folder, and return how to take it back."""
    if not (as_root() and scratch):
        return None
    st = os.stat(scratch)
    os.chown(scratch, uid, settings.SANDBOX_GID)
    os.chmod(scratch, 0o700)
    return st


def return_scratch(scratch, st):
    if st is not None:
        try:
            os.chown(scratch, st.st_uid, st.st_gid)
            os.chmod(scratch, st.st_mode & 0o7777)
        except OSError:
            pass
