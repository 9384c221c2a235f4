"""Lab 11's graded diagnosis on a CPU: each answer is checked against what the wave64 simulator counts on the
learner's own kernel (fresh random inputs), not against a fixed key. The same answers score on one set of kernels
and not on another: the slow starter shows its cause, the fixed solution shows none."""

from __future__ import annotations

import random

import pytest

from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.course.labs.lab11_counters_and_faults import counters as lab11_counters
from rocmlab.grader import items, load

pytestmark = pytest.mark.skipif(bool(lab11_counters.counters_problem()),
                                reason=lab11_counters.counters_problem() or "available")

CAUSE = {"lab11-coalesce": "uncoalesced global access", "lab11-lds-banks": "LDS bank conflicts",
         "lab11-occupancy": "occupancy limited by LDS"}


def _source(ex_id: str, slow: bool) -> str:
    return lab11.starter_port(ex_id) if slow else load(ex_id).solution


def test_right_diagnoses_score_and_wrong_ones_do_not(tmp_path, monkeypatch):
    monkeypatch.setenv("ROCMLAB_PROGRESS", str(tmp_path / "progress.json"))
    slow = {ex: random.random() < 0.5 for ex in CAUSE}                 # which version each kernel is
    wrong = random.choice(list(CAUSE))                                  # one answer is wrong, two are right
    answers = {}
    for ex in CAUSE:
        right = CAUSE[ex] if slow[ex] else lab11_counters.NONE
        # the wrong answer names a cause neither version of this kernel has
        other = [c for c in CAUSE.values() if c != CAUSE[ex]]
        answers[ex] = right if ex != wrong else random.choice(other)
    sources = {ex: _source(ex, slow[ex]) for ex in CAUSE}
    v = lab11_counters.check_diagnosis(answers, sources, seed=random.getrandbits(31))
    assert v.earned == 2.0 and v.ok is False, v
    status = {row[1]: row[0] for row in v.rows}
    for ex, kernel in lab11_counters.KERNELS.items():
        assert status[kernel] == ("failed" if ex == wrong else "passed"), (ex, v)
    assert progress.load()[lab11.LAB]["diagnosis"]["earned"] == 2.0
    # the instructor's re-grade of the hand-in counts the handed-in programs again, with its own seed
    rep = items.grade(lab11_counters.ITEM, lab11_counters.answer_json(answers, sources))
    assert rep.status == "graded" and rep.earned == 2.0 and rep.possible == 3.0, rep.to_text()
    # control: the same answers on the other version of each kernel earn nothing (a right answer was right for
    # the kernel it was given with; the wrong one names a cause the other version does not show either)
    flipped = {ex: _source(ex, not slow[ex]) for ex in CAUSE}
    w = lab11_counters.check_diagnosis(answers, flipped, seed=random.getrandbits(31), record=False)
    assert w.earned == 0.0 and all(row[0] == "failed" for row in w.rows), (answers, w)
    assert "[not yet]" in w._repr_html_() and "rocmlab-verdict" in w._repr_html_()


def test_unanswered_and_unknown_answers_are_said_without_running_anything():
    v = lab11_counters.check_diagnosis({ex: None for ex in CAUSE}, {}, record=False)
    assert v.ok is None and "not answered yet" in v.message
    w = lab11_counters.check_diagnosis({"lab11-coalesce": "slow"}, {}, record=False)
    assert w.earned == 0 and "'slow' is not one of the answers" in w.rows[0][3], w
    assert lab11_counters._cause(" Bank  Conflicts ") == "LDS bank conflicts"
    bad = items.grade(lab11_counters.ITEM, "not json")
    assert bad.earned == 0 and "hand in a JSON object" in bad.checks[0].message
    assert items.item_for(lab11.LAB, "diagnosis") == lab11_counters.ITEM
