"""The exercise workflow in notebooks (rocmlab.course.exercise) and the notebooks written from it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbtools import exercise_notebooks, problems

from rocmlab import grader
from rocmlab.course.exercise import Workbench, notebook_name
from rocmlab.grader.report import availability
from rocmlab.grader.report import CheckResult, Report

ROOT = Path(__file__).resolve().parents[2]
BOOKS = ROOT / "labs" / "exercises"


def _report(statuses):
    checks = [CheckResult(cid, t, st, pts if st == "passed" else 0.0, pts, f"{cid} {st}: no GPU here")
              for cid, t, st, pts in statuses]
    return Report("x", "X", "cpu", "test CPU", 1, checks)


def test_a_full_score_on_the_cpu_does_not_read_as_full_marks():
    r = _report([("static", "static", "passed", 3), ("compiles", "compile", "passed", 2),
                 ("runs", "run", "skipped", 1), ("correct", "compare", "skipped", 3), ("bw", "perf", "skipped", 2)])
    a = availability(r)
    assert (a.earned, a.runnable, a.possible, a.missing) == (5, 5, 11, 6)
    text = a.text()
    assert text.startswith("5 of 11 points; 6 not checked on this machine: runs (1), correct (3), bw (2)")
    assert "not a full score" in text and "no GPU here" in text
    assert "5/5" not in text.split("Here")[0]


def test_availability_when_every_check_ran():
    r = _report([("static", "static", "passed", 3), ("runs", "run", "failed", 1)])
    assert availability(r).text() == "3 of 4 points (no check was skipped on this machine)"


def test_workbench_writes_the_starter_keeps_edits_and_shows_hints_in_order(tmp_path):
    b = Workbench("vector-add", folder=tmp_path / "me")
    path = b.start()
    assert path == tmp_path / "me" / "vector_add.hip" and path.is_file()
    assert (tmp_path / "me" / "starter.cu").read_text() == b.exercise.starter
    assert "README" not in b.source() and "hip_runtime.h" in b.source()
    path.write_text("// my edit\n")
    b.start()
    assert path.read_text() == "// my edit\n", "start() must not overwrite the learner's edit"
    b.start(overwrite=True)
    assert path.read_text() != "// my edit\n"
    levels = []
    while (h := b.hint()) is not None:
        levels.append(h.level)
    assert levels == list(range(1, len(b.exercise.hints) + 1))
    assert [h.level for h in b.shown_hints()] == levels


def test_workbench_needs_start_before_grading(tmp_path):
    with pytest.raises(FileNotFoundError, match="start"):
        Workbench("vector-add", folder=tmp_path / "none").source()


def test_workbench_grades_the_file_and_the_solution(tmp_path):
    b = Workbench("vector-add", folder=tmp_path / "va", seed=5)
    b.start()
    mine = b.grade()
    sol = b.grade(b.exercise.solution)
    assert sol.full_marks and sol.earned >= mine.earned
    assert b.reports == [mine, sol]


def test_every_exercise_has_its_notebook_and_it_is_up_to_date():
    books = exercise_notebooks()
    assert sorted(books) == sorted(notebook_name(e) for e in grader.exercises())
    on_disk = sorted(p.name for p in BOOKS.glob("*.ipynb"))
    assert on_disk == sorted(books), "run python tools/nbtools.py exercises"
    for name, nb in books.items():
        stored = nbformat.read(BOOKS / name, as_version=4)
        assert [c.source for c in stored.cells] == [c.source for c in nb.cells], \
            f"{name} is stale: run python tools/nbtools.py exercises"
        assert problems(stored) == []


def _numbering_problems(exercises, names) -> list[str]:
    """What breaks "exercise notebooks numbered by their order": orders 1..N in course order without gaps, and the
    notebooks (file ``names``) exactly ``{order:02d}-{id}.ipynb``, one per exercise."""
    found = []
    orders = [e.order for e in exercises]
    if orders != list(range(1, len(exercises) + 1)):
        found.append(f"orders are {orders}, not 1..{len(exercises)} without gaps")
    want = {f"{e.order:02d}-{e.id}.ipynb" for e in exercises}
    found += [f"{e.id}: notebook_name gives {notebook_name(e)}" for e in exercises
              if notebook_name(e) != f"{e.order:02d}-{e.id}.ipynb"]
    found += [f"no notebook {n}" for n in sorted(want - set(names))]
    found += [f"notebook {n} is named for no exercise's order" for n in sorted(set(names) - want)]
    return found


def test_exercise_orders_run_1_to_n_and_name_the_notebooks():
    exercises = grader.exercises()
    names = [p.name for p in BOOKS.glob("*.ipynb")]
    assert _numbering_problems(exercises, names) == []
    # controls: a planted order of 110 (Lab 11's old numbering), and a notebook still under its old name
    import dataclasses

    planted = [dataclasses.replace(e, order=110) if e.id == "lab11-coalesce" else e for e in exercises]
    found = _numbering_problems(sorted(planted, key=lambda e: e.order), names)
    assert any("without gaps" in p for p in found) and "no notebook 110-lab11-coalesce.ipynb" in found, found
    old_name = [n.replace("14-lab11-coalesce", "110-lab11-coalesce") for n in names]
    assert _numbering_problems(exercises, old_name) == [
        "no notebook 14-lab11-coalesce.ipynb", "notebook 110-lab11-coalesce.ipynb is named for no exercise's order"]


@pytest.mark.parametrize("path", sorted(BOOKS.glob("*.ipynb")), ids=lambda p: p.name)
def test_papermill_sees_the_quick_parameter_of_each_exercise_notebook(path):
    import papermill

    assert "quick" in papermill.inspect_notebook(str(path))


def test_the_solution_cell_grades_once_more_when_a_busy_machine_stopped_the_grade(monkeypatch, tmp_path):
    """The reference solution's grade that a starved machine stopped (never scored) is tried once more; a grade the
    machine did not stop, or a fault of another kind, is not repeated."""
    from rocmlab import sandbox

    busy = Report("x", "X", "cpu", "test CPU", 1, [], status="error",
                  error=f"the program was stopped at its time limit after 60.1 s, but {sandbox.TOO_BUSY} to run it")
    graded = _report([("runs", "run", "passed", 1)])
    other = Report("x", "X", "cpu", "test CPU", 1, [], status="error", error="grader error (OSError: disk full)")
    bench = Workbench("vector-add", folder=tmp_path)
    for replies, want, calls in (([busy, graded], graded, 2), ([graded, busy], graded, 1),
                                 ([busy, busy], busy, 2), ([other, graded], other, 1)):
        queue = list(replies)
        monkeypatch.setattr(grader, "check", lambda *a, queue=queue, **k: queue.pop(0))
        assert bench.grade_solution() is want and len(replies) - len(queue) == calls
    assert sandbox.too_busy(busy.error) and not sandbox.too_busy(other.error) and not sandbox.too_busy("")
