"""Run a function in a forked child as another uid: the one way the tests stage a learner's process."""

from __future__ import annotations

import os


def run_as(uid: int, fn, groups=()) -> str:
    """``fn()`` in a forked child as uid:gid ``uid`` with only the supplementary ``groups``; the string it returns
    comes back. ``fn`` turns its own exceptions into text (each caller says what a refusal looks like)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:                                                  # pragma: no cover (the child)
        os.close(r)
        try:
            os.setgroups(list(groups))
            os.setgid(uid)
            os.setuid(uid)
            os.write(w, fn().encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as fh:
        out = fh.read()
    os.waitpid(pid, 0)
    return out
