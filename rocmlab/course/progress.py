"""Where a learner stands: points per lab task and per exercise, kept in one small JSON file per user.

Every graded task in a lab (and every exercise grade) calls :func:`record`; ``rocmlab progress`` and
Lab 00's widget read :func:`load`. A lab is named by its notebook's file stem (``03-pytorch-on-rocm``).

    record("03-pytorch-on-rocm", "fix-the-slow-step", earned=4, earnable=6, possible=10, backend="cpu")

``earned``: what this attempt scored; ``earnable``: what this machine could award (checks it cannot run
are left out); ``possible``: what the task is worth on an MI300X. The best attempt per task is kept.

:data:`LAB_TASKS` lists every lab's graded tasks and what each is worth on an MI300X, so that a task not
yet tried still shows (0 earned). A lab that adds a graded task adds its line here.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from rocmlab import paths, settings

#: lab (notebook stem) -> {task id: points possible on an MI300X}. Each lab's graded tasks add lines here.
LAB_TASKS: dict[str, dict[str, float]] = {
    # Lab 01's three exercises (rocmlab.course.lab01): launch shape (a point per number), the wave-agnostic
    # reduction (graded in the gfx942 ISA), occupancy (waves and the limiting resource)
    "01-hip-programming-model": {"launch-shape": 3, "wave-sum": 4, "occupancy": 2},
    # Lab 02: the learner's port of the block reduction, through the grader (the exercise's points)
    "02-porting-cuda-to-hip": {"port-block-reduction": 11},
    "03-pytorch-on-rocm": {"fix-the-slow-step": 10},              # rocmlab.course.tasks.slow_step
    "04-vllm-on-rocm": {"meet-a-serving-target": 10},             # rocmlab.course.tasks.serving_target
    "05-quickreduce-tuning": {"codec-per-message": 10},           # rocmlab.course.tasks.codec_choice
    "07-matrix-cores": {"waves-per-simd": 10},                    # rocmlab.course.tasks.occupancy_task
    "08-mi300x-package": {"xcd-remap": 10},                       # rocmlab.course.tasks.xcd_remap
    "09-attention-on-mi300x": {"row-softmax": 1, "online-softmax": 2, "attention-tile": 2, "flash-forward": 3,
                               "causal": 2, "gqa": 2, "paged-decode": 3},
    "10-fp8-gemm": {"fp8-quantize": 2, "fp8-gemm": 4},
    "11-counters-and-faults": {"lab11-coalesce": 11.0, "lab11-lds-banks": 11.0, "lab11-occupancy": 11.0,
                               "lab11-race": 9.0, "oob_write-line": 1.0, "use_after_free-line": 1.0},
}

#: The "lab" under which the exercise notebooks (labs/exercises/) record their grades: task = exercise id.
EXERCISES = "exercises"


def progress_file() -> Path:
    """``$ROCMLAB_PROGRESS``, else ``$ROCMLAB_HOME/progress.json`` (per user: each learner has their own home)."""
    return Path(settings.env("ROCMLAB_PROGRESS") or paths.home() / "progress.json")


def load(path: Path | None = None) -> dict:
    """``{lab: {task: {"earned", "earnable", "possible", "backend", "when"}}}``; empty when nothing was recorded
    or the file is unreadable (a corrupt file is never fatal: it is set aside and a fresh one begun)."""
    path = path or progress_file()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        try:
            path.replace(path.with_suffix(".corrupt.json"))
        except OSError:
            pass
        return {}
    return data if isinstance(data, dict) else {}


def record(lab: str, task: str, *, earned: float, earnable: float, possible: float, backend: str,
           path: Path | None = None) -> None:
    """Keep the best attempt of ``task`` in ``lab`` (atomic write: a crash never leaves half a file)."""
    if not (0 <= earned <= possible and 0 <= earnable <= possible):
        raise ValueError(f"points out of order for {lab}/{task}: earned {earned}, earnable {earnable}, "
                         f"possible {possible}")
    path = path or progress_file()
    data = load(path)
    entry = {"earned": float(earned), "earnable": float(earnable), "possible": float(possible),
             "backend": str(backend), "when": time.strftime("%Y-%m-%dT%H:%M:%S")}
    old = data.setdefault(lab, {}).get(task)
    if old is None or entry["earned"] >= float(old.get("earned", 0)):
        data[lab][task] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".progress-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def record_report(lab: str, task: str, report, path: Path | None = None) -> bool:
    """Record a grader Report (rocmlab.grader): earned, what this machine could check, what is possible.
    A report the machine could not grade (status "error": no compiler, say) is not a learner's attempt and
    is not recorded. Returns whether it was recorded."""
    if report.status != "graded":
        return False
    record(lab, task, earned=report.earned, earnable=report.available, possible=report.possible,
           backend=report.backend, path=path)
    return True


def _row(task: str, possible: float, entry: dict | None) -> dict:
    if entry is None:
        return {"task": task, "earned": 0.0, "earnable": None, "possible": float(possible), "backend": None,
                "when": None, "tried": False}
    return {"task": task, "earned": float(entry["earned"]), "earnable": float(entry["earnable"]),
            "possible": float(entry.get("possible", possible)), "backend": entry.get("backend"),
            "when": entry.get("when"), "tried": True}


def _totals(rows: list[dict]) -> dict:
    return {"earned": sum(r["earned"] for r in rows),
            "earnable": sum(r["earnable"] for r in rows if r["earnable"] is not None),
            "possible": sum(r["possible"] for r in rows),
            "tried": sum(r["tried"] for r in rows), "count": len(rows)}


def summary(data: dict | None = None) -> dict:
    """Every lab (by notebook stem, in course order) and every exercise, with its tasks and totals.

    ``earnable`` is what this machine could award on the last recorded attempt (None: not tried yet, so not
    known); ``possible`` is the task's worth on an MI300X. A lab with no graded task yet has no rows."""
    from rocmlab import grader
    from rocmlab.labs import LABS

    data = load() if data is None else data
    stems = [lab.file.removesuffix(".ipynb") for lab in LABS]
    stems += sorted((set(LAB_TASKS) | set(data)) - set(stems) - {EXERCISES})
    labs = []
    for stem in stems:
        tasks = dict(LAB_TASKS.get(stem, {}))
        for task, entry in data.get(stem, {}).items():
            tasks.setdefault(task, entry.get("possible", 0))
        rows = [_row(t, p, data.get(stem, {}).get(t)) for t, p in tasks.items()]
        labs.append({"lab": stem, "tasks": rows, **_totals(rows)})
    recorded = data.get(EXERCISES, {})
    exercises = []
    for ex in grader.exercises():
        r = _row(ex.id, ex.possible, recorded.get(ex.id))
        exercises.append({"exercise": ex.id, "notebook": f"exercises/{ex.order:02d}-{ex.id}", **r})
    every = [r for lab in labs for r in lab["tasks"]] + exercises
    return {"labs": labs, "exercises": exercises, "total": _totals(every)}


def _fmt(v) -> str:
    return "-" if v is None else f"{v:g}"


def table_rows(summ: dict | None = None) -> list[list[str]]:
    """Rows (where, task, earned, earnable here, possible on an MI300X, backend) for the CLI and Lab 00."""
    summ = summary() if summ is None else summ
    rows = []
    for lab in summ["labs"]:
        for r in lab["tasks"]:
            rows.append([lab["lab"], r["task"], _fmt(r["earned"]), _fmt(r["earnable"]), _fmt(r["possible"]),
                         r["backend"] or "not tried"])
        if not lab["tasks"]:
            rows.append([lab["lab"], "(no graded task yet)", "-", "-", "-", ""])
    for r in summ["exercises"]:
        rows.append([r["notebook"], r["task"], _fmt(r["earned"]), _fmt(r["earnable"]), _fmt(r["possible"]),
                     r["backend"] or "not tried"])
    t = summ["total"]
    rows.append(["total", f"{t['tried']} of {t['count']} tried", _fmt(t["earned"]), _fmt(t["earnable"]),
                 _fmt(t["possible"]), ""])
    return rows


HEADER = ["lab / exercise", "task", "earned", "earnable here", "possible (MI300X)", "graded on"]
