"""Put back the modes and owners of the files a test locks (a hub in ``users`` mode locks the references of the
package its servers run: in the suite, this checkout's reference files 0600 root, its ``.git`` and ``tests/``
0700), so that a test run leaves the checkout as it found it."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def _state(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_mode & 0o7777, st.st_uid, st.st_gid


@contextlib.contextmanager
def kept_modes(paths):
    """``paths()``: the paths that may be locked (asked before and after, as a lock may compile new copies). Each
    path there before gets its mode and owner back; one made meanwhile (a compiled ``__pycache__`` copy) gets the
    mode and owner of its source file beside the cache folder, or of its folder."""
    before = {Path(p): _state(Path(p)) for p in paths()}
    try:
        yield before
    finally:
        for p in {Path(x) for x in paths()} | set(before):
            if os.path.islink(p) or not os.path.exists(p):
                continue
            was = before.get(p)
            if was is None:
                src = p.parent.parent / (p.name.split(".")[0] + ".py")
                was = (before.get(src) or _state(src)) if p.parent.name == "__pycache__" else None
                was = was or _state(p.parent)
                if was is None:
                    continue
                if p.is_file():
                    was = (was[0] & 0o666, *was[1:])
            mode, uid, gid = was
            if _state(p) != was:
                if os.geteuid() == 0:
                    os.chown(p, uid, gid, follow_symlinks=False)
                os.chmod(p, mode)
