"""The graded task of Labs 03, 04, 05, 07 and 08, graded like Lab 06's puzzles.

This module is the machinery the tasks share; each task is the ``task`` module of its lab's package
(``rocmlab.course.labs.labNN_name.task``):

=======================  ===================================  ==================================================
lab                      task module                          the learner ...
=======================  ===================================  ==================================================
03-pytorch-on-rocm       ``lab03_pytorch_on_rocm.task``       finds in the profiler's trace why a step is slow,
                                                              fixes it
04-vllm-on-rocm          ``lab04_vllm_on_rocm.task``          picks a concurrency that meets a throughput/latency
                                                              target
05-quickreduce-tuning    ``lab05_quickreduce_tuning.task``    picks a codec and block size per message size
07-matrix-cores          ``lab07_matrix_cores.task``          finds the VGPR budget for a number of waves per SIMD
08-mi300x-package        ``lab08_mi300x_package.task``        writes the XCD-aware remap of the program id
=======================  ===================================  ==================================================

Every grade draws fresh random inputs (a seed the learner does not choose), runs the learner's answer,
and returns a :class:`rocmlab.grader.report.Report`: one check per line with its verdict (passed,
failed, not run, skipped: :mod:`rocmlab.status`) and points. A check this machine cannot run is
"skipped": it neither earns nor loses points, and its message says what it needs. :func:`finish` records
the points in the learner's progress (:mod:`rocmlab.course.progress`).
"""

from __future__ import annotations

import os
import time

from rocmlab.course import progress
from rocmlab.grader.report import CheckResult, Report


def draw_seed(seed: int | None = None) -> int:
    """``seed``, or a fresh one from the OS (every grade sees new inputs)."""
    return int(seed) if seed is not None else int.from_bytes(os.urandom(4), "little")


def passed(cid: str, ctype: str, points: float, message: str) -> CheckResult:
    return CheckResult(cid, ctype, "passed", points, points, message)


def failed(cid: str, ctype: str, points: float, message: str, hint: str = "") -> CheckResult:
    return CheckResult(cid, ctype, "failed", 0.0, points, message, hint)


def not_run(cid: str, ctype: str, points: float, message: str, hint: str = "") -> CheckResult:
    """The submission's doing (it raised, it returned nothing): earns nothing."""
    return CheckResult(cid, ctype, "not run", 0.0, points, message, hint)


def skipped(cid: str, ctype: str, points: float, why: str) -> CheckResult:
    """The machine's doing (no GPU, no server): neither earns nor loses points."""
    return CheckResult(cid, ctype, "skipped", 0.0, points, why)


def verdict(ok: bool, cid: str, ctype: str, points: float, good: str, bad: str, hint: str = "") -> CheckResult:
    return passed(cid, ctype, points, good) if ok else failed(cid, ctype, points, bad, hint)


def _left(table_html: str, one_line: tuple[int, ...], kind: str) -> str:
    """A table whose prose reads from the left (JupyterLab right-aligns table cells unless told otherwise),
    with the short columns ``one_line`` (1-based) kept on one line."""
    cls = f"rocmlab-task-{kind}"          # a class per kind of table: a page's styles apply to every output
    keep = ", ".join(f".{cls} td:nth-child({i})" for i in one_line)
    style = (f".{cls} td, .{cls} th {{text-align: left !important; vertical-align: top}}"
             + (f" {keep} {{white-space: nowrap}}" if keep else ""))
    return (f"<div class='{cls}'><style>{style}</style>"
            + table_html.replace("<td>", "<td style='text-align:left;vertical-align:top'>") + "</div>")


class TaskReport(Report):
    """A grader :class:`Report` that shows itself: a table in a notebook, text in a terminal."""

    def _repr_html_(self) -> str:
        from rocmlab.course.verdict import report_element
        return report_element(self)          # the course's one verdict element

    def __repr__(self) -> str:
        return self.to_text()


def finish(lab: str, task: str, title: str, checks: list[CheckResult], backend: str, device: str, seed: int,
           started: float, record: bool = True) -> TaskReport:
    """The report of one grade; its points go to the learner's progress when ``record``."""
    rep = TaskReport(f"{lab} / {task}", title, backend, device, seed, checks, round(time.monotonic() - started, 2))
    if record and not rep.nothing_checked:      # a grade with nothing checked here is not an attempt
        progress.record(lab, task, earned=rep.earned, earnable=rep.available, possible=rep.possible,
                        backend=backend)
    return rep


class SelfTest(list):
    """The rows of :func:`self_test`; ``ok`` when the reference earned full marks and every wrong answer
    was caught. Shows itself as a table."""

    @property
    def ok(self) -> bool:
        return bool(self) and self[0]["verdict"] == "full marks" and all(r["verdict"] == "caught" for r in self[1:])

    def _repr_html_(self) -> str:
        from rocmlab.html_table import html_table
        return _left(html_table(["answer", "points", "verdict", "first message"],
                                [[r["answer"], r["points"], r["verdict"], r["first message"]] for r in self]),
                     (2, 3), "selftest")                      # points, verdict

    def __repr__(self) -> str:
        return "\n".join(f"{r['answer']}: {r['points']} ({r['verdict']}) {r['first message']}" for r in self)


def self_test(grade, right, wrongs: dict, **kw) -> SelfTest:
    """The task's own check, as Lab 06's puzzles do it: the reference answer must earn every point this
    machine can award and each typical wrong answer must lose some. One row per answer, with the first
    message a learner would see."""
    rows = SelfTest()
    for name, answer in [("reference answer", right)] + list(wrongs.items()):
        rep = grade(answer, record=False, **kw)
        bad = [c for c in rep.checks if c.status in ("failed", "not run")]
        verdict = "not checked here" if rep.nothing_checked else "full marks" if rep.full_marks else "caught"
        rows.append({"answer": name, "points": f"{rep.earned:g}/{rep.available:g}", "verdict": verdict,
                     "first message": f"{bad[0].id}: {bad[0].message}" if bad else rep.unchecked_reason()})
    return rows
