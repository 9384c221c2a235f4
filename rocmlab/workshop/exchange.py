"""The hand-in exchange of a workshop, after nbgrader's: learners hand in, the instructor grades, feedback comes back.

Layout (``EXCHANGE`` is ``$ROCMLAB_EXCHANGE``, e.g. ``/srv/rocmlab/exchange``)::

    inbound/                          root, 0711: anyone may pass through, nobody may list it
    inbound/LEARNER/                  the learner's own, 0700: only they (and root) read or write it
    inbound/LEARNER/ITEM/STAMP.SUFFIX one file per hand-in, never overwritten, never deleted
    outbound/feedback/                root, 0711
    outbound/feedback/LEARNER/        root:LEARNER's group, 0750: the learner reads, only the grader writes
    outbound/feedback/LEARNER/FLAT.{txt,html,json}
    grades/                           the instructor's, 0700: submissions/LEARNER/FLAT.SUFFIX (the latest
                                      hand-in of each learner), results/, feedback/, grades.csv,
                                      grades_by_check.csv, handins.json (the exchange's record of hand-ins)

**Item ids** (every graded item: an exercise ``vector-add``, a lab task ``08-mi300x-package/xcd-remap``, a
puzzle, a Lab 11 question): one or two names joined by one ``/``, each name 1-64 characters of letters,
digits and ``. _ -`` starting with a letter or digit (:data:`ITEM_RE`, :func:`check_item`). In inbound/ an id
with a ``/`` is two nested folders; in every flat file name the exchange writes (``FLAT`` above) the ``/`` is
written ``+`` (:func:`flat_item`; ``+`` is never part of a name, so the mapping is one to one). A hand-in is
a text file (UTF-8, no NUL bytes, at most :data:`MAX_HANDIN_BYTES`) whose suffix is one of :data:`SUFFIXES`
(another suffix is stored as ``.hip``).

``STAMP`` is the UTC time in microseconds plus a random suffix, so two hand-ins never share a name. Each is
written to a hidden temporary file and renamed, so the grader never sees half a file. Grading takes the latest
hand-in of each learner (earlier ones stay where they are, nothing is lost), grades it once (a result whose
source hash matches is reused), and writes its feedback back.

**Which hand-in is the latest** is decided from what the learner cannot write: the kernel's record of the
file (its owner, and its inode change time ``ctime``, which every write, rename or chmod moves to the present
and no call can set back), never from the file name alone. A hand-in counts only when its name's stamp agrees
with that record (the rename that handed it in happened within :data:`STAMP_SLACK_S` of the stamp): a name
stamped in the future (``99991231T...``) or an old hand-in edited afterwards (its ctime moved on) is refused
and reported to the instructor (``grade_exchange``'s ``refused``), and the newest hand-in that is still as it
was handed in is graded. The grader also keeps its own record, ``grades/handins.json`` (the hash and ctime of
every hand-in it has seen): a file that changed since it was first collected is refused too. Copy an exchange
with its times kept (``cp -a`` keeps mtime, not ctime: move the disk, or re-grade before copying), since a copy
looks edited to this check.

Permissions do their job only where each learner's server runs as its own Unix user (TLJH's ``jupyter-NAME``,
Kubernetes pods with only their own folder mounted). Where every server runs as one user (a test hub with
``SimpleLocalProcessSpawner``), nothing stops one learner from reading another's folder.

The grader reads learners' folders as root: it opens every file without following links and only if it is
a regular file of at most :data:`MAX_HANDIN_BYTES`, so a hand-in cannot point the grader at someone else's file.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import html
import json
import os
import re
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rocmlab import safe_read
from rocmlab.settings import RUN_TIME_LIMIT_S, env

#: A learner's name as JupyterHub and Unix allow it in a folder name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
#: A graded item's id: one or two names joined by one "/" (see the module's docstring).
ITEM_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}(/[A-Za-z0-9][A-Za-z0-9._-]{0,63})?$")
#: The largest hand-in accepted (a HIP source file is a few kB).
MAX_HANDIN_BYTES = 1 << 20
#: The size of a learner's ``inbound/LEARNER`` where the hub caps disks (a file system of its own, as the home):
#: hundreds of hand-ins of the largest size, while one learner can no longer fill the exchange's disk.
INBOUND_BYTES = 256 << 20
#: Suffixes a hand-in keeps (HIP/C++/CUDA sources, Python, JSON answers); any other is stored as .hip.
SUFFIXES = (".hip", ".cpp", ".cu", ".py", ".json")
#: Seconds allowed between a hand-in's stamp (its name) and the kernel's change time of the file.
STAMP_SLACK_S = 120.0
_STAMP_RE = re.compile(r"^(\d{8}T\d{6})(\d{6})Z-[0-9a-f]{6}$")


class ExchangeError(ValueError):
    """A hand-in or a collection that cannot go ahead: the message says why and what to do."""


@dataclass(frozen=True)
class Handin:
    learner: str
    exercise: str
    path: Path       # inbound/LEARNER/ITEM/STAMP.SUFFIX
    count: int       # how many hand-ins this learner made for this item
    ctime: float = 0.0   # when it was handed in: the kernel's change time of the file (the learner cannot set it)

    @property
    def stamp(self) -> str:
        return self.path.stem


# ----------------------------------------------------------------------------- layout

def _mkdir(path: Path, mode: int, uid: int | None = None, gid: int | None = None, chown=os.chown) -> Path:
    """A real folder (never a link) with exactly ``mode``, owned by uid:gid where given and we are root."""
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise ExchangeError(f"{path} exists but is not a folder (a link or a file): remove it and retry")
    except FileNotFoundError:
        path.mkdir(mode=0o700)
    if (uid is not None or gid is not None) and os.geteuid() == 0:
        chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    os.chmod(path, mode)
    return path


def prepare(exchange) -> Path:
    """The exchange's top folders (run by root, or the instructor's user where all share one)."""
    root = Path(exchange)
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o711)
    _mkdir(root / "inbound", 0o711)
    _mkdir(root / "outbound", 0o711)
    _mkdir(root / "outbound" / "feedback", 0o711)
    _mkdir(root / "grades", 0o700)
    return root


def prepare_learner(exchange, learner: str, uid: int | None = None, gid: int | None = None, chown=os.chown) -> Path:
    """``inbound/LEARNER`` (theirs, 0700) and ``outbound/feedback/LEARNER`` (theirs to read, 0750)."""
    _check_name(learner)
    root = prepare(exchange)
    inbound = _mkdir(root / "inbound" / learner, 0o700, uid, gid, chown)
    _mkdir(root / "outbound" / "feedback" / learner, 0o750, 0 if gid is not None else None, gid, chown)
    return inbound


def check_item(item: str) -> str:
    """``item`` if it is a usable item id (:data:`ITEM_RE`), else :class:`ExchangeError` naming the rule."""
    if not isinstance(item, str) or not ITEM_RE.match(item) or any(p.strip(".") == "" for p in item.split("/")):
        shown = repr(item) if len(str(item)) <= 80 else repr(str(item)[:60]) + f"... ({len(str(item))} characters)"
        raise ExchangeError(f"item id {shown} is not usable (no exercise or graded item is named so): give one or two names joined by one '/', each 1-64 "
                            "letters, digits, '.', '_' or '-' starting with a letter or digit (e.g. vector-add or "
                            "08-mi300x-package/xcd-remap)")
    return item


def flat_item(item: str) -> str:
    """The item id as one file name: its '/' written '+' (never part of a name, so it maps back)."""
    return check_item(item).replace("/", "+")


def stamp_time(name: str) -> float | None:
    """The UTC time (seconds) a hand-in's file name claims, or None if the name is not a stamp."""
    m = _STAMP_RE.match(os.path.splitext(name)[0])
    if not m:
        return None
    import calendar

    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) + int(m.group(2)) / 1e6
    except ValueError:
        return None


