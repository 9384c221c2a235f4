"""The grader: ``check(exercise_id, source)`` runs an exercise's checks on a HIP submission.

Checks (one small unit each, :mod:`rocmlab.grader.checks`): ``static`` (on what the compiler sees: the
token stream of the code compiled for the AMD target, from THE trap scanner :mod:`rocmlab.cuda2hip.scan`:
no CUDA left, no warp-size assumptions, errors checked, required APIs), ``compile`` (for the AMD target,
always possible offline; only system headers and ``exercise_io.h`` may be read), ``run`` (in
:func:`rocmlab.sandbox.run`: its own unprivileged user, read-only system, only its scratch folder
writable, no network, own pid namespace, limits; on fresh random inputs from a seed that never enters
the sandbox), ``compare`` (against the numpy reference, computed outside, with the spec's tolerance; the
first mismatching index), and ``perf`` (effective TB/s or TFLOP/s against the device's peak from
``datasets/hardware.csv``, correctness re-checked in the timed run).

Statuses: ``passed``, ``failed``; ``not run`` (the submission kept it from running: it does not compile,
launches no kernel...): earns nothing; ``skipped`` (this machine cannot run it, e.g. no GPU): neither earns
nor loses points. A fault of the machine (no compiler, no target, no GPU for an asked-for target) makes the
whole report ``status="error"`` with the fix: never scored, never cached.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from rocmlab import sandbox, settings
from rocmlab.grader import isa_check, speedup
from rocmlab.grader.checks import CHECKS, NO_GPU_WORK, Context, MachineFault, analysis, new_seed, not_run
from rocmlab.grader.report import CheckResult, Report
from rocmlab.grader.spec import Exercise, ExerciseError, exercises, load
from rocmlab.machine.detect import current

speedup.register(CHECKS)    # the speedup check type: the fixed program against the exercise's slow starter
isa_check.register(CHECKS)   # the isa check type and the needs: amd-gpu option

__all__ = ["check", "refused", "exercises", "load", "Report", "CheckResult", "Exercise", "ExerciseError"]

#: Each grading's temporary folder in TMPDIR is WORK_PREFIX + pid + "-...": :func:`sweep_stale` removes those of
#: processes that are gone (a worker killed by Ctrl-C before its cleanup ran).
WORK_PREFIX = "rocmlab-grade-"
EMPTY = "your submission is empty: paste your whole HIP program (kernel, launch and main) and grade again"


def check(exercise_id: str, source: str, *, plat=None, seed: int | None = None, only=None,
          time_limit_s: float | None = None, target: str | None = None) -> Report:
    """Grade ``source`` (HIP C++) for an exercise. Never raises for a bad submission.

    ``seed`` is for instructors and tests (reproducible inputs); by default every call draws a
    fresh one. ``only`` limits the checks (ids or types). ``target`` overrides the build target.
    ``time_limit_s``: seconds per run; precedence: this argument > the exercise spec's ``timeout_s`` >
    ``settings.RUN_TIME_LIMIT_S``.
    """

    ex = load(exercise_id)
    if source is not None and not isinstance(source, str):
        raise TypeError("the submission must be HIP source text (str)")
    time_limit_s = None if time_limit_s is None else settings.time_limit(time_limit_s)
    plat = plat or current()
    seed = new_seed() if seed is None else int(seed)
    start = time.monotonic()
    specs = [s for s in ex.checks if not only or s.id in only or s.type in only]

    def report(results, status="graded", error=""):
        return _report(ex, plat, seed, results, time.monotonic() - start, status, error)

    work = tempfile.mkdtemp(prefix=f"{WORK_PREFIX}{os.getpid()}-")   # the pid: a killed worker's is swept later
    os.chmod(work, 0o711)   # the sandboxed program (another uid) may pass through to its scratch, not list it
    ctx = Context(ex, source or "", plat, seed, target=target, time_limit_s=time_limit_s, workdir=work,
                  specs=tuple(specs))
    try:
        if not (source or "").strip():
            return report([not_run(s, ctx, EMPTY) for s in specs])
        try:
            a = analysis(ctx)
        except (MachineFault, sandbox.SandboxError, OSError) as exc:   # clang's preprocessor could not run here
            return _not_scored(report, [], specs, str(exc))
        if a is not None and not a.gpu_work:
            return report([not_run(s, ctx, NO_GPU_WORK) for s in specs])
        results = []
        for spec in specs:
            try:
                results.append(CHECKS[spec.type](ctx, spec))
            except (MachineFault, sandbox.SandboxError) as exc:   # the machine's fault: not scored
                return _not_scored(report, results, specs, str(exc))
            except Exception as exc:  # noqa: BLE001 - the grader's own failure (disk full, temp space gone, a bug)
                # is never the learner's: not scored, not cached, the rerun grades it
                return _not_scored(report, results, specs, f"grader error ({type(exc).__name__}: "
                                   f"{str(exc)[:200]}); tell the instructor: the rerun grades it")
        return report(results)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _not_scored(report, results: list[CheckResult], specs, msg: str) -> Report:
    """A report with status "error": the checks that ran stay visible (the learner sees the static findings),
    none is scored, and it is never cached."""
    ran = [r.not_scored() for r in results]
    return report(ran + [CheckResult(s.id, s.type, "not run", 0.0, s.points, f"not graded: {msg}")
                         for s in specs[len(results):]], "error", msg)


def sweep_stale() -> int:
    """Remove the temporary folders (TMPDIR/rocmlab-grade-PID-*, the build cache's tmp-PID-*) of grading
    processes that are gone. Returns how many were removed."""
    from rocmlab.hip import compile as driver

    return (sandbox.processes.sweep_stale(tempfile.gettempdir(), WORK_PREFIX)
            + sandbox.processes.sweep_stale(driver.builds_dir(), "tmp-"))


def refused(exercise_id: str, reason: str, *, plat=None) -> Report:
    """The report for a hand-in the grader would not read (a symbolic link, not a regular file, too large):
    every check "not run" with ``reason`` (a learner's message), no points, never compiled or run."""

    ex = load(exercise_id)
    checks = [CheckResult(s.id, s.type, "not run", 0.0, s.points, f"not run: {reason}") for s in ex.checks]
    return _report(ex, plat or current(), None, checks, 0.0)


def _report(ex: Exercise, plat, seed: int | None, checks: list[CheckResult], duration_s: float,
            status: str = "graded", error: str = "") -> Report:
    """A Report naming this machine (backend, device) and how learner code is isolated here."""
    return Report(ex.id, ex.title, plat.backend, plat.device_name, seed, checks, duration_s, status, error,
                  sandbox.isolation().description)
