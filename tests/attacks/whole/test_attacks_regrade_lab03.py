"""Issue 56, part B.3: Lab 03's re-grade decides from what the grader measures and reads itself. Before: the
unchanged slow step with the harness's ``_trace`` replaced by one that profiles a vectorised step got 8/8 (the slow
step alone: 4/8), and a function returning zeros got 4/8 (it neither syncs nor loops). Now ``no-host-sync`` and
``launches-flat`` score only with a right result, and in the re-grade each passes only when the sandbox's trace
and the grader's own reading of the file (:func:`read_step`, never run) agree. The attack earns what the slow step
earns (its results are right: 4/8), zeros earn 0; the control, an honest fix handed in the same way, earns 8/8."""

from __future__ import annotations

import random
import textwrap

import pytest

from rocmlab.course.labs.lab03_pytorch_on_rocm import task as slow_step
from rocmlab.grader.pyanswer import Answer

SLOW_STEP = textwrap.dedent('''
    import torch

    def fast_scores(x, w, b):
        rows, total = [], 0.0
        for i in range(x.shape[0]):
            h = torch.relu(x[i] @ w + b)
            s = h.sum()
            total += s.item()
            rows.append(h / (s + 1.0))
        return torch.stack(rows), total
''')

TRACE_FORGED = textwrap.dedent('''
    import sys
    import torch
    from torch.profiler import ProfilerActivity, profile


    def _vectorised(x, w, b):
        h = torch.relu(x @ w + b)
        return h / (h.sum(dim=1, keepdim=True) + 1.0), h.sum()


    def _forged_trace(fn, args, path):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            _vectorised(*args)
        prof.export_chrome_trace(path)


    sys.modules["__main__"]._trace = _forged_trace
''') + SLOW_STEP

ZEROS = textwrap.dedent('''
    import torch

    def fast_scores(x, w, b):
        return torch.zeros(x.shape[0], w.shape[1]), torch.zeros(())
''')

RIGHT = textwrap.dedent('''
    """My fix: the whole batch at once."""
    import torch

    EPS = 1.0


    def fast_scores(x, w, b):
        h = torch.relu(x @ w + b)
        return h / (h.sum(dim=1, keepdim=True) + EPS), h.sum()
''')


def _regrade(source: str, seed: int):
    return slow_step.grade(Answer(source, "fast_scores"), seed=seed, record=False)


@pytest.mark.parametrize("attack, earns", [("the slow step with a forged trace", 4.0), ("zeros", 0.0)])
def test_a_forged_trace_and_zeros_earn_no_structure_points_and_an_honest_fix_earns_every_one(attack, earns):
    seed = random.randrange(1 << 30)
    rep = _regrade({"the slow step with a forged trace": TRACE_FORGED, "zeros": ZEROS}[attack], seed)
    assert rep.earned == earns, rep.to_text()
    assert rep.check("no-host-sync").status == "failed" and rep.check("launches-flat").status == "failed"
    if attack == "zeros":
        assert "not scored until the result is right" in rep.check("launches-flat").message
    else:
        assert rep.check("same-result").passed                             # its results are the slow step's: right
        assert "does not take your file's traces on trust: line 2: imports sys" in rep.check("no-host-sync").message
    control = _regrade(RIGHT, seed)
    assert control.earned == control.available == 8.0, control.to_text()
    assert "reading of your file finds no loop" in control.check("launches-flat").message


@pytest.mark.parametrize("source, words", [
    ("import torch\nimport os\ndef fast_scores(x, w, b):\n    return x, x.sum()\n", "imports os"),
    ("import torch\nprint('hi')\ndef fast_scores(x, w, b):\n    return x, x.sum()\n", "code at the top level"),
    ("import torch\ndef fast_scores(x, w, b):\n    torch.profiler.profile = None\n    return x, x\n", "sets .profile"),
    ("import torch\ndef fast_scores(x, w, b):\n    return getattr(x, 'it' + 'em')(), x\n", "getattr"),
    ("import torch\ndef fast_scores(x, w, b):\n    return x.__float__(), x\n", ".__float__"),
])
def test_the_grader_refuses_a_file_that_reaches_beyond_a_step(source, words):
    r = slow_step.read_step(source)
    assert words in r.refused, r


def test_the_reading_finds_syncs_and_loops_and_none_in_a_fix():
    slow = slow_step.read_step(SLOW_STEP)
    assert not slow.refused and any("item()" in s for s in slow.syncs) and any("For" in s for s in slow.loops)
    rec = slow_step.read_step("import torch\ndef f(x, n):\n    return f(x, n - 1) + float(x.sum())\n")
    assert any("recursion" in s for s in rec.loops) and rec.syncs == ["line 3: float()"]
    fix = slow_step.read_step(RIGHT)                                        # control
    assert fix == slow_step.Reading([], [], "")
