"""Where a learner stands: points per lab task and per exercise, self-checked here and instructor-graded.

Two sources, shown apart and never mixed:

- **self-checked here (a preview)**: every in-notebook check calls :func:`record`, which keeps the best attempt
  in one small JSON file in the learner's own home (``$ROCMLAB_PROGRESS``, else ``$ROCMLAB_HOME/progress.json``).
  The learner can write that file (by hand, or by calling :func:`record`), so nothing in it is proof: its
  backend is shown as the record's unverified claim, and its points as a preview;
- **instructor-graded (the grade of record)**: the feedback the workshop's exchange returns after
  ``rocmlab grade --exchange`` re-graded a hand-in in the sandbox (:func:`rocmlab.workshop.exchange.feedback`;
  only the grader writes it). Without an exchange (self-study) nothing is instructor-graded.

A lab is named by its notebook's file stem (``03-pytorch-on-rocm``). A record that is not a regular file of
rocmlab's shape (a folder, a FIFO, a symbolic link, other JSON) is reported with one message
(:class:`RecordProblem`) and left exactly where it is: never renamed, never followed, never overwritten.

    record("03-pytorch-on-rocm", "fix-the-slow-step", earned=4, earnable=6, possible=10, backend="cpu")

``earned``: what this attempt scored; ``earnable``: what this machine could award (checks it cannot run
are left out); ``possible``: what the task is worth on an MI300X. The best attempt per task is kept.

:data:`LAB_TASKS` lists every lab's graded tasks and what each is worth on an MI300X, so that a task not
yet tried still shows (0 earned). A lab that adds a graded task adds its line here.
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
import time
import warnings
from pathlib import Path

from rocmlab import paths, safe_read, settings

#: lab (notebook stem) -> {task id: points possible on an MI300X}. Each lab's graded tasks add lines here.
LAB_TASKS: dict[str, dict[str, float]] = {
    # Lab 01's three exercises (rocmlab.course.labs.lab01_hip_programming_model.lab): launch shape (a point per number), the wave-agnostic
    # reduction (graded in the gfx942 ISA), occupancy (waves and the limiting resource)
    "01-hip-programming-model": {"launch-shape": 3, "wave-sum": 4, "occupancy": 2},
    # Lab 02: the learner's port of the block reduction, through the grader (the exercise's points)
    "02-porting-cuda-to-hip": {"port-block-reduction": 11},
    "03-pytorch-on-rocm": {"fix-the-slow-step": 10},              # rocmlab.course.labs.lab03_pytorch_on_rocm.task
    "04-vllm-on-rocm": {"meet-a-serving-target": 10},             # rocmlab.course.labs.lab04_vllm_on_rocm.task
    "05-quickreduce-tuning": {"codec-per-message": 10},           # rocmlab.course.labs.lab05_quickreduce_tuning.task
    # Lab 06's eight Triton puzzles (rocmlab.course.puzzles), a point each
    "06-triton-on-amd": {"add-constant": 1, "add-vectors": 1, "outer-sum": 1, "relu-outer": 1, "row-sum": 1,
                         "softmax": 1, "matmul": 1, "gather": 1},
    "07-matrix-cores": {"waves-per-simd": 10},                    # rocmlab.course.labs.lab07_matrix_cores.task
    "08-mi300x-package": {"xcd-remap": 10},                       # rocmlab.course.labs.lab08_mi300x_package.task
    "09-attention-on-mi300x": {"row-softmax": 1, "online-softmax": 2, "attention-tile": 2, "flash-forward": 3,
                               "causal": 2, "gqa": 2, "paged-decode": 3},
    "10-fp8-gemm": {"fp8-quantize": 2, "fp8-gemm": 4},
    "11-counters-and-faults": {"lab11-coalesce": 11.0, "lab11-lds-banks": 11.0, "lab11-occupancy": 11.0,
                               "lab11-race": 9.0, "oob_write-line": 1.0, "use_after_free-line": 1.0,
                               "diagnosis": 3.0},
}

#: The "lab" under which the exercise notebooks (labs/exercises/) record their grades: task = exercise id.
EXERCISES = "exercises"


#: A progress record larger than this is not read (a full course's record is a few kB).
MAX_RECORD_BYTES = 1 << 20


class RecordProblem(ValueError):
    """The progress record cannot be used; the message names the file, the problem and the fix."""


def progress_file() -> Path:
    """``$ROCMLAB_PROGRESS``, else ``$ROCMLAB_HOME/progress.json`` (per user: each learner has their own home)."""
    return Path(settings.env("ROCMLAB_PROGRESS") or paths.home() / "progress.json")


def _problem(path: Path, what: str) -> RecordProblem:
    return RecordProblem(f"{path} {what}: it is not a rocmlab progress record, so it is not read and not changed. "
                         f"Move it away (mv {path} {path}.bak) and the next graded check starts a fresh record, "
                         "or set ROCMLAB_PROGRESS to another file")


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _shape_problem(data) -> str:
    """'' when ``data`` has the record's shape ({lab: {task: entry}}), else where it does not."""
    if not isinstance(data, dict):
        return f"holds a JSON {type(data).__name__}, not an object of labs"
    for lab, tasks in data.items():
        if not isinstance(tasks, dict):
            return f"has {str(lab)[:60]!r}: {type(tasks).__name__}, not an object of tasks"
        for task, e in tasks.items():
            where = f"{str(lab)[:60]}/{str(task)[:60]}"
            if not isinstance(e, dict):
                return f"has {where!r}: {type(e).__name__}, not an entry"
            if not all(_number(e.get(k)) for k in ("earned", "earnable", "possible")):
                return f"has {where!r} without numeric earned, earnable and possible"
            if not (0 <= e["earned"] <= e["possible"] and 0 <= e["earnable"] <= e["possible"]):
                return f"has {where!r} with points out of order"
            if not isinstance(e.get("backend", ""), str) or not isinstance(e.get("when", ""), (str, type(None))):
                return f"has {where!r} with a backend or time that is not text"
    return ""


