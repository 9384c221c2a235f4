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

from rocmlab import paths

#: lab (notebook stem) -> {task id: points possible on an MI300X}. Each lab's graded tasks add lines here.
LAB_TASKS: dict[str, dict[str, float]] = {
    "09-attention-on-mi300x": {"row-softmax": 1, "online-softmax": 2, "attention-tile": 2, "flash-forward": 3,
                               "causal": 2, "gqa": 2, "paged-decode": 3},
    "10-fp8-gemm": {"fp8-quantize": 2, "fp8-gemm": 4},
    "11-counters-and-faults": {"lab11-coalesce": 11.0, "lab11-lds-banks": 11.0, "lab11-occupancy": 11.0,
                               "lab11-race": 9.0, "oob_write-line": 1.0, "use_after_free-line": 1.0},
}


def progress_file() -> Path:
    """``$ROCMLAB_HOME/progress.json`` (per user: each learner has their own home)."""
    return paths.home() / "progress.json"


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
