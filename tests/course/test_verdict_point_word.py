"""A verdict counts its unchecked points in English: "1 point not checked here", "2 points ..." (the browser pass
showed "1 points not checked here" for lds-tiles-prefetch's bandwidth check, 1 point skipped on a CPU)."""

from __future__ import annotations

import random

from rocmlab.course.verdict import report_text
from rocmlab.grader.report import CheckResult, Report


def _text(skipped_points: float) -> str:
    rep = Report("ex", "Exercise", "cpu", "test CPU", random.randrange(1 << 20),
                 [CheckResult("correct", "compare", "passed", 3, 3, "all values match"),
                  CheckResult("bandwidth", "perf", "skipped", 0, skipped_points, "needs a GPU: no AMD GPU here")],
                 1.0, "graded", "", "none")
    return report_text(rep)


def test_one_skipped_point_is_one_point():
    text = _text(1)
    assert "1 point not checked here (bandwidth: needs a GPU" in text and "1 points" not in text


def test_more_skipped_points_stay_plural():   # the control: the plural is kept where it belongs
    n = random.randint(2, 9)
    assert f"{n} points not checked here" in _text(n)
    assert "0.5 points not checked here" in _text(0.5)
