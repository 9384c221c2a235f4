"""The hand-in exchange of a workshop, after nbgrader's: learners hand in, the instructor grades, feedback comes back.

Layout (``EXCHANGE`` is ``$ROCMLAB_EXCHANGE``, e.g. ``/srv/rocmlab/exchange``)::

    inbound/                          root, 0711: anyone may pass through, nobody may list it
    inbound/LEARNER/                  the learner's own, 0700: only they (and root) read or write it
    inbound/LEARNER/EXERCISE/STAMP.hip  one file per hand-in, never overwritten, never deleted
    outbound/feedback/                root, 0711
    outbound/feedback/LEARNER/        root:LEARNER's group, 0750: the learner reads, only the grader writes
    outbound/feedback/LEARNER/EXERCISE.{txt,html,json}
    grades/                           the instructor's, 0700: submissions/ (the latest hand-in of each
                                      learner), results/, feedback/, grades.csv, grades_by_check.csv

``STAMP`` is the UTC time in microseconds plus a random suffix, so names sort in hand-in order and two
hand-ins never share a name. Each is written to a hidden temporary file and renamed, so the grader never
sees half a file. Grading takes the latest hand-in of each learner (earlier ones stay where they are, nothing
is lost), grades it once (a result whose source hash matches is reused), and writes its feedback back.

Permissions do their job only where each learner's server runs as its own Unix user (TLJH's ``jupyter-NAME``,
Kubernetes pods with only their own folder mounted). Where every server runs as one user (a test hub with
``SimpleLocalProcessSpawner``), nothing stops one learner from reading another's folder.

The grader reads learners' folders as root: it opens every file without following links and only if it is
a regular file of at most :data:`MAX_HANDIN_BYTES`, so a hand-in cannot point the grader at someone else's file.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rocmlab.settings import RUN_TIME_LIMIT_S, env

#: A learner's name as JupyterHub and Unix allow it in a folder name.
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")
#: The largest hand-in accepted (a HIP source file is a few kB).
MAX_HANDIN_BYTES = 1 << 20
SUFFIXES = (".hip", ".cpp", ".cu")


class ExchangeError(ValueError):
    """A hand-in or a collection that cannot go ahead: the message says why and what to do."""


@dataclass(frozen=True)
class Handin:
    learner: str
    exercise: str
    path: Path       # inbound/LEARNER/EXERCISE/STAMP.hip
    count: int       # how many hand-ins this learner made for this exercise

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


def _check_name(learner: str) -> None:
    if not NAME_RE.match(learner or ""):
        raise ExchangeError(f"learner name {learner!r} is not usable as a folder name: use letters, digits and . _ @ + -")


def exchange_dir(exchange=None) -> Path:
    value = exchange or env("ROCMLAB_EXCHANGE")
    if not value:
        raise ExchangeError("no exchange folder: set ROCMLAB_EXCHANGE (the hub sets it for every learner) "
                            "or pass --exchange DIR")
    return Path(value)


def current_learner(learner=None) -> str:
    """The learner: given, else the hub's JUPYTERHUB_USER, else the Unix user."""
    name = learner or os.environ.get("JUPYTERHUB_USER") or os.environ.get("USER") or ""
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
    ex_dir = folder / exercise
    try:
        ex_dir.mkdir(mode=0o700, exist_ok=True)
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


def handin(exercise: str, source, learner: str | None = None, exchange=None) -> Path:
    """Hand in ``source`` (a file path) for ``exercise``; returns where it went. From a notebook or the CLI."""
    from rocmlab.grader.spec import load

    load(exercise)                       # an unknown id raises with the list of known ones
    src = Path(source)
    if not src.is_file():
        raise ExchangeError(f"no file {src} to hand in: give the path of your HIP source, e.g. vector_add.hip")
    data = src.read_bytes()
    if not data.strip():
        raise ExchangeError(f"{src} is empty: save your work first (File > Save), then hand it in")
    if len(data) > MAX_HANDIN_BYTES:
        raise ExchangeError(f"{src} is {len(data)} bytes, over the {MAX_HANDIN_BYTES} byte limit of a hand-in")
    suffix = src.suffix if src.suffix in SUFFIXES else ".hip"
    return write_handin(exchange_dir(exchange), current_learner(learner), exercise, data, suffix)


@dataclass
class Feedback:
    """What the grader sent back for one exercise; shows as HTML in a notebook."""

    exercise: str
    info: dict
    text: str
    html: str

    def _repr_html_(self) -> str:
        i = self.info
        head = (f"<p><b>{self.exercise}</b>: {i.get('earned', 0):g} / {i.get('possible', 0):g} points for your "
                f"hand-in {i.get('handin', '?')} (hand-in {i.get('count', 1)} of {i.get('count', 1)}; "
                f"graded {i.get('graded_at', '?')})</p>")
        return f"<div class='rocmlab-feedback'>{head}{self.html}</div>"

    def __str__(self) -> str:
        return self.text


def feedback(exercise: str, learner: str | None = None, exchange=None) -> Feedback:
    """The learner's feedback for ``exercise`` (``outbound/feedback/LEARNER/EXERCISE.*``)."""
    folder = exchange_dir(exchange) / "outbound" / "feedback" / current_learner(learner)
    info_path = folder / f"{exercise}.json"
    if not info_path.is_file():
        raise ExchangeError(f"no feedback for {exercise} yet in {folder}: the instructor has not graded your "
                            "hand-in; try again after `rocmlab grade --exchange` has run")
    return Feedback(exercise, json.loads(info_path.read_text()), (folder / f"{exercise}.txt").read_text(),
                    (folder / f"{exercise}.html").read_text())


