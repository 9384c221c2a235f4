"""The course's one verdict element (rocmlab.course.verdict): one verdict line with the points first, then
the checks, then the details folded; messages in the learner's words, and a skip that says its own reason."""

from __future__ import annotations

import os
import re

from rocmlab.course.verdict import element, report_element, report_text
from rocmlab.grader.report import CheckResult, Report


def _report(checks, seed=None, status="graded", error=""):
    seed = int.from_bytes(os.urandom(3), "little") if seed is None else seed
    return Report("ex", "Exercise", "cpu", "test CPU", seed, checks, 1.5, status, error, "bubblewrap, own user")


def _order(page: str) -> list[str]:
    """The parts of an element in the order they appear."""
    marks = {"verdict": "class='rocmlab-verdict'", "checks": "class='rocmlab-checks'",
             "details": "<details"}
    found = sorted((page.find(v), k) for k, v in marks.items() if v in page)
    return [k for _, k in found]


def test_a_report_shows_one_verdict_line_then_the_checks_then_the_details_folded():
    pts = float(1 + int.from_bytes(os.urandom(1), "little") % 5)
    rep = _report([CheckResult("compiles", "compile", "passed", 2, 2, "it compiles"),
                   CheckResult("correct", "compare", "failed", 0, pts, "3 of 100 values differ", "mask the tail")])
    page = report_element(rep)
    assert _order(page) == ["verdict", "checks", "details"]
    assert page.count("rocmlab-verdict") == 1                        # said once, not three times
    line = re.search(r"<p class='rocmlab-verdict'.*?</p>", page).group(0)
    assert "[not yet]" in line and f"2/{2 + pts:g} points here" in line and "Start with correct" in line
    rows = page[page.find("rocmlab-checks"):page.find("<details")]
    assert "3 of 100 values differ. What to do: mask the tail" in rows     # the next step, in the check's row
    assert "3 of 100 values differ" not in line                          # said once, in its row
    details = page[page.find("<details"):]
    assert "bubblewrap" in details and str(rep.seed) in details      # isolation and seed are folded away
    assert "bubblewrap" not in page[:page.find("<details")]
    # the control: a report without a seed or isolation still has the line first, and no empty details
    bare = Report("ex", "Exercise", "cpu", "", None, [CheckResult("a", "static", "passed", 1, 1, "ok")])
    assert _order(report_element(bare))[0] == "verdict" and "[correct]" in report_element(bare)


def test_a_skip_says_its_own_reason_not_another_machine():
    noisy = "the machine was too noisy to time it (spread 40%): grade again when it is idle"
    rep = _report([CheckResult("correct", "compare", "passed", 3, 3, "all values match"),
                   CheckResult("speed", "perf", "skipped", 0, 2, noisy)])
    text = report_text(rep)
    assert "another machine" not in text and "too noisy" in text and "2 points not checked here" in text
    gpu = _report([CheckResult("runs", "run", "skipped", 0, 4, "no GPU here: run it on an MI300X")])
    assert "no GPU here" in report_text(gpu)
    # the control: nothing skipped, nothing said about skips
    assert "not checked" not in report_text(_report([CheckResult("a", "static", "passed", 1, 1, "ok")]))


def test_a_machine_fault_is_not_graded_and_says_so():
    rep = _report([CheckResult("a", "static", "passed", 1, 1, "ok")], status="error",
                  error="no HIP compiler: run ./go setup")
    page = report_element(rep)
    assert "[not graded here]" in page and "not your code" in page and "points here" not in page


def test_element_escapes_and_leaves_out_empty_details():
    page = element(False, "<script>x</script>", "0/1 points", [("failed", "c", "0/1", "<b>")], [("log", "")])
    assert "<script>" not in page and "&lt;b&gt;" in page and "<details" not in page
    assert "<details" in element(True, "ok", details=[("log", "line 1\nline 2\n")])


API_WORDS = ("link=True links one", "Server.start + wait_healthy", "write it with xio::Writer",
             "does not start with RLX1", "need another machine: see the skipped")


def test_no_api_words_reach_the_learner():
    """The messages issue 44 names are gone from the package (grep), with a control that the grep works."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "rocmlab"
    text = "\n".join(p.read_text(errors="replace") for p in root.rglob("*.py"))
    assert "def report_element" in text                               # the control: the grep reads the code
    found = [w for w in API_WORDS if w in text]
    assert not found, found
