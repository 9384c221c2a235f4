"""``speedup`` (a check type): the submission against the exercise's own slow program, in the same grading.

A "find it and fix it" exercise starts from a correct but slow CUDA program (its ``starter.cu``). This check
runs the submission at the ``perf`` size, then the starter's mechanical HIP port (hipify) at the same size
on the same inputs and GPU, and grades the ratio of their kernel times (``time_ms``, written by both):
``slow / fixed >= min_speedup`` (default 1.5). Correctness is re-checked in the timed run. Both programs
run in the sandbox the same way (the starter is the exercise's own code, but it runs like any program).

A GPU is needed: without one the check is ``skipped`` and says so. A starter that does not build or run
is the grader's fault (the report's status is "error"), never the learner's.
"""

from __future__ import annotations

from rocmlab import settings
from rocmlab.grader.checks import (
    Context,
    MachineFault,
    compare_outputs,
    do_build,
    execute,
    kernel_time_ms,
    not_run,
    refuse_starved,
    result,
)
from rocmlab.grader.report import CheckResult
from rocmlab.grader.spec import CheckSpec
from rocmlab.cuda2hip import hipify


def _run_verdict(r: dict) -> tuple[str, str]:
    """("passed", "") when the timed program ended cleanly with a readable output, else ("failed", why)."""
    done = r["done"]
    refuse_starved(done)
    if done.timed_out or done.signal or done.returncode != 0:
        return "failed", "the program " + done.explain()
    if r["format_error"] or r["arrays"] is None:
        return "failed", f"the program ran but its output is unusable: {r['format_error'] or 'no output'}"
    return "passed", ""


def _time_ms(ctx: Context, r: dict) -> float | None:
    """The run's kernel time (ms) when the timing guard (:func:`~rocmlab.grader.checks.kernel_time_ms`) trusts it,
    else None."""
    ms, problem = kernel_time_ms(ctx.exercise, r)
    return None if problem else ms


def _baseline(ctx: Context, timeout_s: float) -> float:
    """The starter's kernel time (ms) at the perf size, on the same inputs and GPU."""
    port = hipify.hipify_source(ctx.exercise.starter, "starter.cu").hip
    base = Context(ctx.exercise, port, ctx.plat, ctx.seed, target=ctx.target, workdir=ctx.workdir)
    res = do_build(base)
    if res is None or not res.ok:
        raise MachineFault(f"the exercise's starter does not build here ({ctx.build_skip or 'see its log'}): "
                           "tell the instructor")
    r = execute(base, "perf", 2, timeout_s)
    status, msg = _run_verdict(r)
    ms = _time_ms(base, r) if status == "passed" else None
    if ms is None:
        raise MachineFault(f"the exercise's slow starter did not give a kernel time here ({msg}): tell the instructor")
    return ms


def check_speedup(ctx: Context, spec: CheckSpec) -> CheckResult:
    if ctx.build_skip:
        return result(spec, ctx, "skipped", f"not built here: {ctx.build_skip}")
    res = ctx.build
    if res is None or not res.ok:
        return not_run(spec, ctx, "the program does not compile")
    if not res.can_run:
        return result(spec, ctx, "skipped", f"needs a GPU: {res.cannot_run_reason}")
    if ctx.run.get("status") != "passed":
        return not_run(spec, ctx, "not timed: the correctness run did not pass")
    timeout_s = float(spec.options.get("timeout_s", settings.PERF_TIME_LIMIT_S))
    r = execute(ctx, "perf", 2, timeout_s)
    status, msg = _run_verdict(r)
    if status != "passed":
        return result(spec, ctx, "failed", "timed run: " + msg)
    ok, cmsg, _ = compare_outputs(ctx, r)
    if not ok:
        return result(spec, ctx, "failed", "wrong in the timed run (correctness is re-checked there): " + cmsg)
    mine = _time_ms(ctx, r)
    if mine is None:
        return result(spec, ctx, "failed", "the program reports no plausible kernel time (time_ms): time the "
                                           "kernel with events, as the starter does")
    slow = _baseline(ctx, timeout_s)
    ratio = slow / mine
    need = float(spec.options.get("min_speedup", 1.5))
    details = {"time_ms": mine, "starter_ms": slow, "speedup": ratio, "device": getattr(ctx.plat, "device_name", "")}
    label = (f"{mine:.4g} ms against the starter's {slow:.4g} ms in the same grading: {ratio:.2f}x "
             f"[{getattr(ctx.plat, 'backend', '?')}: {getattr(ctx.plat, 'device_name', '?')}]")
    if ratio >= need:
        return result(spec, ctx, "passed", f"{label}; needed {need:g}x", details)
    return result(spec, ctx, "failed", f"{label}; needs {need:g}x", details)


def register(checks: dict) -> None:
    """Add the ``speedup`` check type to the grader's table (in place)."""
    checks["speedup"] = check_speedup
