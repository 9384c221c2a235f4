"""Lab 04's graded task (rocmlab.course.labs.lab04_vllm_on_rocm.task): paired, interleaved rounds against a baseline
measured in the same grade; a check is decided only when the rounds agree, and where the machine is too noisy
no timing check is scored or recorded. The decision rule is driven with scripted measurements (each with its
control); the whole grade runs on the exactly timed fake server. The live vLLM server's version of this is
benchmarks/lab04_task_tries.py (right and wrong settings, 5 tries each)."""

from __future__ import annotations

import json

import pytest

from rocmlab.course import progress
from rocmlab.course.labs.lab04_vllm_on_rocm import task
from rocmlab.serve.fakeserver import FakeServer

TARGET = task.Target(n=8, input_len=16, output_len=12, throughput_x=1.5, ttft_x=4.0, seed=0)


def scripted(monkeypatch, rounds):
    """bench.run answers from ``rounds``: one (baseline, yours) pair of (throughput, median TTFT) per round, in the
    order the grade runs them (baseline first in rounds 1, 3, 5). Returns the list of calls made."""
    from rocmlab.serve import bench

    answers = []
    for i, (base, mine) in enumerate(rounds):
        answers += [base, mine] if i % 2 == 0 else [mine, base]
    calls = []

    def run(url, reqs, **kw):
        thr, ttft = answers[len(calls)]
        calls.append(kw.get("max_concurrency"))
        return {"output_throughput": thr, "median_ttft_ms": ttft, "failed": 0}

    monkeypatch.setattr(bench, "check_server", lambda url: ["m"])
    monkeypatch.setattr(bench, "random_requests", lambda *a, **k: ["r"])
    monkeypatch.setattr(bench, "run", run)
    return calls


def test_three_agreeing_rounds_decide_and_the_order_alternates(monkeypatch):
    calls = scripted(monkeypatch, [((10, 50), (30, 60))] * 5)
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert rep.full_marks and rep.earned == 10, rep.to_text()
    assert calls == [1, 4, 4, 1, 1, 4]                 # 3 rounds, baseline first, then yours first, ...


def test_split_rounds_go_on_to_five_and_four_agreeing_decide(monkeypatch):
    # throughput ratios 3, 1.2, 3, 3, 3: split after 3 rounds, 4 of 5 meet the 1.5x target
    calls = scripted(monkeypatch, [((10, 50), (30, 60)), ((10, 50), (12, 60))] + [((10, 50), (30, 60))] * 3)
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert len(calls) == 10 and rep.full_marks, rep.to_text()
    assert "5 paired rounds" in rep.check("throughput").message
    # control: 4 of 9 meet it, 5 miss it: neither side reaches 6 of 9, too noisy, nothing scored
    calls = scripted(monkeypatch, [((10, 50), (30, 60)), ((10, 50), (12, 60))] * 4 + [((10, 50), (12, 60))])
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert rep.check("throughput").status == "skipped" and "too noisy" in rep.check("throughput").message
    assert len(calls) == 18 and rep.earned == rep.available == 2


def test_a_right_answer_on_a_busy_machine_is_decided_by_more_rounds_not_left_unscored(monkeypatch):
    """The live server's noisy TTFT ratios around a 4x target (2.5, 1.9, 6.0, 2.0, 6.9: 3 of 5, which left the
    right answer unscored before): two more rounds that meet it make 5 of 7, and the right answer gets every
    point. Control: a wrong answer whose rounds miss 5 of 7 the same way loses the TTFT points."""
    ok = [125, 95, 300, 100, 345, 105, 110]             # / 50 ms baseline: 2.5, 1.9, 6.0, 2.0, 6.9, 2.1, 2.2
    calls = scripted(monkeypatch, [((10, 50), (30, t)) for t in ok])
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert rep.full_marks and rep.earned == 10 and len(calls) == 14, rep.to_text()
    assert "5 rounds that decided it" not in rep.check("ttft").message
    assert "7 rounds that decided it" in rep.check("ttft").message
    assert "3 rounds that decided it" in rep.check("throughput").message       # decided early, kept
    bad = [300, 345, 100, 300, 95, 330, 310]            # 6.0, 6.9, 2.0, 6.0, 1.9, 6.6, 6.2: 5 of 7 over 4x
    scripted(monkeypatch, [((10, 50), (30, t)) for t in bad])
    rep = task.grade(TARGET, {"max_concurrency": 32}, "http://x", record=False)
    assert rep.check("ttft").status == "failed" and rep.check("throughput").passed and rep.earned == 6