def read_record(path: Path | None = None) -> dict:
    """The record, ``{lab: {task: {"earned", "earnable", "possible", "backend", "when"}}}``; ``{}`` when there is
    none yet. Raises :class:`RecordProblem` for anything else: the file is read by :mod:`rocmlab.safe_read` (opened
    without following a link and without blocking, checked to be a regular file of at most :data:`MAX_RECORD_BYTES`
    on the open file), and its JSON must have the record's shape."""
    path = path or progress_file()
    try:
        raw = safe_read.read_capped(path, MAX_RECORD_BYTES)
    except safe_read.ReadRefused as exc:
        if exc.why == safe_read.MISSING:
            return {}
        if exc.why == safe_read.LINK:
            raise _problem(path, "is a symbolic link") from None
        if exc.why == safe_read.UNOPENABLE:
            raise _problem(path, f"cannot be opened ({exc.strerror})") from None
        if exc.why == safe_read.NOT_REGULAR:
            if stat.S_ISDIR(exc.mode):
                raise _problem(path, "is a folder") from None
            if stat.S_ISFIFO(exc.mode):
                raise _problem(path, "is a FIFO (a named pipe)") from None
            raise _problem(path, "is not a regular file (a device or a socket)") from None
        if exc.why == safe_read.TOO_BIG:
            raise _problem(path, f"is {exc.size} bytes, over the {MAX_RECORD_BYTES} byte limit of a record") from None
        raise _problem(path, "grew over the size limit while it was read") from None
    except OSError as exc:          # /proc/self/mem and the like: a "regular file" that cannot be read
        raise _problem(path, f"cannot be read ({exc.strerror})") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _problem(path, "is not JSON text") from None
    why = _shape_problem(data)
    if why:
        raise _problem(path, why)
    return data


def load(path: Path | None = None) -> dict:
    """:func:`read_record`, but ``{}`` (with a warning naming the problem) when the record cannot be used."""
    try:
        return read_record(path)
    except RecordProblem as exc:
        warnings.warn(str(exc), stacklevel=2)
        return {}


