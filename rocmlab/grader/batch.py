"""Grade a folder of submissions: in parallel, resumable, with atomic writes and gradebook CSVs.

Every graded item can be graded here (:mod:`rocmlab.grader.items`: exercises, lab tasks, puzzles, questions),
each re-graded in the sandbox with a fresh seed. An item id with a ``/`` (``08-mi300x-package/xcd-remap``) is
written with a ``+`` in every file name (``FLAT``: ``08-mi300x-package+xcd-remap``), as the exchange does.

Layout: ``SUBMISSIONS/<learner>/<FLAT>.<suffix>`` (several items) or ``SUBMISSIONS/<learner>.hip`` /
``SUBMISSIONS/<learner>/<any>.hip`` (one item, given with ``--exercise``). Results go to ``OUT/``:

- ``results/<learner>__<FLAT>.json``: one report each, written to a temporary file and renamed, so a
  killed run leaves only whole results; a rerun skips every result whose source hash still matches;
- ``feedback/<learner>/<FLAT>.txt`` and ``.html``: what the learner reads (the same text as the widget);
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
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import yaml

from rocmlab import settings
from rocmlab.grader import items
from rocmlab.safe_read import NOT_REGULAR, TOO_BIG, ReadRefused, read_capped
from rocmlab.sandbox import sigterm_raises_terminated

SUFFIXES = items.SUFFIXES
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
        return f"{self.learner}__{items.flat(self.exercise)}"


def load_assignment(path) -> tuple[str, list[str]]:
    """An assignment file (YAML): ``name: lab02`` and ``exercises: [vector-add, ...]``."""
    p = Path(path)
    fix = "write 'name: NAME' and 'exercises: [ID, ...]' (rocmlab grade --list shows the ids)"
    if not p.is_file():
        raise BatchError(f"no assignment file {p}")
    try:
        data = p.read_bytes()
        if len(data) > 1 << 20 or b"\0" in data:
            raise BatchError(f"{p} is not a YAML text file (binary or over 1 MiB): {fix}")
        raw = yaml.safe_load(data.decode("utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError, ValueError) as exc:
        why = getattr(exc, "strerror", None) or str(exc).splitlines()[0][:200]
        raise BatchError(f"{p} cannot be read as YAML ({why}): {fix}") from None
    ids = raw.get("exercises") if isinstance(raw, dict) else None
    if not ids or not isinstance(ids, list) or not all(isinstance(e, (str, int)) for e in ids):
        raise BatchError(f"{p} lists no exercises: {fix}")
    return str(raw.get("name", p.stem))[:200], [str(e) for e in ids]


#: Learner folders are searched this many levels deep, and at most this many entries each (a folder 1100
#: levels deep or with a million files is the learner's problem, never a crash of the run).
MAX_DEPTH = 8
MAX_ENTRIES = 5000
#: The longest learner id (a folder or file name) used in result and feedback paths.
MAX_NAME_CHARS = 100


def shown(name: str, limit: int = 80) -> str:
    """A name a learner controls, safe to print in a message: printable as it is, else its escaped form
    (``ascii``: a latin-1 byte, a newline or an escape shows as ``\\xe9``, ``\\n``...), cut at ``limit``."""
    text = name if name.isprintable() else ascii(name)[1:-1]
    return text if len(text) <= limit else text[:limit] + "..."


def learner_id(name: str) -> tuple[str, str]:
    """(the learner's id in results and the gradebook, the problem with the name or ''). A name that is not
    printable UTF-8 text (a latin-1 byte, a newline, a control character) or is too long gets a stable
    stand-in id made from its bytes, and the problem says why and how to fix it."""
    raw = os.fsencode(name)
    ok = name.isprintable() and len(name) <= MAX_NAME_CHARS and len(raw) <= 2 * MAX_NAME_CHARS
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        ok = False
    if ok:
        return name, ""
    stand_in = "badname-" + hashlib.sha256(raw).hexdigest()[:12]
    return stand_in, (f"the name {shown(name)!r} cannot be used as a learner id (not printable UTF-8 text, or "
                      f"longer than {MAX_NAME_CHARS} characters): it is graded as {stand_in}; rename the file "
                      "or folder to letters, digits and . _ - @ +")


def _walk(entry: Path) -> tuple[list[Path], list[Path], str]:
    """Regular files with a source suffix under a learner's folder, the symbolic links met (never followed),
    and a problem ('' if none): iterative, at most MAX_DEPTH levels and MAX_ENTRIES entries; an entry that
    cannot be read (a name too long for a path, a folder without permission) is a problem, not a crash."""
    files, links, problem, seen = [], [], "", 0
    stack = [(entry, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problem = problem or f"a folder in it cannot be read ({exc.strerror})"
            continue
        for e in entries:
            seen += 1
            if seen > MAX_ENTRIES:
                return sorted(files), sorted(links), f"it holds more than {MAX_ENTRIES} entries: hand in the source only"
            p = Path(e.path)
            try:
                if e.is_symlink():
                    links.append(p)
                elif e.is_dir(follow_symlinks=False):
                    if depth + 1 < MAX_DEPTH:
                        stack.append((p, depth + 1))
                    else:
                        problem = problem or f"folders deeper than {MAX_DEPTH} levels are not searched"
                elif p.suffix in SUFFIXES and e.is_file(follow_symlinks=False):
                    files.append(p)
            except OSError as exc:
                problem = problem or f"an entry cannot be read ({exc.strerror})"
    return sorted(files), sorted(links), problem


def _link_sha(p: Path) -> str:
    return hashlib.sha256(b"symlink:" + os.readlink(p).encode(errors="replace")).hexdigest()


def read_submission(path) -> bytes:
    """A hand-in's bytes, refusing symbolic links (even one swapped in after the folder was listed),
    anything but a regular file, and files over MAX_SUBMISSION_BYTES. Raises BatchError with the learner's fix."""
    try:
        return read_capped(path, MAX_SUBMISSION_BYTES, grown="keep")
    except ReadRefused as exc:
        if exc.why == NOT_REGULAR:
            raise BatchError(f"{shown(Path(path).name)} is not a regular file: hand in the source file itself") from None
        if exc.why == TOO_BIG:
            raise BatchError(f"{shown(Path(path).name)} is {exc.size / 1e6:.1f} MB, over the {MAX_SUBMISSION_BYTES >> 20} "
                             "MiB limit: hand in only your HIP source") from None
        if os.path.islink(path):                 # the open failed (O_NOFOLLOW on a link, or otherwise)
            raise BatchError(f"{shown(Path(path).name)} is a symbolic link: hand in the file itself") from None
        raise BatchError(f"cannot read {shown(Path(path).name)} ({exc.strerror})") from None


#: The deepest nesting of a JSON hand-in that is read (an answer is an object of a few levels; Python's parser
#: recurses, and a hand-in nested 200,000 deep would end the grade with a RecursionError instead of a verdict).
MAX_JSON_DEPTH = 64


def json_too_deep(text: str) -> str:
    """'' when the JSON text ``text`` nests at most MAX_JSON_DEPTH arrays and objects, else the learner's message
    (counted without parsing: brackets outside strings)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return (f"the JSON is nested more than {MAX_JSON_DEPTH} levels deep: hand in a plain object "
                            'of your answers, e.g. {"max_concurrency": 4}')
        elif ch in "]}":
            depth -= 1
    return ""


def _refused_sha(reason: str) -> str:
    """A stable hash for a refusal that depends only on its reason (a rerun does not grade it again)."""
    return "refused:" + hashlib.sha256(reason.encode("utf-8", "backslashreplace")).hexdigest()[:16]


def _top_entries(root: Path) -> dict[str, list[tuple[os.DirEntry, str]]]:
    """The learners' entries of the submissions folder (folders and source files, links included), by learner id."""
    groups: dict[str, list[tuple[os.DirEntry, str]]] = {}
    try:
        with os.scandir(root) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise BatchError(f"cannot list the submissions folder {root} ({exc.strerror})") from None
    for e in entries:
        if e.name.startswith("."):
            continue
        try:
            link = e.is_symlink()
            is_dir = not link and e.is_dir(follow_symlinks=False)
            is_file = not link and e.is_file(follow_symlinks=False)
        except OSError:
            link = is_dir = is_file = False
        suffix = os.path.splitext(e.name)[1]
        if is_dir:
            stem = e.name
        elif (link or is_file) and suffix in SUFFIXES:
            stem = e.name[: -len(suffix)]
        elif link:
            stem = e.name                  # a link to a folder: refused below, with its own row
        else:
            continue                       # a stray file (README.txt, a fifo): not a learner's hand-in
        groups.setdefault(learner_id(stem)[0], []).append((e, stem))
    return groups


def _learner_jobs(learner: str, group: list[tuple[os.DirEntry, str]], exercises: list[str]) -> list[Job]:
    """One job per exercise for one learner: a hand-in to grade, or a refusal with the reason (every learner
    the folder names gets a row)."""
    def refuse(ex: str, path, reason: str) -> Job:
        return Job(learner, ex, str(path), _refused_sha(reason), reason)

    entry, stem = group[0]
    _, name_problem = learner_id(stem)
    if name_problem:
        return [refuse(ex, entry.path, name_problem) for ex in exercises]
    if len(group) > 1:
        names = ", ".join(shown(e.name, 40) for e, _ in group)
        return [refuse(ex, entry.path, f"{learner} handed in more than one thing ({names}): keep one file or "
                                       "folder per learner") for ex in exercises]
    path, single = Path(entry.path), len(exercises) == 1
    problem = ""
    if entry.is_symlink():
        files, links, is_file = [], [path], True
    elif entry.is_dir(follow_symlinks=False):
        files, links, problem = _walk(path)
        is_file = False
    else:
        files, links, is_file = [path], [], True
    jobs = []
    for ex in exercises:
        if is_file:
            cand = files if single else []
        else:
            cand = [p for p in files if p.stem == items.flat(ex)] or (files if single else [])
        cand = [p for p in cand if items.get(ex).accepts(p.suffix)] if len(cand) > 1 else cand
        if len(cand) > 1:
            names = ", ".join(shown(str(p.relative_to(path)), 40) for p in cand[:4])
            jobs.append(refuse(ex, path, f"more than one source file for {ex} ({names}): hand in one, named "
                                         f"{ex}.hip"))
        elif cand:
            try:
                data = read_submission(cand[0])
                jobs.append(Job(learner, ex, str(cand[0]), hashlib.sha256(data).hexdigest()))
            except BatchError as exc:
                try:
                    st = cand[0].lstat()
                    sha = f"refused:{st.st_size}:{st.st_mtime_ns}"
                except OSError:
                    sha = _refused_sha(str(exc))
                jobs.append(Job(learner, ex, str(cand[0]), sha, str(exc)))
        else:
            bad = [p for p in links if p.stem == items.flat(ex) or (single and (p.suffix in SUFFIXES or p == path))]
            if bad:
                jobs.append(Job(learner, ex, str(bad[0]), _link_sha(bad[0]),
                                f"{shown(bad[0].name)} is a symbolic link: the grader does not follow links; "
                                "hand in the file itself"))
            else:
                why = f" ({problem})" if problem else ""
                jobs.append(refuse(ex, path, f"nothing handed in for {ex}: expected {learner}/{items.flat(ex)}"
                                             f"{items.get(ex).suffix}{why}"))
    return jobs


def find_jobs(submissions, exercises: list[str]) -> list[Job]:
    root = Path(submissions)
    if not root.is_dir():
        raise BatchError(f"no submissions folder {root}: pass a folder with one file or folder per learner")
    for e in exercises:
        items.get(e)  # raises with the list of known ids
    jobs = [j for learner, group in _top_entries(root).items() for j in _learner_jobs(learner, group, exercises)]
    if not any(not j.refused or not j.refused.startswith("nothing handed in") for j in jobs):
        raise BatchError(f"no submissions found in {root} for {', '.join(exercises)}: expected "
                         "LEARNER.hip or LEARNER/ITEM.SUFFIX")
    return jobs


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
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
    item = items.get(job.exercise)
    try:
        suffix = Path(job.path).suffix
        if job.refused:
            report = items.refused(job.exercise, job.refused)
        elif suffix in SUFFIXES and not item.accepts(suffix):
            report = items.refused(job.exercise, f"{shown(Path(job.path).name)} is a {suffix} file; {item.id} takes "
                                                 f"a {item.suffix} answer: hand in {items.flat(item.id)}{item.suffix}")
        else:
            source = read_submission(job.path).decode(errors="replace")
            deep = json_too_deep(source) if suffix == ".json" else ""
            report = (items.refused(job.exercise, deep) if deep
                      else items.grade(job.exercise, source, seed=seed, time_limit_s=time_limit_s))
        d = report.to_json()
        text, page = report.to_text(), report.to_html()
    except BatchError as exc:   # the hand-in changed since it was listed (now a link, too large): the learner's
        report = items.refused(job.exercise, str(exc))
        d, text, page = report.to_json(), report.to_text(), report.to_html()
    except Exception as exc:   # a grader bug or a fault of the machine: reported, never cached (status error)
        d = {"exercise": job.exercise, "status": "error", "error": f"{type(exc).__name__}: {exc}", "earned": 0.0,
             "available": 0.0, "possible": item.possible, "checks": []}
        text, page = f"{job.exercise}: not graded: {d['error']}", f"<p>not graded: {d['error']}</p>"
    d.update(learner=job.learner, sha=job.sha, path=job.path)
    outp = Path(out)
    flat = items.flat(job.exercise)
    atomic_write(outp / "feedback" / job.learner / f"{flat}.txt", text + "\n")
    atomic_write(outp / "feedback" / job.learner / f"{flat}.html", page)
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
    from rocmlab import grader, sandbox

    refused_here = sandbox.of_record()
    if refused_here:
        raise BatchError(f"nothing graded: {refused_here}")
    out = Path(out)
    jobs = find_jobs(submissions, exercises)
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)          # results hold the seeds: closed to every other uid, a sandboxed run's included
    grader.sweep_stale()       # left by an earlier run that was killed
    todo = [j for j in jobs if not _done(j, out)]
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(jobs), initial=len(jobs) - len(todo), desc="grading", unit="submission")
    with sigterm_raises_terminated():   # SIGTERM ends the workers and their sandboxes, keeps finished results
        if workers <= 1:
            for j in todo:
                _grade_guarded(j, str(out), seed, time_limit_s)
                bar and bar.update(1)
        else:
            _grade_parallel(todo, out, seed, time_limit_s, workers, bar)
    if bar:
        bar.close()
    write_csvs(out, jobs, assignment or (exercises[0] if len(exercises) == 1 else "assignment"))
    counts = {"submissions": len(jobs), "graded": len(todo), "skipped": len(jobs) - len(todo)}
    left = sum(not _done(j, out) for j in todo)
    if left:
        counts["not_graded"] = left      # machine faults (status error, or a result that could not be written)
    return counts