# ----------------------------------------------------------------------------- instructor side

def _read_regular(path: Path) -> bytes | None:
    """The file's bytes if it is a regular file (not a link) of at most MAX_HANDIN_BYTES, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_HANDIN_BYTES:
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            return fh.read(MAX_HANDIN_BYTES + 1)
    finally:
        if fd >= 0:
            os.close(fd)


def _real_dirs(folder: Path):
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except FileNotFoundError:
        return []
    return [e for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]


def latest_handins(exchange, exercise: str) -> list[Handin]:
    """The latest hand-in of each learner for ``exercise`` (hidden temporary files and links are skipped)."""
    out = []
    for learner in _real_dirs(Path(exchange) / "inbound"):
        if not NAME_RE.match(learner.name):
            continue
        ex_dir = Path(learner.path) / exercise
        if not ex_dir.is_dir() or ex_dir.is_symlink():
            continue
        files = sorted(e.name for e in os.scandir(ex_dir)
                       if not e.name.startswith(".") and e.is_file(follow_symlinks=False)
                       and Path(e.name).suffix in SUFFIXES)
        if files:
            out.append(Handin(learner.name, exercise, ex_dir / files[-1], len(files)))
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


def collect(exchange, exercise: str, out) -> list[Handin]:
    """Copy each learner's latest hand-in to ``OUT/submissions/LEARNER/EXERCISE.SUFFIX`` for the grader.

    A copy whose content is unchanged is left as it is (its result is reused). Returns what was collected.
    """
    got = []
    for h in latest_handins(exchange, exercise):
        data = _read_regular(h.path)
        if data is None:
            continue
        dest_dir = Path(out) / "submissions" / h.learner
        for old in dest_dir.glob(f"{exercise}.*") if dest_dir.is_dir() else []:
            if old.suffix != h.path.suffix and old.suffix in SUFFIXES:
                old.unlink()
        dest = dest_dir / f"{exercise}{h.path.suffix}"
        if not dest.is_file() or dest.read_bytes() != data:
            _atomic_write(dest, data)
        _atomic_write(Path(out) / "collected" / f"{h.learner}__{exercise}.json",
                      json.dumps({"learner": h.learner, "exercise": exercise, "handin": h.path.name,
                                  "count": h.count}).encode())
        got.append(h)
    return got


def return_feedback(exchange, out, handins: list[Handin]) -> int:
    """Write each graded hand-in's feedback to ``outbound/feedback/LEARNER/`` (readable by that learner only)."""
    root = Path(exchange)
    n = 0
    for h in handins:
        result_path = Path(out) / "results" / f"{h.learner}__{h.exercise}.json"
        try:
            result = json.loads(result_path.read_text())
        except (OSError, ValueError):
            continue                       # not graded (yet): the next run does it
        inbound = root / "inbound" / h.learner
        gid = os.lstat(inbound).st_gid if os.geteuid() == 0 else None
        folder = _mkdir(root / "outbound" / "feedback" / h.learner, 0o750, 0 if gid is not None else None, gid)
        for ext in ("txt", "html"):
            src = Path(out) / "feedback" / h.learner / f"{h.exercise}.{ext}"
            _atomic_write(folder / f"{h.exercise}.{ext}", src.read_bytes(), 0o640)
        info = {"learner": h.learner, "exercise": h.exercise, "handin": h.path.name, "count": h.count,
                "sha": result.get("sha"), "earned": result.get("earned", 0.0), "possible": result.get("possible"),
                "graded_at": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(result_path.stat().st_mtime))}
        _atomic_write(folder / f"{h.exercise}.json", json.dumps(info).encode(), 0o640)
        if gid is not None:
            for f in folder.glob(f"{h.exercise}.*"):
                os.chown(f, 0, gid)
        n += 1
    return n


def grade_exchange(exchange, exercises: list[str], out=None, *, assignment: str = "", workers: int = 1,
                   seed: int | None = None, time_limit_s: float | None = None, progress: bool = True) -> dict:
    """Collect the latest hand-ins, grade them in the sandbox (:func:`rocmlab.grader.batch.grade_folder`),
    and return feedback to each learner. Resumable: run it again after a crash or after new hand-ins."""
    from rocmlab.grader import batch

    root = Path(exchange)
    if not (root / "inbound").is_dir():
        raise ExchangeError(f"{root} is not an exchange (no inbound/ folder): give the folder the hub's "
                            "ROCMLAB_EXCHANGE names, or make one with `rocmlab handin --prepare NAME --exchange DIR`")
    out = Path(out) if out else root / "grades"
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    handins = [h for e in exercises for h in collect(root, e, out)]
    if not handins:
        raise ExchangeError(f"nobody has handed in {', '.join(exercises)} in {root / 'inbound'} yet")
    counts = batch.grade_folder(out / "submissions", exercises, out, assignment=assignment, workers=workers,
                                seed=seed, time_limit_s=time_limit_s or RUN_TIME_LIMIT_S, progress=progress)
    counts["returned"] = return_feedback(root, out, handins)
    counts["learners"] = len({h.learner for h in handins})
    counts["handins"] = sum(h.count for h in handins)
    counts["out"] = str(out)
    return counts