def record(lab: str, task: str, *, earned: float, earnable: float, possible: float, backend: str,
           path: Path | None = None) -> bool:
    """Keep the best attempt of ``task`` in ``lab`` (atomic write: a crash never leaves half a file). Returns
    whether it was kept: a record that cannot be used (:class:`RecordProblem`) is never overwritten; the
    warning says why and how to fix it."""
    if not all(_number(v) for v in (earned, earnable, possible)) or not (0 <= earned <= possible
                                                                         and 0 <= earnable <= possible):
        raise ValueError(f"points out of order for {lab}/{task}: earned {earned}, earnable {earnable}, "
                         f"possible {possible}")
    path = path or progress_file()
    try:
        data = read_record(path)
    except RecordProblem as exc:
        warnings.warn(f"not recorded: {exc}", stacklevel=2)
        return False
    entry = {"earned": float(earned), "earnable": float(earnable), "possible": float(possible),
             "backend": str(backend), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    old = data.setdefault(lab, {}).get(task)
    if old is None or entry["earned"] >= float(old.get("earned", 0)):
        data[lab][task] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".progress-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return True


def record_report(lab: str, task: str, report, path: Path | None = None) -> bool:
    """Record a grader Report (rocmlab.grader): earned, what this machine could check, what is possible.
    A report the machine could not grade (status "error": no compiler, say), or one where not one point could
    be checked here (every check skipped), is not a learner's attempt and is not recorded. Returns whether it was recorded."""
    if report.status != "graded" or report.nothing_checked:     # nothing checked here: not an attempt either
        return False
    return record(lab, task, earned=report.earned, earnable=report.available, possible=report.possible,
                  backend=report.backend, path=path)


# ----------------------------------------------------------------------------- instructor grades

def instructor_grades(exchange=None, learner=None) -> tuple[dict, str]:
    """({item id: feedback info}, where they come from or why there are none): the grades the workshop's
    exchange returned (:func:`rocmlab.workshop.exchange.feedback`), the only grades of record."""
    from rocmlab.grader import items
    from rocmlab.workshop import exchange as xch

    try:
        root = xch.exchange_dir(exchange)
    except xch.ExchangeError:
        return {}, "no workshop exchange (ROCMLAB_EXCHANGE unset): self-study, nothing is instructor-graded"
    try:
        who = xch.current_learner(learner)
    except xch.ExchangeError as exc:
        return {}, f"the exchange {root} was given, but {exc}"
    folder = Path(root) / "outbound" / "feedback" / who
    if not folder.is_dir():
        return {}, f"no feedback folder for {who} in {root} yet: nothing instructor-graded"
    got = {}
    for item_id in items.all_items():
        try:
            fb = xch.feedback(item_id, who, root)
        except Exception:       # noqa: BLE001 - no feedback for this item yet, or an unreadable one: not graded
            continue
        info = fb.info if isinstance(fb.info, dict) else {}
        if _number(info.get("earned")) and _number(info.get("possible")):
            got[item_id] = info
    return got, f"feedback returned by the instructor's grader in {folder}"


# ----------------------------------------------------------------------------- the summary

def _claim(entry: dict | None) -> str | None:
    if entry is None:
        return None
    return f"{entry.get('backend') or '?'} (record's claim, unverified)"


def _row(task: str, possible: float, entry: dict | None, item: str | None, graded: dict) -> dict:
    g = graded.get(item) if item else None
    row = {"task": task, "item": item, "possible": float(possible), "tried": entry is not None,
           "earned": 0.0, "earnable": None, "backend": None, "when": None, "note": "",
           "instructor": float(g["earned"]) if g else None,
           "instructor_possible": float(g["possible"]) if g else None,
           "instructor_when": g.get("graded_at") if g else None}
    if entry is not None:
        row.update(earned=float(entry["earned"]), earnable=float(entry["earnable"]), backend=_claim(entry),
                   when=entry.get("when"))
        if float(entry["possible"]) != float(possible):
            row.update(earned=0.0, earnable=None,
                       note=f"the record says {entry['possible']:g} possible, the course {possible:g}: not counted")
    return row


def _totals(rows: list[dict]) -> dict:
    return {"earned": sum(r["earned"] for r in rows),
            "earnable": sum(r["earnable"] for r in rows if r["earnable"] is not None),
            "possible": sum(r["possible"] for r in rows),
            "instructor": sum(r["instructor"] or 0.0 for r in rows),
            "instructor_graded": sum(r["instructor"] is not None for r in rows),
            "tried": sum(r["tried"] for r in rows), "count": len(rows)}


def summary(data: dict | None = None, *, exchange=None, learner=None) -> dict:
    """Every lab (by notebook stem, in course order) and every exercise, with its tasks and totals.

    ``earned`` / ``earnable``: the self-checked preview of the local record (``earnable``: what the machine
    that checked it could award; None: not tried); ``instructor``: the instructor-graded points of the item
    (None: not graded); ``possible``: the task's worth on an MI300X. A task the course does not know (a record
    written by hand) is not listed. ``problem``: why the local record could not be read ('' if it could)."""
    from rocmlab import grader
    from rocmlab.grader import items
    from rocmlab.catalog import LABS

    problem = ""
    if data is None:
        try:
            data = read_record()
        except RecordProblem as exc:
            data, problem = {}, str(exc)
    graded, source = instructor_grades(exchange, learner)
    stems = [lab.file.removesuffix(".ipynb") for lab in LABS]
    stems += sorted(set(LAB_TASKS) - set(stems) - {EXERCISES})
    labs = []
    for stem in stems:
        recorded = data.get(stem, {})
        rows = [_row(t, p, recorded.get(t), items.item_for(stem, t), graded) for t, p in LAB_TASKS.get(stem, {}).items()]
        labs.append({"lab": stem, "tasks": rows, **_totals(rows)})
    recorded = data.get(EXERCISES, {})
    exercises = []
    for ex in grader.exercises():
        r = _row(ex.id, ex.possible, recorded.get(ex.id), ex.id, graded)
        exercises.append({"exercise": ex.id, "notebook": f"exercises/{ex.order:02d}-{ex.id}", **r})
    every = [r for lab in labs for r in lab["tasks"]] + exercises
    return {"labs": labs, "exercises": exercises, "total": _totals(every), "problem": problem,
            "instructor_source": source}


def _fmt(v) -> str:
    return "-" if v is None else f"{v:g}"


def _here(r: dict) -> str:
    if not r["tried"]:
        return "not tried"
    if r["earnable"] is None:
        return "not counted"
    return f"{r['earned']:g} of {r['earnable']:g} checkable"


def table_rows(summ: dict | None = None) -> list[list[str]]:
    """Rows (where, task, self-checked here, the record's backend claim, instructor-graded, possible) for the
    CLI and Lab 00."""
    summ = summary() if summ is None else summ
    rows = []

    def row(where, r):
        return [where, r["task"], _here(r), r["backend"] or "", _fmt(r["instructor"]), _fmt(r["possible"])]

    for lab in summ["labs"]:
        for r in lab["tasks"]:
            rows.append(row(lab["lab"], r))
        if not lab["tasks"]:
            rows.append([lab["lab"], "(no graded task yet)", "-", "", "-", "-"])
    for r in summ["exercises"]:
        rows.append(row(r["notebook"], r))
    t = summ["total"]
    rows.append(["total", f"{t['tried']} of {t['count']} tried", f"{t['earned']:g} (preview)", "",
                 f"{t['instructor']:g} ({t['instructor_graded']} graded)", _fmt(t["possible"])])
    return rows


HEADER = ["lab / exercise", "task", "self-checked here (preview)", "self-check ran on", "instructor-graded",
          "possible (MI300X)"]

#: What the two columns mean, for the CLI and Lab 00.
LEGEND = ("'self-checked here' is a preview: your notebook checked it, and your own record keeps it (you can edit "
          "that file, so it proves nothing, and the backend it names is its claim). 'instructor-graded' is the "
          "grade of record: what the instructor's grader gave your hand-in (rocmlab handin ITEM FILE), re-graded "
          "in a sandbox with fresh inputs. 'possible' is the task's worth on an MI300X.")