def _grade_guarded(job: Job, out: str, seed, time_limit_s) -> dict | None:
    """:func:`_grade_one`, where a failure to write the results (disk full) is the machine's: reported, the
    run goes on with the next hand-in, and nothing is cached for this one (the rerun grades it)."""
    try:
        return _grade_one(job, out, seed, time_limit_s)
    except OSError as exc:
        print(f"not graded (a fault of this machine): {shown(job.learner)} {job.exercise}: {exc}; "
              "the rerun grades it", file=sys.stderr)
        return None


def _grade_parallel(todo, out: Path, seed, time_limit_s, workers, bar) -> None:
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        futs = [pool.submit(_grade_guarded, j, str(out), seed, time_limit_s) for j in todo]
        for f in as_completed(futs):
            f.result()
            bar and bar.update(1)
    except BaseException:      # Ctrl-C, SIGTERM: end the workers (each ends its sandbox), keep what is written
        _stop_workers(pool)
        from rocmlab import grader

        grader.sweep_stale()   # the temporary folders of workers killed before their cleanup ran
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


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: str) -> str:
    """A text cell a spreadsheet shows as text: one starting with = + - @ TAB or CR gets a leading
    apostrophe (OWASP's advice against CSV formula injection); control characters are escaped."""
    value = str(value)
    if not value.isprintable():
        value = ascii(value)[1:-1]
    return "'" + value if value.startswith(_FORMULA_START) else value


