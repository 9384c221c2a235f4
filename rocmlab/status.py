"""The status words rocmlab's results use: one vocabulary per kind of result, written once here.

=================  ==========================================  ===============================================
kind of result     words                                       used by
=================  ==========================================  ===============================================
a verdict          passed, failed, not run, skipped            grader checks, preflight labs
a grade report     graded, error                               :class:`rocmlab.grader.report.Report`
a machine check    ok, warn, fail, skip                        :mod:`rocmlab.doctor`
a build step       ok, failed, timeout, not-linked             ``rocmlab port``'s compile units and links
a finding          error, warning, info (a severity)           the trap scanner, :mod:`rocmlab.cuda2hip.scan`
a ported run       matched, mismatch, ran, run-failed          ``rocmlab port --run``'s runs
=================  ==========================================  ===============================================

A verdict's "not run" is the submission's doing (it did not compile, it launches no kernel): it earns
nothing. "skipped" is the machine's (no GPU here): it neither earns nor loses points. A grade report's
"error" is a fault of the machine: never scored, never cached. The compiler's own diagnostics keep
clang's words (error, warning, note). Every result type checks its status with :func:`check_status`.
"""

from __future__ import annotations

VERDICTS: tuple[str, ...] = ("passed", "failed", "not run", "skipped")
REPORT: tuple[str, ...] = ("graded", "error")
HEALTH: tuple[str, ...] = ("ok", "warn", "fail", "skip")
BUILD: tuple[str, ...] = ("ok", "failed", "timeout", "not-linked")
SEVERITIES: tuple[str, ...] = ("error", "warning", "info")
PORT_RUN: tuple[str, ...] = ("matched", "mismatch", "ran", "run-failed")

ALL: dict[str, tuple[str, ...]] = {"verdict": VERDICTS, "report": REPORT, "health": HEALTH, "build": BUILD,
                                   "severity": SEVERITIES, "port run": PORT_RUN}


def check_status(value: str, vocabulary: tuple[str, ...], what: str = "status") -> str:
    """``value`` if it is one of ``vocabulary``, else ValueError naming the words allowed."""
    if value not in vocabulary:
        raise ValueError(f"{what} {value!r} is not one of {', '.join(vocabulary)}")
    return value