def _check_name(learner: str) -> None:
    if not NAME_RE.match(learner or ""):
        raise ExchangeError(f"learner name {learner!r} is not usable as a folder name: use letters, digits and . _ @ + -")


def exchange_dir(exchange=None) -> Path:
    value = exchange or env("ROCMLAB_EXCHANGE")
    if not value:
        raise ExchangeError("no exchange folder: set ROCMLAB_EXCHANGE (the hub sets it for every learner) "
                            "or pass --exchange DIR")
    return Path(value)


def _login_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:            # a uid with no passwd entry
        return ""


def current_learner(learner=None) -> str:
    """The learner: given, else the hub's JUPYTERHUB_USER, else the Unix user ($USER, else the login name of this
    process's user: a container often sets no USER)."""
    name = learner or os.environ.get("JUPYTERHUB_USER") or os.environ.get("USER") or _login_name()
    if not name:
        raise ExchangeError("who is handing in? not run under JupyterHub (no JUPYTERHUB_USER): pass --learner NAME")
    _check_name(name)
    return name


# ----------------------------------------------------------------------------- learner side

def new_stamp() -> str:
    t = time.time_ns()
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime(t // 10**9)) + f"{(t // 1000) % 10**6:06d}Z-{secrets.token_hex(3)}"


def write_handin(exchange, learner: str, exercise: str, data: bytes, suffix: str = ".hip") -> Path:
    """Put ``data`` into ``inbound/LEARNER/EXERCISE/STAMP.SUFFIX``, whole or not at all. No checks of content."""
    folder = Path(exchange) / "inbound" / learner
    if not folder.is_dir():
        raise ExchangeError(f"no hand-in folder {folder}: the hub makes it when your server starts; ask the "
                            f"instructor to run `rocmlab handin --prepare {learner} --exchange {exchange}`")
    check_item(exercise)
    ex_dir = folder / exercise
    try:
        for d in (folder / exercise.split("/")[0], ex_dir):
            d.mkdir(mode=0o700, exist_ok=True)
    except PermissionError:
        raise ExchangeError(f"cannot write to {folder}: it belongs to another user (log in as {learner})") from None
    final = ex_dir / f"{new_stamp()}{suffix}"
    fd, tmp = tempfile.mkstemp(prefix=".handin-", suffix=".tmp", dir=ex_dir)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return final


def handin(item: str, source, learner: str | None = None, exchange=None) -> Path:
    """Hand in ``source`` (a file path) for the graded item ``item`` (an id of the module's rule); returns
    where it went. From a notebook or the CLI."""
    check_item(item)
    exercise = item
    src = Path(source)
    data = _read_source(src)
    suffix = src.suffix if src.suffix in SUFFIXES else ".hip"
    return write_handin(exchange_dir(exchange), current_learner(learner), exercise, data, suffix)


def _read_source(src: Path) -> bytes:
    """The hand-in's bytes, with its size checked on the open file before anything is read
    (:func:`rocmlab.safe_read.read_capped`; links followed: the learner hands in their own file), and refused
    when it is not text a compiler reads (NUL bytes, as ``rocmlab hip`` refuses them)."""
    try:
        data = safe_read.read_capped(src, MAX_HANDIN_BYTES, follow_links=True)
    except safe_read.ReadRefused as exc:
        if exc.error is not None:
            raise ExchangeError(f"no file {src} to hand in ({exc.strerror}): give the path of your HIP source, "
                                "e.g. vector_add.hip") from None
        if exc.why == safe_read.NOT_REGULAR:
            raise ExchangeError(f"{src} is not a regular file: give the path of your answer, e.g. vector_add.hip") from None
        if exc.why == safe_read.TOO_BIG:
            raise ExchangeError(f"{src} is {exc.size} bytes, over the {MAX_HANDIN_BYTES} byte limit of a hand-in: "
                                "hand in only your source or answer file") from None
        raise ExchangeError(f"{src} grew over the {MAX_HANDIN_BYTES} byte limit of a hand-in while it was read") from None
    if not data.strip():
        raise ExchangeError(f"{src} is empty: save your work first (File > Save), then hand it in")
    if b"\0" in data:
        raise ExchangeError(f"{src} is a binary file (it has NUL bytes), not a HIP/CUDA source: hand in the .hip "
                            "or .cu text file")
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ExchangeError(f"{src} is not UTF-8 text: convert it (iconv -f latin1 -t utf-8 {src} > fixed.hip) "
                            "and hand in fixed.hip") from None
    return data


@dataclass
class Feedback:
    """What the grader sent back for one exercise; shows as HTML in a notebook."""

    exercise: str
    info: dict
    text: str
    html: str

    def _repr_html_(self) -> str:
        i = self.info
        def esc(v) -> str:                          # every name in the view is escaped
            return html.escape(str(v))

        head = (f"<p><b>{esc(self.exercise)}</b>: {float(i.get('earned') or 0):g} / {float(i.get('possible') or 0):g} "
                f"points for your hand-in {esc(i.get('handin', '?'))} (hand-in {esc(i.get('count', 1))} of "
                f"{esc(i.get('count', 1))}; graded {esc(i.get('graded_at', '?'))})</p>")
        return f"<div class='rocmlab-feedback'>{head}{self.html}</div>"

    def __str__(self) -> str:
        return self.text


def feedback(item: str, learner: str | None = None, exchange=None) -> Feedback:
    """The learner's feedback for ``item`` (``outbound/feedback/LEARNER/FLAT.*``, :func:`flat_item`)."""
    exercise = item
    flat = flat_item(item)            # a path or a 300-character name is refused with the rule
    folder = exchange_dir(exchange) / "outbound" / "feedback" / current_learner(learner)
    info_path = folder / f"{flat}.json"
    if not info_path.is_file():
        raise ExchangeError(f"no feedback for {exercise} yet in {folder}: the instructor has not graded your "
                            "hand-in; try again after `rocmlab grade --exchange` has run")
    return Feedback(exercise, json.loads(info_path.read_text()), (folder / f"{flat}.txt").read_text(),
                    (folder / f"{flat}.html").read_text())


# ----------------------------------------------------------------------------- instructor side
#
# The grader runs as root and reads folders the learners own. Every step below the exchange's own
# ``inbound/`` folder is opened relative to the previous folder's file descriptor, never by a path: with
# openat2's RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has it, else one component at a time with
# O_NOFOLLOW. A learner who swaps their EXERCISE folder (or a hand-in) for a symbolic link while grading runs
# makes the open fail: their hand-in is not collected this time, and nobody else's file is ever read. What
# was opened must belong to the owner of the learner's folder.

_SYS_OPENAT2 = 437                      # the same number on every architecture (the unified syscall table)
_RESOLVE_NO_MAGICLINKS, _RESOLVE_NO_SYMLINKS, _RESOLVE_BENEATH = 0x02, 0x04, 0x08
_openat2_state: list = []               # [libc.syscall] once it is known to work, [None] once it is known not to


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _openat2(dirfd: int, name: str, flags: int) -> int | None:
    """openat2(dirfd, name, flags, RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS); None when the
    kernel (or a seccomp filter) does not have it. Raises OSError for a refused open."""
    if _openat2_state == [None]:
        return None
    if not _openat2_state:
        try:
            _openat2_state.append(ctypes.CDLL(None, use_errno=True).syscall)
        except (OSError, AttributeError):
            _openat2_state.append(None)
            return None
    how = _OpenHow(flags | os.O_CLOEXEC, 0, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _openat2_state[0](ctypes.c_long(_SYS_OPENAT2), ctypes.c_int(dirfd), ctypes.c_char_p(os.fsencode(name)),
                           ctypes.byref(how), ctypes.c_size_t(ctypes.sizeof(how)))
    if fd >= 0:
        return fd
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.E2BIG):     # an older kernel, or a seccomp filter that does not know it
        _openat2_state[:] = [None]
        return None
    raise OSError(err, os.strerror(err), name)


def open_beneath(dirfd: int, rel: str, flags: int) -> int:
    """Open ``rel`` (NAME or NAME/NAME...) below the folder ``dirfd`` without following any symbolic link
    and without leaving it. Raises OSError (ELOOP, ENOTDIR, EXDEV...) for a link or an escape."""
    parts = rel.split("/")
    if not parts or any(p in ("", ".", "..") for p in parts):
        raise OSError(errno.EINVAL, "not a plain relative name", rel)
    fd = _openat2(dirfd, rel, flags | os.O_NOFOLLOW)
    if fd is not None:
        return fd
    cur, owned = dirfd, False
    try:
        for p in parts[:-1]:
            nxt = os.open(p, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=cur)
            if owned:
                os.close(cur)
            cur, owned = nxt, True
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=cur)
    finally:
        if owned:
            os.close(cur)


