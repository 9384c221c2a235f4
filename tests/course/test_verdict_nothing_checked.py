"""A grade with not one point checked on this machine (every check skipped: no server, no GPU) is never shown
as correct: it says what could not be checked and why, in the verdict element's neutral colour, and it is not
recorded. The same rule for every backend and every way a report is shown (the notebook element, the
verdict line alone, the terminal's text, a lab task's self-test), each with its control: the same report
with one check that ran is shown and recorded as before."""

from __future__ import annotations

import json
import os
import random
import re
import socket

import pytest

from rocmlab.course import progress
from rocmlab.course import tasks as T
from rocmlab.course.verdict import COLOURS, NOT_CHECKED, report_element
from rocmlab.course.widgets.grader import report_verdict
from rocmlab.grader.report import CheckResult, Report

BACKENDS = ("cpu", "rocm", "cuda", "live server", "no server")


def _checks(rng: random.Random, one_ran: str | None = None) -> list[CheckResult]:
    """2-5 checks of random points, all skipped with a reason; ``one_ran`` ("passed"/"failed") makes the first
    one run (the control)."""
    out = []
    for i in range(rng.randint(2, 5)):
        pts = float(rng.randint(1, 9))
        out.append(CheckResult(f"check-{i}-{rng.randrange(1000)}", rng.choice(["run", "perf", "compare"]), "skipped",
                               0.0, pts, f"no GPU here (reason {rng.randrange(10**6)})"))
    if one_ran:
        c = out[0]
        out[0] = CheckResult(c.id, c.type, one_ran, c.max_points if one_ran == "passed" else 0.0, c.max_points,
                             "it ran", "a hint")
    return out


def _report(backend: str, checks) -> Report:
    return Report(f"ex-{random.randrange(1000)}", "An exercise", backend, "a device", random.randrange(2**31), checks)


def _verdict_line(page: str) -> str:
    return re.search(r"<p class='rocmlab-verdict'.*?</p>", page, re.S).group(0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nothing_checked_is_never_correct_says_why_neutral_and_is_not_recorded(backend, _own_progress_record):
    rng = random.Random(os.urandom(8))
    rep = _report(backend, _checks(rng))
    why = rep.checks[0].message
    assert rep.nothing_checked and not rep.full_marks
    for page in (report_element(rep), report_verdict(rep)):
        line = _verdict_line(page)
        assert "[correct]" not in line and "[not yet]" not in line
        assert f"[{NOT_CHECKED}]" in line and COLOURS[None] in line
        assert why in line and "not recorded" in line
        assert f"0 of {rep.possible:g} points checked" in line
    text = rep.to_text()
    assert "NOT CHECKED here" in text and why in text and f"[{backend}: a device]" in text
    assert progress.record_report("lab", "task", rep) is False
    assert not _own_progress_record.exists()
    started = __import__("time").monotonic()
    T.finish("lab", "task", "A task", rep.checks, backend, "a device", 1, started, record=True)
    assert not _own_progress_record.exists()


@pytest.mark.parametrize("backend", BACKENDS)
def test_control_one_check_that_ran_is_shown_and_recorded_as_before(backend, _own_progress_record):
    rng = random.Random(os.urandom(8))
    ok = _report(backend, _checks(rng, "passed"))
    assert not ok.nothing_checked and ok.full_marks
    line = _verdict_line(report_element(ok))
    assert "[correct]" in line and COLOURS[True] in line and f"[{NOT_CHECKED}]" not in line
    bad = _report(backend, _checks(rng, "failed"))
    line = _verdict_line(report_verdict(bad))
    assert "[not yet]" in line and COLOURS[False] in line
    assert progress.record_report("lab", "task", ok) is True
    assert json.loads(_own_progress_record.read_text())["lab"]["task"]["earnable"] == ok.available


def test_a_failed_check_with_the_rest_skipped_is_not_yet_not_unchecked():
    """A 'not run' (the submission's doing) counts as checked: 0 points earned of what ran, shown as not yet."""
    rng = random.Random(os.urandom(8))
    checks = _checks(rng)
    c = checks[0]
    checks[0] = CheckResult(c.id, "compile", "not run", 0.0, c.max_points, "it did not compile", "fix line 3")
    rep = _report("cpu", checks)
    assert not rep.nothing_checked and rep.available == c.max_points
    assert "[not yet]" in _verdict_line(report_element(rep))


def test_self_test_of_a_task_with_nothing_checked_says_so():
    rng = random.Random(os.urandom(8))

    def grade(answer, record=False):
        return T.finish("lab", "task", "A task", _checks(rng, answer), "no server", "none", 1, 0.0, record)

    rows = T.self_test(grade, None, {"wrong": None})
    assert [r["verdict"] for r in rows] == ["not checked here"] * 2 and not rows.ok
    assert rows[0]["first message"].startswith("no GPU here")
    control = T.self_test(grade, "passed", {"wrong": "failed"})
    assert [r["verdict"] for r in control] == ["full marks", "caught"] and control.ok


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lab04_with_its_server_stopped_is_not_checked_says_how_to_start_it_and_is_not_recorded(
        _own_progress_record):
    from rocmlab.course.labs.lab04_vllm_on_rocm import task as task04

    target = task04.draw(quick=True)
    url = f"http://127.0.0.1:{_free_port()}"               # nothing listens there: a stopped server
    rep = task04.grade(target, {"max_concurrency": 32}, url)
    line = _verdict_line(rep._repr_html_())
    assert rep.nothing_checked and "[correct]" not in line and f"[{NOT_CHECKED}]" in line
    assert "does not answer" in line and "section 3" in line and COLOURS[None] in line
    assert not _own_progress_record.exists()
    # control: bad settings are checked (the static check runs without a server) and recorded as not yet
    bad = task04.grade(target, {"max_concurrency": -3}, url)
    assert not bad.nothing_checked and "[not yet]" in _verdict_line(bad._repr_html_())
    assert _own_progress_record.exists()
