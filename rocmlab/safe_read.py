"""Reading a file someone else controls: a learner's hand-in or record, a sandboxed program's output, a path from
the command line. The one way rocmlab reads such a file (:func:`read_capped`; :func:`read_open_file` for one
already opened, e.g. below a folder descriptor).

What it guards against, all checked on the open file before a byte is read:

- a symbolic link the learner planted (or swapped in after the folder was listed) pointing at a file of the
  grader's or another learner's: the open does not follow it (``O_NOFOLLOW``; ``follow_links=True`` where the
  person who gave the path may name a link, as on the command line);
- a FIFO, a device, a socket or a folder: the open never blocks (``O_NONBLOCK``: a FIFO with no writer would
  hang the reader forever; ``O_NOCTTY``: a terminal never becomes ours), and anything but a regular file is
  refused;
- a huge file (a 256 MB "source", an output that fills the disk): its size is read from the open file first,
  and at most ``max_bytes + 1`` bytes are ever read, so a file that grows while it is read is seen too.

Every refusal is a :class:`ReadRefused` saying why (:data:`MISSING`, :data:`LINK`, :data:`UNOPENABLE`,
:data:`NOT_REGULAR`, :data:`TOO_BIG`, :data:`GREW`), from which each caller writes its own message; an error while
reading the open file (``EIO``) is the ``OSError`` itself. This module imports nothing of rocmlab: every room may
use it.
"""

from __future__ import annotations

import errno as _errno
import os
import stat
from collections.abc import Callable

#: Why a file was refused (:attr:`ReadRefused.why`).
MISSING = "missing"              # no such file (ENOENT)
LINK = "link"                    # a symbolic link, where links are not followed
UNOPENABLE = "unopenable"        # the open (or the look before it) failed otherwise: .error says how
NOT_REGULAR = "not regular"      # a folder, a FIFO, a device, a socket: .mode says which
TOO_BIG = "too big"              # its size is over the cap: .size
GREW = "grew"                    # it grew over the cap while it was read

_KINDS = ((stat.S_ISFIFO, "named pipe (FIFO)"), (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISDIR, "folder"), (stat.S_ISLNK, "symbolic link"),
          (stat.S_ISREG, "regular file"))


def kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words: "folder", "named pipe (FIFO)", "character device", ..."""
    return next((name for test, name in _KINDS if test(mode)), "special file")


class ReadRefused(Exception):
    """A file :func:`read_capped` would not read. ``why`` is one of the reasons above; ``error`` is the OSError of a
    failed open (``errno``, ``strerror``), ``mode`` the file's mode (:data:`NOT_REGULAR`, :data:`LINK`), ``size``
    its size (:data:`TOO_BIG`), ``limit`` the cap."""

    def __init__(self, why: str, path, *, error: OSError | None = None, mode: int = 0, size: int = 0,
                 limit: int = 0):
        self.why, self.path, self.error, self.mode, self.size, self.limit = why, path, error, mode, size, limit
        if error is not None:
            text = str(error)
        elif why == NOT_REGULAR:
            text = f"{path} is a {kind(mode)}, not a regular file"
        elif why == LINK:
            text = f"{path} is a symbolic link"
        elif why == TOO_BIG:
            text = f"{path} is {size} bytes, over the {limit} byte limit"
        else:
            text = f"{path} grew over the {limit} byte limit while it was read"
        super().__init__(text)

    @property
    def errno(self) -> int | None:
        return self.error.errno if self.error is not None else None

    @property
    def strerror(self) -> str | None:
        return self.error.strerror if self.error is not None else None


def _flags(follow_links: bool) -> int:
    return (os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
            | (0 if follow_links else os.O_NOFOLLOW))


def _refused_open(exc: OSError, path, follow_links: bool) -> ReadRefused:
    if exc.errno == _errno.ENOENT:
        return ReadRefused(MISSING, path, error=exc)
    if exc.errno == _errno.ELOOP and not follow_links:     # O_NOFOLLOW's answer to a link
        return ReadRefused(LINK, path, error=exc)
    return ReadRefused(UNOPENABLE, path, error=exc)


def _read_upto(fd: int, limit: int, size_hint: int) -> bytes:
    """At most ``limit`` bytes of the open file, read until its end (a short read is not its end)."""
    chunks, got = [], 0
    while got < limit:
        b = os.read(fd, min(limit - got, max(size_hint + 1 - got, 1 << 16)))
        if not b:
            break
        chunks.append(b)
        got += len(b)
    return b"".join(chunks)


def read_open_file(fd: int, max_bytes: int, *, path="", check: Callable[[os.stat_result], None] | None = None,
                   whole: bool = True, grown: str = "refuse") -> bytes:
    """The bytes of the open file ``fd`` (not closed here): a regular file (else :data:`NOT_REGULAR`), then
    ``check(fstat)`` (a caller's own test: the owner, the mode; it raises its own error), then the cap.

    ``whole=True``: the file must fit in ``max_bytes``: a larger one is :data:`TOO_BIG` (from its size, before it is
    read), and one that grows past the cap while it is read gives, after ``grown``: ``"refuse"`` :data:`GREW`,
    ``"cut"`` its first ``max_bytes``, ``"keep"`` the ``max_bytes + 1`` bytes read. ``whole=False``: the first
    ``max_bytes`` bytes, whatever its size (a file of which only the start matters)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise ReadRefused(NOT_REGULAR, path, mode=st.st_mode, limit=max_bytes)
    if check is not None:
        check(st)
    if not whole:
        return _read_upto(fd, max_bytes, st.st_size)
    if st.st_size > max_bytes:
        raise ReadRefused(TOO_BIG, path, size=st.st_size, limit=max_bytes)
    data = _read_upto(fd, max_bytes + 1, st.st_size)
    if len(data) > max_bytes:
        if grown == "cut":
            return data[:max_bytes]
        if grown != "keep":
            raise ReadRefused(GREW, path, size=len(data), limit=max_bytes)
    return data


def read_capped(path, max_bytes: int, *, follow_links: bool = False, look_first: bool = False,
                check: Callable[[os.stat_result], None] | None = None, whole: bool = True, grown: str = "refuse",
                dir_fd: int | None = None) -> bytes:
    """The bytes of the file at ``path`` (relative to the folder ``dir_fd`` when given), a regular file of at most
    ``max_bytes``, read as the module's docstring says. Raises :class:`ReadRefused`.

    ``follow_links=False`` (the default) refuses a symbolic link at ``path`` (:data:`LINK`); ``True`` follows it
    (a path a person typed). ``look_first=True`` also stats the path before opening it and refuses anything but
    a regular file unopened (opening a device can have effects of its own). ``check``, ``whole`` and ``grown``:
    see :func:`read_open_file`."""
    kw = {} if dir_fd is None else {"dir_fd": dir_fd}
    if look_first:
        try:
            st = os.stat(path, follow_symlinks=follow_links, **kw)
        except OSError as exc:
            raise _refused_open(exc, path, follow_links) from None
        if stat.S_ISLNK(st.st_mode):
            raise ReadRefused(LINK, path, mode=st.st_mode, limit=max_bytes)
        if not stat.S_ISREG(st.st_mode):
            raise ReadRefused(NOT_REGULAR, path, mode=st.st_mode, limit=max_bytes)
    try:
        fd = os.open(path, _flags(follow_links), **kw)
    except OSError as exc:
        raise _refused_open(exc, path, follow_links) from None
    try:
        return read_open_file(fd, max_bytes, path=path, check=check, whole=whole, grown=grown)
    finally:
        os.close(fd)
