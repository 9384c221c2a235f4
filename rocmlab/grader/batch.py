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
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import yaml

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


def find_jobs(submissions, exercises: list[str]) -> list[Job]:
    from rocmlab.grader.spec import load

    root = Path(submissions)
    if not root.is_dir():
        raise BatchError(f"no submissions folder {root}: pass a folder with one file or folder per learner")
    for e in exercises:
        load(e)  # raises with the list of known ids
    jobs = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith("."):
            continue
        learner = entry.stem if entry.is_file() else entry.name
        for ex in exercises:
            if entry.is_file():
                cand = [entry] if len(exercises) == 1 and entry.suffix in (".hip", ".cpp", ".cu") else []
            else:
                files = sorted(p for p in entry.rglob("*") if p.is_file() and p.suffix in (".hip", ".cpp", ".cu"))
                cand = [p for p in files if p.stem == ex] or (files if len(exercises) == 1 else [])
            if cand:
                data = cand[0].read_bytes()
                jobs.append(Job(learner, ex, str(cand[0]), hashlib.sha256(data).hexdigest()))
    if not jobs:
        raise BatchError(f"no submissions found in {root} for {', '.join(exercises)}: expected "
                         "LEARNER.hip or LEARNER/EXERCISE.hip")
    return jobs


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _grade_one(job: Job, out: str, seed: int | None, time_limit_s: float | None) -> dict:
    from rocmlab import grader

    try:
        source = Path(job.path).read_text(errors="replace")
        report = grader.check(job.exercise, source, seed=seed, time_limit_s=time_limit_s)
        d = report.to_json()
        text, page = report.to_text(), report.to_html()
    except Exception as exc:   # an unreadable or empty file is a result too
        d = {"exercise": job.exercise, "error": f"{type(exc).__name__}: {exc}", "earned": 0.0, "available": 0.0,
             "possible": grader.load(job.exercise).possible, "checks": []}
        text, page = f"{job.exercise}: not graded: {d['error']}", f"<p>not graded: {d['error']}</p>"
    d.update(learner=job.learner, sha=job.sha, path=job.path)
    outp = Path(out)
    atomic_write(outp / "feedback" / job.learner / f"{job.exercise}.txt", text + "\n")
    atomic_write(outp / "feedback" / job.learner / f"{job.exercise}.html", page)
    atomic_write(outp / "results" / f"{job.key}.json", json.dumps(d))   # last: its presence means done
    return d


def _done(job: Job, out: Path) -> bool:
    p = out / "results" / f"{job.key}.json"
    try:
        return json.loads(p.read_text()).get("sha") == job.sha
    except (OSError, ValueError):
        return False


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
    if workers <= 1:
        for j in todo:
            _grade_one(j, str(out), seed, time_limit_s)
            bar and bar.update(1)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            futs = [pool.submit(_grade_one, j, str(out), seed, time_limit_s) for j in todo]
            for f in as_completed(futs):
                f.result()
                bar and bar.update(1)
    if bar:
        bar.close()
    write_csvs(out, jobs, assignment or (exercises[0] if len(exercises) == 1 else "assignment"))
    return {"submissions": len(jobs), "graded": len(todo), "skipped": len(jobs) - len(todo)}


def write_csvs(out: Path, jobs: list[Job], assignment: str) -> None:
    results = {}
    for j in jobs:
        try:
            results[(j.learner, j.exercise)] = json.loads((out / "results" / f"{j.key}.json").read_text())
        except (OSError, ValueError):
            pass
    learners = sorted({j.learner for j in jobs})
    exercises = sorted({j.exercise for j in jobs})
    from rocmlab.grader.spec import load

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
