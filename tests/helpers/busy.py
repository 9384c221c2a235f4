"""A grade a busy machine stopped is never scored (rocmlab.sandbox.too_busy): a test grades again, up to three
times, and is skipped, saying so, when the machine was too busy every time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest


def grade_until_scored(grade: Callable[[], object], busy: Callable[[object], str], what: str,
                       tries: int = 3) -> tuple[object, float]:
    """(the first report ``busy`` finds nothing in, the seconds its grade took); ``busy(report)`` is the text that
    says the machine was too busy, or "" where it was not. Skips the test after ``tries`` busy grades."""
    for _ in range(tries):
        t0 = time.monotonic()
        report = grade()
        took = time.monotonic() - t0
        said = busy(report)
        if not said:
            return report, took
    pytest.skip(f"the machine was too busy {tries} times in a row to grade {what}: {said}")