def _check_ids(item_id: str, results: dict) -> list[str]:
    """The check ids of an item: an exercise's spec, else the checks its results name (in first-seen order)."""
    from rocmlab.grader.spec import load

    item = items.get(item_id)
    if item.regrade is None:                    # an exercise: its spec's checks
        return [c.id for c in load(item_id).checks]
    ids: list[str] = []
    for (_, e), r in sorted(results.items()):
        if e == item_id:
            ids += [c["id"] for c in r.get("checks", []) if isinstance(c, dict) and c.get("id") not in ids]
    return ids


def write_csvs(out: Path, jobs: list[Job], assignment: str) -> None:
    results = {}
    for j in jobs:
        try:
            results[(j.learner, j.exercise)] = json.loads((out / "results" / f"{j.key}.json").read_text())
        except (OSError, ValueError):
            pass
    learners = sorted({j.learner for j in jobs})
    exercises = sorted({j.exercise for j in jobs})

    max_score = sum(items.get(e).possible for e in exercises)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(NBGRADER_COLUMNS)
    for learner in learners:
        rs = [results[(learner, e)] for e in exercises if (learner, e) in results]
        score = sum(r.get("earned", 0.0) for r in rs)
        w.writerow([csv_text(assignment), "", "", csv_text(learner), "", "", "", f"{score:g}", "0", f"{score:g}",
                    f"{max_score:g}"])
    atomic_write(out / "grades.csv", buf.getvalue())

    check_cols = [f"{e}:{c}" for e in exercises for c in _check_ids(e, results)]
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
        w.writerow([csv_text(learner), *row, f"{total:g}", f"{max_score:g}", f"{avail:g}"])
    atomic_write(out / "grades_by_check.csv", buf.getvalue())
