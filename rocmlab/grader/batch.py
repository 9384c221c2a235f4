"""Grade a folder of submissions: in parallel, resumable, with atomic writes and gradebook CSVs.

Layout: ``SUBMISSIONS/<learner>/<exercise-id>.hip`` (several exercises) or ``SUBMISSIONS/<learner>.hip`` /
``SUBMISSIONS/<learner>/<any>.hip`` (one exercise, given with ``--exercise``). Results go to ``OUT/``:

- ``results/<learner>__<exercise>.json``: one report each, written to a temporary file and renamed, so a
  killed run leaves only whole results; a rerun skips every result whose source hash still matches;
- ``feedback/<learner>/<exercise>.txt`` and ``.html``: what the learner reads (the same text as the widget);
- ``grades.csv``: nbgrader's gradebook columns (assignment, duedate, timestamp, student_id, last_name,
  first_name, email, raw_score, late_submission_penalty, score, max_score), one row per learner;
- ``grades_by_check.csv``: otter-grader's shape (file, one column per check, total, possible).
Both CSVs are rebuilt from ``results/`` each time, so rows are never lost or duplicated.

Hand-ins are read as the grader's own files, never followed: a symbolic link in the submissions folder
(to /etc/shadow, to another learner's hand-in) is refused with a message and never read; only regular files
up to ``MAX_SUBMISSION_BYTES`` are graded. A result whose report says ``status: error`` (a fault of the
machine) is not cached: the next run grades it again. Ctrl-C or SIGTERM ends every worker and every
sandboxed program within ``settings.SANDBOX_KILL_WAIT_S`` and keeps the results already written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import signal
import stat
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import yaml

from rocmlab import settings
from rocmlab.grader.spec import load
from rocmlab.sandbox import sigterm_raises_terminated

SUFFIXES = (".hip", ".cpp", ".cu")
#: A hand-in larger than this is not read (a HIP exercise is a few KB; the static analysis has a time limit).
MAX_SUBMISSION_BYTES = 2 << 20

NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                    "raw_score", "late_submission_penalty", "score", "max_score")


class BatchError(ValueError):
    pass


@dataclass(frozen=True)
class Job:
    learner: str
    exercise: str
    path: str
    sha: str
    refused: str = ""     # why this hand-in is not read (a symbolic link, too large): a learner's message

    @property
    def key(self) -> str:
        return f"{self.learner}__{self.exercise}"


def load_assignment(path) -> tuple[str, list[str]]:
    """An assignment file (YAML): ``name: lab02`` and ``exercises: [vector-add, ...]``."""
    p = Path(path)
    if not p.is_file():
        raise BatchError(f"no assignment file {p}")
    raw = yaml.safe_load(p.read_text()) or {}
    if not isinstance(raw, dict) or not raw.get("exercises"):
        raise BatchError(f"{p} lists no exercises: write 'name: NAME' and 'exercises: [ID, ...]'")
    return str(raw.get("name", p.stem)), [str(e) for e in raw["exercises"]]


def _walk(entry: Path) -> tuple[list[Path], list[Path]]:
    """Regular files with a source suffix under a learner's folder, and the symbolic links met (never followed)."""
    files, links = [], []
    for dirpath, dirnames, filenames in os.walk(entry, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            if p.is_symlink():
                links.append(p)
            elif name in filenames and p.suffix in SUFFIXES and stat.S_ISREG(p.lstat().st_mode):
                files.append(p)
        dirnames[:] = sorted(d for d in dirnames if not (Path(dirpath) / d).is_symlink())
    return sorted(files), sorted(links)


def _link_sha(p: Path) -> str:
    return hashlib.sha256(b"symlink:" + os.readlink(p).encode(errors="replace")).hexdigest()


def read_submission(path) -> bytes:
    """A hand-in's bytes, refusing symbolic links (even one swapped in after the folder was listed),
    anything but a regular file, and files over MAX_SUBMISSION_BYTES. Raises BatchError with the learner's fix."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if os.path.islink(path):
            raise BatchError(f"{Path(path).name} is a symbolic link: hand in the file itself") from None
        raise BatchError(f"cannot read {Path(path).name} ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise BatchError(f"{Path(path).name} is not a regular file: hand in the source file itself")
        if st.st_size > MAX_SUBMISSION_BYTES:
            raise BatchError(f"{Path(path).name} is {st.st_size / 1e6:.1f} MB, over the {MAX_SUBMISSION_BYTES >> 20} "
                             "MiB limit: hand in only your HIP source")
        return f.read(MAX_SUBMISSION_BYTES + 1)


def find_jobs(submissions, exercises: list[str]) -> list[Job]:
    root = Path(submissions)
    if not root.is_dir():
        raise BatchError(f"no submissions folder {root}: pass a folder with one file or folder per learner")
    for e in exercises:
        load(e)  # raises with the list of known ids
    jobs = []
    single = len(exercises) == 1
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        link = entry.is_symlink()
        is_file = not link and stat.S_ISREG(entry.lstat().st_mode)
        learner = entry.stem if (is_file or link) and entry.suffix in SUFFIXES else entry.name
        if link:
            files, links = [], [entry]
        elif is_file:
            files, links = ([entry] if entry.suffix in SUFFIXES else []), []
        elif entry.is_dir():
            files, links = _walk(entry)
        else:
            continue
        for ex in exercises:
            if is_file:
                cand = files if single else []
            else:
                cand = [p for p in files if p.stem == ex] or (files if single else [])
            if cand:
                try:
                    data = read_submission(cand[0])
                    jobs.append(Job(learner, ex, str(cand[0]), hashlib.sha256(data).hexdigest()))
                except BatchError as exc:
                    st = cand[0].stat()
                    jobs.append(Job(learner, ex, str(cand[0]), f"refused:{st.st_size}:{st.st_mtime_ns}", str(exc)))
                continue
            bad = [p for p in links if p.stem == ex or (single and (p.suffix in SUFFIXES or p == entry))]
            if bad:
                jobs.append(Job(learner, ex, str(bad[0]), _link_sha(bad[0]),
                                f"{bad[0].name} is a symbolic link: the grader does not follow links; "
                                "hand in the file itself"))
    if not jobs:
        raise BatchError(f"no submissions found in {root} for {', '.join(exercises)}: expected "
                         "LEARNER.hip or LEARNER/EXERCISE.hip")
    return jobs


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:        # an interrupt mid-write leaves no temporary file
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _grade_one(job: Job, out: str, seed: int | None, time_limit_s: float | None) -> dict:
    from rocmlab import grader

    try:
        if job.refused:
            report = grader.refused(job.exercise, job.refused)
        else:
            source = read_submission(job.path).decode(errors="replace")
            report = grader.check(job.exercise, source, seed=seed, time_limit_s=time_limit_s)
        d = report.to_json()
        text, page = report.to_text(), report.to_html()
    except BatchError as exc:   # the hand-in changed since it was listed (now a link, too large): the learner's
        report = grader.refused(job.exercise, str(exc))
        d, text, page = report.to_json(), report.to_text(), report.to_html()
    except Exception as exc:   # a grader bug: reported, never cached (status error)
        d = {"exercise": job.exercise, "status": "error", "error": f"{type(exc).__name__}: {exc}", "earned": 0.0,
             "available": 0.0,
             "possible": grader.load(job.exercise).possible, "checks": []}
        text, page = f"{job.exercise}: not graded: {d['error']}", f"<p>not graded: {d['error']}</p>"
    d.update(learner=job.learner, sha=job.sha, path=job.path)
    outp = Path(out)
    atomic_write(outp / "feedback" / job.learner / f"{job.exercise}.txt", text + "\n")
    atomic_write(outp / "feedback" / job.learner / f"{job.exercise}.html", page)
    atomic_write(outp / "results" / f"{job.key}.json", json.dumps(d))   # last: its presence means done
    return d


def _done(job: Job, out: Path) -> bool:
    """Graded already: a result for the same source that is not a machine fault (status error is never cached)."""
    p = out / "results" / f"{job.key}.json"
    try:
        d = json.loads(p.read_text())
    except (OSError, ValueError):
        return False
    return d.get("sha") == job.sha and d.get("status", "graded") == "graded" and not d.get("error")


def grade_folder(submissions, exercises: list[str], out, *, assignment: str = "", workers: int = 1,
                 seed: int | None = None, time_limit_s: float | None = None, progress: bool = True) -> dict:
    """Grade every submission; returns counts. Already-graded (same source) results are skipped."""
    out = Path(out)
    jobs = find_jobs(submissions, exercises)
    todo = [j for j in jobs if not _done(j, out)]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="grading", unit="submission")
    with sigterm_raises_terminated():   # SIGTERM ends the workers and their sandboxes, keeps finished results
        if workers <= 1:
            for j in todo:
                _grade_one(j, str(out), seed, time_limit_s)
                bar and bar.update(1)
        else:
            _grade_parallel(todo, out, seed, time_limit_s, workers, bar)
    if bar:
        bar.close()
    write_csvs(out, jobs, assignment or (exercises[0] if len(exercises) == 1 else "assignment"))
    return {"submissions": len(jobs), "graded": len(todo), "skipped": len(jobs) - len(todo)}


def _grade_parallel(todo, out: Path, seed, time_limit_s, workers, bar) -> None:
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futs = [pool.submit(_grade_one, j, str(out), seed, time_limit_s) for j in todo]
        for f in as_completed(futs):
            f.result()
            bar and bar.update(1)
    except BaseException:      # Ctrl-C, SIGTERM: end the workers (each ends its sandbox), keep what is written
        _stop_workers(pool)
        raise
    pool.shutdown(wait=True)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """SIGTERM each worker (it ends its sandboxed program and removes its temporary folders), then SIGKILL
    the ones still there after settings.SANDBOX_KILL_WAIT_S / 2."""

    procs = list((getattr(pool, "_processes", None) or {}).values())
    for p in procs:
        try:
            os.kill(p.pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + settings.SANDBOX_KILL_WAIT_S / 2
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(0.5)
    pool.shutdown(wait=False, cancel_futures=True)


def write_csvs(out: Path, jobs: list[Job], assignment: str) -> None:
    results = {}
    for j in jobs:
        try:
            results[(j.learner, j.exercise)] = json.loads((out / "results" / f"{j.key}.json").read_text())
        except (OSError, ValueError):
            pass
    learners = sorted({j.learner for j in jobs})
    exercises = sorted({j.exercise for j in jobs})

    max_score = sum(load(e).possible for e in exercises)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(NBGRADER_COLUMNS)
    for learner in learners:
        rs = [results[(learner, e)] for e in exercises if (learner, e) in results]
        score = sum(r.get("earned", 0.0) for r in rs)
        w.writerow([assignment, "", "", learner, "", "", "", f"{score:g}", "0", f"{score:g}", f"{max_score:g}"])
    atomic_write(out / "grades.csv", buf.getvalue())

    check_cols = [f"{e}:{c.id}" for e in exercises for c in load(e).checks]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["file", *check_cols, "total", "possible", "available"])
    for learner in learners:
        row, total, avail = [], 0.0, 0.0
        for col in check_cols:
            e, cid = col.split(":", 1)
            r = results.get((learner, e), {})
            c = next((c for c in r.get("checks", []) if c["id"] == cid), None)
            row.append("" if c is None or c["status"] == "skipped" else f"{c['points']:g}")
        for e in exercises:
            r = results.get((learner, e), {})
            total += r.get("earned", 0.0)
            avail += r.get("available", 0.0)
        w.writerow([learner, *row, f"{total:g}", f"{max_score:g}", f"{avail:g}"])
    atomic_write(out / "grades_by_check.csv", buf.getvalue())
