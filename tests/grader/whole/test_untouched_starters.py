"""No full marks for work not done: every exercise's untouched starter (the CUDA as handed out) and its automatic
port (rocmlab's CUDA->HIP translation of the starter, what `rocmlab port` writes) score below the points this
machine can award, by a check of the work the exercise asks for. That check is one every backend runs the same way
(a static check of the source; an ISA check wherever an AMD compiler is), so the port is below full marks on an
MI300X too. The control is the existing full-marks test of every reference solution
(tests/course/whole/test_exercises.py); here the solution of one exercise drawn at random is graded beside them."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import pytest

from rocmlab import grader
from rocmlab.cuda2hip import hipify

EXERCISES = [ex.id for ex in grader.exercises()]
#: Check types whose verdict does not depend on the backend: static analysis of the source everywhere; the ISA of
#: the AMD targets wherever an AMD compiler is (ROCm's hipcc, the offline root of CPU machines).
SAME_ON_EVERY_BACKEND = ("static", "isa")


def _source(eid: str, which: str) -> str:
    ex = grader.load(eid)
    return ex.starter if which == "starter" else hipify.hipify_source(ex.starter, "starter.cu").hip


def _grade(eid: str, which: str, src: str):
    """Only the checks that decide the verdict: points add up, so a failed static or ISA check alone keeps the
    whole grade below full marks on every backend (the run checks, which cost a simulated run of a slow starter,
    could only take more points away)."""
    for _ in range(3):                      # a busy machine stops a grade unscored: grade it again
        rep = grader.check(eid, src, only=SAME_ON_EVERY_BACKEND)
        if rep.status == "graded":
            return eid, which, rep
    return eid, which, rep


@pytest.fixture(scope="module")
def untouched():
    jobs = [(eid, which, _source(eid, which)) for eid in EXERCISES for which in ("starter", "port")]   # ported here:
    with ThreadPoolExecutor(2) as pool:                                     # torch's hipify imports in one thread
        return {(eid, which): rep for eid, which, rep in pool.map(lambda j: _grade(*j), jobs)}


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("which", ["starter", "port"])
@pytest.mark.parametrize("eid", EXERCISES)
def test_an_untouched_starter_and_its_port_are_below_full_marks(untouched, eid, which):
    rep = untouched[(eid, which)]
    if rep.status != "graded":
        pytest.skip(f"the machine stopped the grade three times: {rep.error}")
    assert not rep.full_marks and rep.earned < rep.available, rep.to_text()
    missed = [c for c in rep.checks if c.status in ("failed", "not run") and c.type in SAME_ON_EVERY_BACKEND]
    assert missed, ("only checks that depend on this machine failed: another backend could award full marks\n"
                    + rep.to_text())


@pytest.mark.timeout(900)
def test_control_a_reference_solution_still_earns_every_point_here():
    eid = random.choice(EXERCISES)
    for _ in range(3):
        rep = grader.check(eid, grader.load(eid).solution)
        if rep.status == "graded":
            break
    if rep.status != "graded":
        pytest.skip(f"the machine stopped the grade three times: {rep.error}")
    assert rep.full_marks and rep.earned == rep.available > 0, rep.to_text()