def _listdir(fd: int) -> list[str]:
    try:
        return sorted(os.listdir(fd))
    except OSError:
        return []


def _read_fd(fd: int, owner: int) -> bytes | None:
    """The bytes of the open file ``fd`` if it is a regular file of ``owner`` of at most MAX_HANDIN_BYTES
    (:func:`rocmlab.safe_read.read_open_file`), else None."""
    if os.fstat(fd).st_uid != owner:
        return None
    try:
        return safe_read.read_open_file(fd, MAX_HANDIN_BYTES)
    except safe_read.ReadRefused:
        return None


def stamp_problem(name: str, ctime: float) -> str:
    """'' when the hand-in ``name`` is as it was handed in (its stamp agrees with the kernel's change time of
    the file, within :data:`STAMP_SLACK_S`), else what is wrong with it."""
    claimed = stamp_time(name)
    if claimed is None:
        return "its name is not a hand-in stamp (made by hand, not by rocmlab handin)"
    if claimed > ctime + 2.0:
        return (f"its name claims {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(claimed))} UTC, after the file "
                f"was last changed ({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(ctime))} UTC): a planted name")
    if ctime - claimed > STAMP_SLACK_S:
        return (f"it was changed {ctime - claimed:.0f} s after it was handed in "
                f"({time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime(ctime))} UTC)")
    return ""


