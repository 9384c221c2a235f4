"""Writing into a learner's home as root without following anything the learner planted there.

The hub runs as root and a learner owns their home: any name in it may be a symbolic link the learner made to
``/etc/shadow`` or to another learner's folder. Everything root writes there (the spawn hooks' JupyterLab
settings and PATH line, the instructor's hand-out) goes through this module, which never resolves a name by
path: it opens the home with ``O_NOFOLLOW``, checks that the learner owns it, and walks down one component
at a time from folder descriptors (``openat`` with ``O_NOFOLLOW``), checking the owner of every folder and
file it opens. A file is written to a fresh temporary name in its folder and renamed over the old name
(``renameat`` replaces a link, it never writes through one); what it creates it hands to the learner with
``fchown`` on the open descriptor. A link (or a hard link, a FIFO, a device) where a folder or a file is
expected is refused with :class:`PlantedLink`, whose message names the path and the fix; nothing outside the
learner's own files is read, written or chowned.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from rocmlab import safe_read

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class PlantedLink(PermissionError):
    """A name in a learner's space is a link or not what it should be: refused, never followed."""


def _refuse(path: Path, what: str) -> PlantedLink:
    return PlantedLink(f"{path} is {what}: refused (root never follows a learner's links); the learner removes it "
                       f"(rm {path}) and the step is tried again at their next server start or hand-out")


def _kind(dirfd: int, name: str) -> str:
    try:
        st = os.lstat(name, dir_fd=dirfd)
    except OSError:
        return "missing"
    if stat.S_ISLNK(st.st_mode):
        return f"a symbolic link (to {os.readlink(name, dir_fd=dirfd)})"
    if stat.S_ISDIR(st.st_mode):
        return "a folder"
    return "a file" if stat.S_ISREG(st.st_mode) else "a special file"


def open_home(home: Path, uid: int) -> int:
    """A descriptor of ``home``, which must be a real folder that ``uid`` owns."""
    try:
        fd = os.open(home, _DIR)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(home, "not a folder (a link or a file)") from None
        raise
    if os.fstat(fd).st_uid != uid:
        os.close(fd)
        raise _refuse(home, f"not owned by the learner (uid {uid})")
    return fd


def _open_dir(dirfd: int, name: str, path: Path, uid: int, gid: int, create: bool) -> int:
    try:
        fd = os.open(name, _DIR, dir_fd=dirfd)
    except FileNotFoundError:
        if not create:
            raise
        try:
            os.mkdir(name, 0o700, dir_fd=dirfd)
        except FileExistsError:
            pass
        try:
            fd = os.open(name, _DIR, dir_fd=dirfd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise _refuse(path, _kind(dirfd, name)) from None
            raise
        if os.fstat(fd).st_uid == os.geteuid() != uid:      # the folder root just made: the learner's
            os.fchown(fd, uid, gid)
            os.fchmod(fd, 0o755)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refuse(path, _kind(dirfd, name)) from None
        raise
    if os.fstat(fd).st_uid != uid:
        os.close(fd)
        raise _refuse(path, "a folder the learner does not own")
    return fd


def _parts(relpath: str) -> list[str]:
    parts = [p for p in str(relpath).split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise ValueError(f"{relpath!r}: give a path inside the learner's home (no '..', not empty)")
    return parts


def open_folder(home: Path, uid: int, gid: int, relpath: str = "", create: bool = True) -> int:
    """A descriptor of ``HOME/relpath`` (made, owned by the learner, where missing and ``create``)."""
    fd = open_home(home, uid)
    path = home
    try:
        for p in _parts(relpath) if relpath else []:
            path = path / p
            nxt = _open_dir(fd, p, path, uid, gid, create)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_file(home: Path, uid: int, relpath: str, limit: int = 1 << 20) -> bytes | None:
    """The learner's regular file ``HOME/relpath`` (None if missing; its first ``limit`` bytes), never through a
    link (:func:`rocmlab.safe_read.read_capped` below the folder's descriptor)."""
    *folder, name = _parts(relpath)
    not_own = "not the learner's own plain file (a special file or a hard link)"

    def own_plain_file(st) -> None:
        if st.st_uid != uid or st.st_nlink != 1:
            raise _refuse(home / relpath, not_own)

    try:
        dfd = open_folder(home, uid, -1, "/".join(folder), create=False)
    except FileNotFoundError:
        return None
    try:
        return safe_read.read_capped(name, limit, dir_fd=dfd, check=own_plain_file, whole=False)
    except safe_read.ReadRefused as exc:
        if exc.why == safe_read.MISSING:
            return None
        if exc.why == safe_read.NOT_REGULAR:
            raise _refuse(home / relpath, not_own) from None
        if exc.errno in (errno.ELOOP, errno.ENXIO):
            raise _refuse(home / relpath, _kind(dfd, name)) from None
        raise exc.error from None
    finally:
        os.close(dfd)


def write_file(home: Path, uid: int, gid: int, relpath: str, data: bytes, mode: int = 0o644,
               replace: bool = True) -> Path:
    """Write ``data`` to ``HOME/relpath`` as the learner's file (folders made as needed, theirs).

    The file is written under a temporary name and renamed into place, so a link at ``relpath`` is replaced,
    never written through; but a link (or a folder) there is refused with :class:`PlantedLink` first, so the
    learner learns why. ``replace=False`` keeps a file that is already there (returns its path)."""
    *folder, name = _parts(relpath)
    path = home / relpath
    dfd = open_folder(home, uid, gid, "/".join(folder), create=True)
    try:
        what = _kind(dfd, name)
        if what != "missing" and what != "a file":
            raise _refuse(path, what)
        if what == "a file" and not replace:
            return path
        tmp = f".{name}.rocmlab-{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fchown(fd, uid, gid)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)
        try:
            os.rename(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except OSError:
            os.unlink(tmp, dir_fd=dfd)
            raise
        return path
    finally:
        os.close(dfd)


def append_line(home: Path, uid: int, gid: int, relpath: str, line: str) -> bool:
    """Add ``line`` to the learner's text file ``HOME/relpath`` unless it is there; False if it was."""
    old = read_file(home, uid, relpath)
    text = (old or b"").decode("utf-8", "replace")
    if line in text:
        return False
    sep = "" if not text or text.endswith("\n") else "\n"
    write_file(home, uid, gid, relpath, (text + sep + line).encode(), 0o644)
    return True
