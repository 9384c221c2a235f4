"""The grader: ``check(exercise_id, source)`` runs an exercise's checks on a HIP submission.

Checks (one small unit each, :mod:`rocmlab.grader.checks`): ``static`` (no CUDA left, no warp-size
assumptions, errors checked, required APIs), ``compile`` (for the AMD target, always possible offline),
``run`` (in a sandbox with a time limit, RLIMIT_AS and an output cap, on fresh random inputs from a seed
the learner does not control), ``compare`` (against the numpy reference with the spec's tolerance; the
first mismatching index), and ``perf`` (effective TB/s or TFLOP/s against the device's peak from
``datasets/hardware.csv``, correctness re-checked in the timed run). Checks the machine cannot run
(run/compare/perf without a GPU) are ``skipped`` and say why: they neither earn nor lose points.
"""

from __future__ import annotations

import shutil
import tempfile
import time

from rocmlab.grader.checks import CHECKS, Context, new_seed
from rocmlab.grader.report import CheckResult, Report
from rocmlab.grader.spec import Exercise, ExerciseError, exercises, load

__all__ = ["check", "exercises", "load", "Report", "CheckResult", "Exercise", "ExerciseError"]


def check(exercise_id: str, source: str, *, plat=None, seed: int | None = None, only=None,
          time_limit_s: float = 20.0, target: str | None = None) -> Report:
    """Grade ``source`` (HIP C++) for an exercise. Never raises for a bad submission.

    ``seed`` is for instructors and tests (reproducible inputs); by default every call draws a
    fresh one. ``only`` limits the checks (ids or types). ``target`` overrides the build target.
    """
    from rocmlab.platform import current

    ex = load(exercise_id)
    if not isinstance(source, str) or not source.strip():
        raise ValueError("the submission is empty: pass the HIP source as a string")
    plat = plat or current()
    seed = new_seed() if seed is None else int(seed)
    start = time.monotonic()
    work = tempfile.mkdtemp(prefix="rocmlab-grade-")
    ctx = Context(ex, source, plat, seed, target=target, time_limit_s=time_limit_s, workdir=work)
    results = []
    try:
        for spec in ex.checks:
            if only and spec.id not in only and spec.type not in only:
                continue
            try:
                results.append(CHECKS[spec.type](ctx, spec))
            except Exception as exc:  # a grader bug must not look like the learner's fault silently
                results.append(CheckResult(spec.id, spec.type, "failed", 0.0, spec.points,
                                           f"grader error ({type(exc).__name__}: {exc}); tell the instructor"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    dev = plat.device.name if plat.device else "unknown device"
    return Report(ex.id, ex.title, plat.backend, dev, seed, results, time.monotonic() - start)
