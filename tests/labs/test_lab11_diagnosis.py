"""Lab 11's graded diagnosis on a CPU: each answer is checked against what the wave64 simulator counts on the
course's own slow kernel (the mechanical port of the CUDA starter), on fresh random inputs, counted by the grader.
Issue 56: the diagnosis used to be checked against the programs the learner handed in beside it, so "none of these"
three times with empty kernels of the right names earned 3/3. Now a handed-in program is never counted: the attack
earns 0, and the right causes (the control) earn every point, in the notebook's check and in the re-grade."""

from __future__ import annotations

import json
import random

import pytest

from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.course.labs.lab11_counters_and_faults import counters as lab11_counters
from rocmlab.grader import items

pytestmark = pytest.mark.skipif(bool(lab11_counters.counters_problem()),
                                reason=lab11_counters.counters_problem() or "available")

CAUSE = {"lab11-coalesce": "uncoalesced global access", "lab11-lds-banks": "LDS bank conflicts",
         "lab11-occupancy": "occupancy limited by LDS"}
#: The attack of the issue: kernels of the right names that do nothing, so their counts show no cause.
STAND_INS = {ex: f'#include <hip/hip_runtime.h>\n__global__ void {k}(float* p) {{}}\n'
                 "int main() { hipLaunchKernelGGL(" + k + ", dim3(1), dim3(64), 0, 0, nullptr); return 0; }\n"
             for ex, k in lab11_counters.KERNELS.items()}


def test_right_diagnoses_score_and_wrong_ones_do_not(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_PROGRESS", str(tmp_path / "progress.json"))
    wrong = random.choice(list(CAUSE))                                  # one answer is wrong, two are right
    answers = {ex: CAUSE[ex] if ex != wrong else random.choice([c for c in (*CAUSE.values(), lab11_counters.NONE)
                                                                 if c != CAUSE[ex]])
               for ex in CAUSE}
    v = lab11_counters.check_diagnosis(answers, seed=random.getrandbits(31))
    assert v.earned == 2.0 and v.ok is False, v
    status = {row[1]: row[0] for row in v.rows}
    for ex, kernel in lab11_counters.KERNELS.items():
        assert status[kernel] == ("failed" if ex == wrong else "passed"), (ex, v)
    assert progress.load()[lab11.LAB]["diagnosis"]["earned"] == 2.0
    assert "[not yet]" in v._repr_html_() and "rocmlab-verdict" in v._repr_html_()


def test_none_of_these_with_stand_in_kernels_earns_nothing_and_the_right_causes_earn_every_point():
    attack = json.dumps({"diagnosis": {ex: lab11_counters.NONE for ex in CAUSE}, "sources": STAND_INS})
    rep = items.grade(lab11_counters.ITEM, attack)
    assert rep.status == "graded" and rep.earned == 0.0 and rep.possible == 3.0, rep.to_text()   # before: 3/3
    right = items.grade(lab11_counters.ITEM, lab11_counters.answer_json(CAUSE))      # control: the re-grade
    assert right.status == "graded" and right.earned == 3.0, right.to_text()
    also = json.dumps({"diagnosis": CAUSE, "sources": STAND_INS})                     # stand-ins change nothing
    assert items.grade(lab11_counters.ITEM, also).earned == 3.0


def test_unanswered_and_unknown_answers_are_said_without_running_anything():
    v = lab11_counters.check_diagnosis({ex: None for ex in CAUSE}, record=False)
    assert v.ok is None and "not answered yet" in v.message
    w = lab11_counters.check_diagnosis({"lab11-coalesce": "slow"}, record=False)
    assert w.earned == 0 and "'slow' is not one of the answers" in w.rows[0][3], w
    assert lab11_counters._cause(" Bank  Conflicts ") == "LDS bank conflicts"
    bad = items.grade(lab11_counters.ITEM, "not json")
    assert bad.earned == 0 and "hand in a JSON object" in bad.checks[0].message
    assert items.item_for(lab11.LAB, "diagnosis") == lab11_counters.ITEM
