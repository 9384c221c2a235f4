"""Self-study hand-in: with no workshop exchange, a Hand in button (and `rocmlab handin`) says in one line what a
hand-in is for and how to get a grade of record alone: an exchange of one's own, graded by the instructor's own
command. The flow it names works as written (prepare, hand in, grade, progress shows it instructor-graded), and
`rocmlab progress --exchange X` reads X even where no USER is set. Controls: with an exchange the button hands in;
`progress` without an exchange says self-study."""

from __future__ import annotations

import os
import random
import shutil

import pytest

from rocmlab.cli import main
from rocmlab.course import handin as H
from rocmlab.course import progress

ITEM = "vector-add"


def test_the_button_without_an_exchange_says_what_a_hand_in_is_for_and_the_way_alone(monkeypatch, tmp_path):
    monkeypatch.delenv("ROCMLAB_EXCHANGE", raising=False)
    monkeypatch.chdir(tmp_path)
    src = tmp_path / "mine.hip"
    src.write_text("// my answer\n")
    btn = H.handin_button(ITEM, str(src))
    btn.click()
    text = btn.message.value
    assert "self-study" in text and "grade of record" in text and "\n" not in text
    for step in ("rocmlab handin --prepare", f"rocmlab grade --exercise {ITEM} --exchange", "rocmlab progress --exchange",
                 "ROCMLAB_EXCHANGE="):
        assert step in text, (step, text)
    assert not (tmp_path / "my-work").exists() or not any((tmp_path / "my-work").rglob("*.hip"))
    # control: with an exchange of one's own, the same button hands in
    learner = f"solo{random.randrange(10**6)}"
    from rocmlab.workshop import exchange as xc
    xc.prepare_learner(tmp_path / "x", learner)
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(tmp_path / "x"))
    monkeypatch.setenv("JUPYTERHUB_USER", learner)
    btn.click()
    assert "handed in as" in btn.message.value and "self-study" not in btn.message.value
    assert list((tmp_path / "x" / "inbound" / learner / ITEM).glob("*.hip"))


def test_the_cli_without_an_exchange_says_the_same(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("ROCMLAB_EXCHANGE", raising=False)
    src = tmp_path / "mine.hip"
    src.write_text("// my answer\n")
    assert main(["handin", ITEM, str(src)]) == 2
    err = capsys.readouterr().err
    assert "grade of record" in err and f"rocmlab grade --exercise {ITEM}" in err


def test_progress_with_an_exchange_and_no_user_variable_reads_it(monkeypatch, tmp_path):
    from rocmlab.workshop import exchange as xc

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    monkeypatch.delenv("ROCMLAB_EXCHANGE", raising=False)
    me = xc.current_learner()                       # the login name of this process's user
    assert me
    xc.prepare_learner(tmp_path / "x", me)
    _, where = progress.instructor_grades(exchange=str(tmp_path / "x"))
    assert "ROCMLAB_EXCHANGE unset" not in where and str(tmp_path / "x") in where
    _, none = progress.instructor_grades()          # control: no exchange at all is self-study
    assert "self-study" in none


@pytest.mark.skipif(shutil.which("bwrap") is None or os.geteuid() != 0,
                    reason="a grade of record needs learner code run under a uid of its own (bubblewrap as root)")
def test_the_way_alone_works_as_the_line_says(monkeypatch, tmp_path, capsys):
    """prepare, hand in, grade with the instructor's command, and progress shows the grade as instructor-graded."""
    from rocmlab import grader

    monkeypatch.delenv("USER", raising=False)
    monkeypatch.delenv("JUPYTERHUB_USER", raising=False)
    x = tmp_path / "x"
    from rocmlab.workshop import exchange as xc
    me = xc.current_learner()
    assert main(["handin", "--prepare", me, "--exchange", str(x)]) == 0
    sol = tmp_path / "vector_add.hip"
    sol.write_text(grader.load(ITEM).solution)
    assert main(["handin", ITEM, str(sol), "--exchange", str(x)]) == 0
    assert main(["grade", "--exercise", ITEM, "--exchange", str(x), "--out", str(tmp_path / "out"),
                 "--no-progress"]) == 0
    graded, _ = progress.instructor_grades(exchange=str(x))
    assert graded[ITEM]["earned"] == graded[ITEM]["possible"] > 0
