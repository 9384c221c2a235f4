"""Lab 04's task is a graded item (issue 38): the learner hands in their settings as JSON, and the instructor's
``rocmlab grade --exchange`` measures them again on the grader's own server (ROCMLAB_SERVE_URL) against a target
drawn from the grader's fresh seed. Right settings (a few in flight, or all at once) get every point, a wrong one
(one at a time) fewer; a grader without a server, or a server that does not answer, is a fault of the machine:
no grade is returned or cached (the control of each: the same hand-in with the server there)."""

from __future__ import annotations

import json
import random

import pytest

from rocmlab.course import progress
from rocmlab.course.handin import hand_in
from rocmlab.course.labs.lab04_vllm_on_rocm import task
from rocmlab.grader import items
from rocmlab.serve.fakeserver import FakeServer
from rocmlab.workshop import exchange as xc


@pytest.fixture(scope="module")
def fake():
    s = FakeServer(gap=0.001, ttft=0.01)
    yield s
    s.close()


@pytest.fixture
def exch(tmp_path, monkeypatch):
    root = tmp_path / "exchange"
    xc.prepare_learner(root, "alice")
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(root))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    monkeypatch.chdir(tmp_path)                   # the notebook's my-work/handin/ goes here
    monkeypatch.delenv("ROCMLAB_SERVE_URL", raising=False)
    return root


def test_lab04_task_is_an_item_answered_by_json():
    item = items.get(task.ITEM)
    assert item.kind == "task" and item.suffix == ".json" and item.accepts(".json") and not item.accepts(".py")
    assert items.item_for(task.LAB, task.TASK) == task.ITEM
    assert item.possible == progress.LAB_TASKS[task.LAB][task.TASK]


def _grade(exch, monkeypatch, url):
    if url:
        monkeypatch.setenv("ROCMLAB_SERVE_URL", url)
    else:
        monkeypatch.delenv("ROCMLAB_SERVE_URL", raising=False)
    return xc.grade_exchange(exch, [task.ITEM], workers=1, progress=False)


def test_handed_in_settings_are_measured_again_on_the_graders_server(exch, fake, monkeypatch):
    right = random.choice([4, 32])                # a few in flight, or all at once: both right by the definition
    where = hand_in(task.ITEM, {"max_concurrency": right})
    assert where.suffix == ".json" and json.loads(where.read_text()) == {"max_concurrency": right}
    # no server on the grader's side: a fault of the machine, nothing returned, nothing cached
    c = _grade(exch, monkeypatch, None)
    assert c["graded"] == 1 and c["returned"] == 0 and c.get("not_graded") == 1, c
    assert progress.summary()["total"]["instructor_graded"] == 0
    result = json.loads(next((exch / "grades" / "results").glob("*.json")).read_text())
    assert result["status"] == "error" and "ROCMLAB_SERVE_URL" in result["error"]
    # a server that does not answer: the same
    c = _grade(exch, monkeypatch, "http://127.0.0.1:9")
    assert c["graded"] == 1 and c["returned"] == 0, c
    # control: with the server there, the rerun grades it: every point, measured on that server
    c = _grade(exch, monkeypatch, fake.url)
    assert c["graded"] == 1 and c["returned"] == 1, c
    fb = xc.feedback(task.ITEM)
    assert fb.info["earned"] == fb.info["possible"] == 10, fb.text
    assert fake.url in fb.text and "re-grade on the grader's server" in fb.text and "no learner code runs" in fb.text
    row = next(r for lab in progress.summary()["labs"] for r in lab["tasks"] if r["item"] == task.ITEM)
    assert row["instructor"] == 10


def test_a_wrong_or_malformed_hand_in_is_scored_below_the_right_one(exch, fake, monkeypatch):
    hand_in(task.ITEM, {"max_concurrency": 1})    # one at a time: never the k-fold throughput
    _grade(exch, monkeypatch, fake.url)
    fb = xc.feedback(task.ITEM)
    assert fb.info["earned"] < 10 and "raise max_concurrency" in fb.text, fb.text
    rep = items.grade(task.ITEM, "max_concurrency = 4", seed=random.randrange(10**6))
    assert rep.status == "graded" and rep.earned == 0 and "not JSON" in rep.check("settings").message
    rep = items.grade(task.ITEM, '{"max_concurrency": 0}')
    assert rep.status == "graded" and rep.earned == 0 and "whole number >= 1" in rep.check("settings").message