@pytest.mark.parametrize(("votes", "decided"), [
    ([True] * 3, True), ([False] * 3, False), ([True, True, False], None), ([True] * 4, None),
    ([True, False, True, True, True], True), ([True, False, True, False, True], None),
    ([True, False] * 3 + [True], None), ([True, False, True, True, False, True, True], True),
    ([False, True] * 4 + [False], None), ([False, True, False, False, False, True, False, False, True], False)])
def test_decide_needs_3_of_3_4_of_5_5_of_7_6_of_9(votes, decided):
    assert task._decide(votes) is decided


def test_a_wrong_answer_is_never_half_scored_where_the_machine_cannot_judge(monkeypatch, tmp_path):
    """Throughput clearly met, TTFT split around its target through all 9 rounds: neither timing check is scored
    (not 6 of 10 as before), and nothing is recorded; the control, the same with TTFT clearly missed, is scored and recorded."""
    path = tmp_path / "progress.json"
    monkeypatch.setattr(progress, "progress_file", lambda: path)
    ttfts = [300, 100, 300, 100, 100, 300, 100, 300, 300]   # yours / 50 ms: 6x, 2x, ... around a 4x target: 4 of 9
    scripted(monkeypatch, [((10, 50), (30, t)) for t in ttfts])
    rep = task.grade(TARGET, {"max_concurrency": 32}, "http://x")
    assert rep.check("throughput").status == rep.check("ttft").status == "skipped", rep.to_text()
    assert rep.earned == rep.available == 2 and not path.exists()
    scripted(monkeypatch, [((10, 50), (30, 300))] * 5)       # control: TTFT clearly over 4x
    rep = task.grade(TARGET, {"max_concurrency": 32}, "http://x")
    assert rep.check("throughput").passed and rep.check("ttft").status == "failed" and rep.earned == 6
    assert json.loads(path.read_text())[task.LAB][task.TASK]["earned"] == 6


def test_failed_requests_fail_the_settings_and_a_failing_baseline_is_the_machines(monkeypatch):
    from rocmlab.serve import bench

    scripted(monkeypatch, [((10, 50), (30, 60))] * 5)
    real = bench.run
    monkeypatch.setattr(bench, "run", lambda url, reqs, **kw: {**real(url, reqs, **kw),
                                                               "failed": 3 if kw.get("max_concurrency") == 4 else 0})
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert rep.check("settings").status == "failed" and rep.earned == 0
    scripted(monkeypatch, [((10, 50), (30, 60))] * 5)
    real = bench.run
    monkeypatch.setattr(bench, "run", lambda url, reqs, **kw: {**real(url, reqs, **kw), "errors": ["boom"],
                                                               "failed": 3 if kw.get("max_concurrency") == 1 else 0})
    rep = task.grade(TARGET, {"max_concurrency": 4}, "http://x", record=False)
    assert rep.check("throughput").status == "skipped" and "the baseline" in rep.check("throughput").message


@pytest.fixture(scope="module")
def fake():
    s = FakeServer(gap=0.001, ttft=0.01)
    yield s
    s.close()


def test_on_the_timed_fake_server_every_right_answer_scores_and_a_wrong_one_never_above(fake):
    """A fresh target: max_concurrency 4 and 32 (more than the 8 requests: all at once) meet every drawn target
    on a server whose timing does not depend on the load, so each is right by the task's definition and gets
    every point; one at a time (the wrong answer here) scores below them. (One target: a grade is up to 18
    benchmark runs; the live server's five tries each are benchmarks/lab04_task_tries.py.)"""
    target = task.draw(quick=True)
    target = task.Target(8, 16, 12, target.throughput_x, target.ttft_x, target.seed)
    right = [task.grade(target, {"max_concurrency": c}, fake.url, record=False) for c in (4, 32)]
    wrong = task.grade(target, {"max_concurrency": 1}, fake.url, record=False)
    assert all(r.full_marks and r.earned == 10 for r in right), [r.to_text() for r in right if not r.full_marks]
    assert wrong.earned < min(r.earned for r in right) and wrong.check("throughput").status == "failed"