@dataclass(frozen=True)
class Refused:
    """A file in a learner's hand-in folder that is not graded, and why."""

    learner: str
    exercise: str
    name: str
    reason: str


def _learner_handin(inbound_fd: int, learner: str, exercise: str, accept=None,
                    refused: list | None = None) -> tuple[str, int, bytes, float] | None:
    """(file name, hand-in count, bytes, ctime) of the learner's latest hand-in, read through folder descriptors
    (see above), or None when there is none. The latest is the one with the newest change time (the kernel's,
    read from the open file) among files that are the learner's own regular files and whose stamp agrees with
    that time (:func:`stamp_problem`) and that ``accept(name, data, ctime)`` does not refuse (it returns a
    reason, or ''). Files passed over are appended to ``refused``."""
    try:
        lfd = open_beneath(inbound_fd, learner, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        owner = os.fstat(lfd).st_uid
        try:
            efd = open_beneath(lfd, exercise, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            if os.fstat(efd).st_uid != owner:
                return None
            with os.scandir(efd) as it:
                entries = [e for e in it if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                           and os.path.splitext(e.name)[1] in SUFFIXES]
            times = {}
            for e in entries:
                try:
                    times[e.name] = e.stat(follow_symlinks=False).st_ctime
                except OSError:
                    continue
            for name in sorted(times, key=lambda n: (times[n], n), reverse=True):    # newest change first
                try:
                    ffd = open_beneath(efd, name, os.O_RDONLY | os.O_NONBLOCK)
                except OSError:
                    continue
                try:
                    ctime = os.fstat(ffd).st_ctime
                    data = _read_fd(ffd, owner)
                finally:
                    os.close(ffd)
                if data is None:
                    continue
                why = stamp_problem(name, ctime) or (accept(name, data, ctime) if accept else "")
                if why:
                    if refused is not None:
                        refused.append(Refused(learner, exercise, name, why))
                    continue
                return name, len(times), data, ctime
            return None
        finally:
            os.close(efd)
    finally:
        os.close(lfd)


def _inbound_fd(exchange) -> int | None:
    try:
        return os.open(Path(exchange) / "inbound", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None


def latest_handins(exchange, exercise: str, refused: list | None = None) -> list[Handin]:
    """The latest hand-in of each learner for ``exercise`` (hidden temporary files, links, files another user
    owns, and hand-ins whose name or content changed after they were handed in are skipped; those last are
    appended to ``refused``). Read through folder descriptors: see :func:`collect`."""
    return [h for h, _ in _latest(exchange, exercise, refused=refused)]


def _latest(exchange, exercise: str, accept_for=None, refused: list | None = None) -> list[tuple[Handin, bytes]]:
    check_item(exercise)
    fd = _inbound_fd(exchange)
    if fd is None:
        return []
    out = []
    try:
        for learner in _listdir(fd):
            if not NAME_RE.match(learner):
                continue
            got = _learner_handin(fd, learner, exercise, accept_for(learner) if accept_for else None, refused)
            if got is not None:
                name, count, data, ctime = got
                out.append((Handin(learner, exercise, Path(exchange) / "inbound" / learner / exercise / name, count,
                                   ctime), data))
    finally:
        os.close(fd)
    return out


def _atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _ledger(out) -> tuple[Path, dict]:
    path = Path(out) / "handins.json"
    try:
        return path, json.loads(path.read_text())
    except (OSError, ValueError):
        return path, {}


def collect(exchange, exercise: str, out, refused: list | None = None) -> list[Handin]:
    """Copy each learner's latest hand-in to ``OUT/submissions/LEARNER/FLAT.SUFFIX`` for the grader.

    The grader's record ``OUT/handins.json`` keeps the hash and change time of every hand-in collected: one
    whose content differs from its record is refused (appended to ``refused``) and the learner's previous
    hand-in is taken. A copy whose content is unchanged is left as it is (its result is reused). Returns what
    was collected.
    """
    import hashlib

    flat = flat_item(exercise)
    ledger_path, ledger = _ledger(out)

    def accept_for(learner):
        def accept(name, data, ctime):
            seen = ledger.get(f"{learner}/{exercise}/{name}")
            if seen and seen["sha"] != hashlib.sha256(data).hexdigest():
                return "its content changed after the grader first collected it"
            return ""
        return accept

    got = []
    for h, data in _latest(exchange, exercise, accept_for, refused):
        ledger.setdefault(f"{h.learner}/{exercise}/{h.path.name}",
                          {"sha": hashlib.sha256(data).hexdigest(), "ctime": h.ctime,
                           "collected": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())})
        dest_dir = Path(out) / "submissions" / h.learner
        for old in dest_dir.glob(f"{flat}.*") if dest_dir.is_dir() else []:
            if old.suffix != h.path.suffix and old.suffix in SUFFIXES:
                old.unlink()
        dest = dest_dir / f"{flat}{h.path.suffix}"
        if not dest.is_file() or dest.read_bytes() != data:
            _atomic_write(dest, data)
        _atomic_write(Path(out) / "collected" / f"{h.learner}__{flat}.json",
                      json.dumps({"learner": h.learner, "exercise": exercise, "handin": h.path.name,
                                  "count": h.count, "handed_in": time.strftime(
                                      "%Y-%m-%d %H:%M:%S UTC", time.gmtime(h.ctime))}).encode())
        got.append(h)
    _atomic_write(ledger_path, json.dumps(ledger, indent=1, sort_keys=True).encode())
    return got


def return_feedback(exchange, out, handins: list[Handin]) -> int:
    """Write each graded hand-in's feedback to ``outbound/feedback/LEARNER/`` (readable by that learner only)."""
    root = Path(exchange)
    n = 0
    for h in handins:
        flat = flat_item(h.exercise)
        result_path = Path(out) / "results" / f"{h.learner}__{flat}.json"
        try:
            result = json.loads(result_path.read_text())
        except (OSError, ValueError):
            continue                       # not graded (yet): the next run does it
        if result.get("status", "graded") == "error":
            continue                       # a fault of the machine: no grade to return; the next run grades it
        inbound = root / "inbound" / h.learner
        gid = os.lstat(inbound).st_gid if os.geteuid() == 0 else None
        folder = _mkdir(root / "outbound" / "feedback" / h.learner, 0o750, 0 if gid is not None else None, gid)
        for ext in ("txt", "html"):
            src = Path(out) / "feedback" / h.learner / f"{flat}.{ext}"
            _atomic_write(folder / f"{flat}.{ext}", src.read_bytes(), 0o640)
        info = {"learner": h.learner, "exercise": h.exercise, "handin": h.path.name, "count": h.count,
                "sha": result.get("sha"), "earned": result.get("earned", 0.0), "possible": result.get("possible"),
                "graded_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(result_path.stat().st_mtime))}
        _atomic_write(folder / f"{flat}.json", json.dumps(info).encode(), 0o640)
        if gid is not None:
            for f in folder.glob(f"{flat}.*"):
                os.chown(f, 0, gid)
        n += 1
    return n


def grade_exchange(exchange, exercises: list[str], out=None, *, assignment: str = "", workers: int = 1,
                   seed: int | None = None, time_limit_s: float | None = None, progress: bool = True) -> dict:
    """Collect the latest hand-ins, grade them in the sandbox (:func:`rocmlab.grader.batch.grade_folder`),
    and return feedback to each learner. Resumable: run it again after a crash or after new hand-ins."""
    from rocmlab import sandbox
    from rocmlab.grader import batch

    refused_here = sandbox.of_record()
    if refused_here:            # before anything is collected: no copy of a hand-in is made for a grade never made
        raise ExchangeError(f"nothing graded: {refused_here}")
    root = Path(exchange)
    if not (root / "inbound").is_dir():
        raise ExchangeError(f"{root} is not an exchange (no inbound/ folder): give the folder the hub's "
                            "ROCMLAB_EXCHANGE names, or make one with `rocmlab handin --prepare NAME --exchange DIR`")
    out = Path(out) if out else root / "grades"
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    refused: list[Refused] = []
    handins = [h for e in exercises for h in collect(root, e, out, refused)]
    if not handins:
        raise ExchangeError(f"nobody has handed in {', '.join(exercises)} in {root / 'inbound'} yet")
    counts = batch.grade_folder(out / "submissions", exercises, out, assignment=assignment, workers=workers,
                                seed=seed, time_limit_s=time_limit_s or RUN_TIME_LIMIT_S, progress=progress)
    counts["returned"] = return_feedback(root, out, handins)
    counts["learners"] = len({h.learner for h in handins})
    counts["handins"] = sum(h.count for h in handins)
    counts["out"] = str(out)
    counts["refused"] = refused
    return counts
