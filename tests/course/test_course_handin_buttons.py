"""Hand in buttons (issue 38): a puzzle's result and Lab 01's wave-sum loop carry a **Hand in** button that
sends the learner's answer to the exchange under the item's id. Control: an unanswered puzzle (no kernel)
shows no button, and pressing Hand in with no exchange says so instead of handing anything in. The puzzle
parts run in a process of their own (Triton's CPU interpreter must be on before `import triton`)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from rocmlab.course import puzzles as P
    from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06
    P.setup()
    import IPython.display
    import ipywidgets as w

    def shown(result):
        seen = []
        IPython.display.display = lambda *objs, **_: seen.extend(objs)
        result._ipython_display_()
        boxes = [o for o in seen if isinstance(o, w.VBox)]
        return (boxes[0].children[0], boxes[0].children[1]) if boxes else (None, None)

    learner, exch = sys.argv[1], sys.argv[2]
    unanswered = P.Result("add-constant", False, "no kernel given yet", answered=False)
    assert shown(unanswered) == (None, None), "an unanswered puzzle shows no Hand in"
    kernel = P.reference_kernel("add-constant")     # a kernel with a source file, as a learner's cell has
    r = P.check("add-constant", kernel)
    assert r.passed and r.kernel is kernel
    btn, msg = shown(r)
    assert btn.description == "Hand in"
    os.environ.pop("ROCMLAB_EXCHANGE", None)         # control: no exchange, nothing handed in
    btn.click()
    assert "not handed in" in msg.value and "ROCMLAB_EXCHANGE" in msg.value, msg.value
    os.environ["ROCMLAB_EXCHANGE"], os.environ["JUPYTERHUB_USER"] = exch, learner
    btn.click()
    assert "not handed in" not in msg.value and "handed in" in msg.value, msg.value
    [h] = (Path(exch) / "inbound" / learner / "06-triton-on-amd" / "add-constant").glob("*.py")
    assert "tl.store" in h.read_text()
    print("OK")
""")


def test_a_puzzle_result_hands_in_the_learners_kernel_and_the_controls(tmp_path):
    from rocmlab.workshop import exchange as xc

    learner = f"ana{random.randrange(10**6)}"
    xc.prepare_learner(tmp_path / "exchange", learner)
    env = dict(os.environ, TRITON_INTERPRET="1", ROCMLAB_HOME=str(tmp_path / "home"))
    out = subprocess.run([sys.executable, "-c", SCRIPT, learner, str(tmp_path / "exchange")], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0 and out.stdout.strip().endswith("OK"), out.stdout + out.stderr


def test_lab01_wave_sum_loop_has_hand_in_beside_grade_again(tmp_path, monkeypatch):
    import ipywidgets as w

    from rocmlab.course.labs.lab01_hip_programming_model import lab as lab01

    monkeypatch.chdir(tmp_path)
    box = lab01.wave_sum_widget(tmp_path / "wave_sum.hip")
    buttons = [b.description for row in box.children if isinstance(row, w.HBox) for b in row.children]
    assert buttons == ["Grade again", "Hand in"]


def test_item_id_names_a_registered_item_and_refuses_an_unknown_puzzle():
    from rocmlab.course import puzzles as P
    from rocmlab.course.labs.lab06_triton_on_amd import puzzles as T06
    from rocmlab.grader import items

    for key in T06.PUZZLES:
        assert items.get(P.item_id(key)).kind == "puzzle"
    with pytest.raises(KeyError, match="unknown puzzle"):
        P.item_id("no-such-puzzle")


def launch_shape(n, block):          # Lab 01 exercise 1's answer, as the notebook's hand-in cell defines it
    blocks = (n + block - 1) // block
    return blocks, (block + 63) // 64, (block + 31) // 32


def test_lab01_exercise_hand_in_box_sends_the_function(tmp_path, monkeypatch):
    from rocmlab.course.handin import handin_box
    from rocmlab.workshop import exchange as xc

    learner = f"bo{random.randrange(10**6)}"
    xc.prepare_learner(tmp_path / "exchange", learner)
    monkeypatch.chdir(tmp_path)
    box = handin_box("01-hip-programming-model/launch-shape", launch_shape)
    btn, msg = box.children
    btn.click()                                   # control first: no exchange named, nothing handed in
    assert "not handed in" in msg.value
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(tmp_path / "exchange"))
    monkeypatch.setenv("JUPYTERHUB_USER", learner)
    btn.click()
    assert "not handed in" not in msg.value and "handed in" in msg.value, msg.value
    [h] = (tmp_path / "exchange" / "inbound" / learner / "01-hip-programming-model" / "launch-shape").glob("*.py")
    assert "def launch_shape(n, block):" in h.read_text()
