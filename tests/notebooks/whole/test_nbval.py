"""nbval, the Jupyter community's pytest plugin, is a supported way to test the labs: ``pytest --nbval-lax labs/``
(labs/conftest.py gives it quick sizes and the course's sanitizer, labs/nbval_sanitize.cfg).

The suite's own run of every notebook is tests/notebooks/whole/test_labs_run.py (one papermill run, compared by nbval's code). Here
nbval itself runs small notebooks made of a real lab's cells, so what a workshop's CI sees is proven: a changed
fact fails the cell that shows it, by name; a changed timing does not; without the sanitizer it would."""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbtools import CHECK_TAG, code_cells, is_checked, new_notebook, output_differences

ROOT = Path(__file__).resolve().parents[3]
LABS = ROOT / "labs"
LAB05 = LABS / "05-quickreduce-tuning.ipynb"
#: The Lab 05 cell whose printed table of targets and FP8 formats comes from rocmlab.settings.TARGET_NAMES.
FP8_LINE = "FP8: {fmt or 'none in hardware'}"


def _nbval(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m pytest --nbval-lax ARGS`` in ``folder`` (its own rootdir: no project config, no tests/)."""
    return subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-p", "no:cacheprovider", "-rA",
                           "--color=no", "--rootdir", str(folder), *args],
                          cwd=folder, capture_output=True, text=True, timeout=600)


def _lab05_control(patch: str) -> nbformat.NotebookNode:
    """Lab 05's parameters and set-up cells, a patch cell, and its checked FP8 cell with the stored output."""
    lab = nbformat.read(str(LAB05), as_version=4)
    cells = code_cells(lab)
    fp8 = [c for c in cells if FP8_LINE in c.source]
    assert len(fp8) == 1 and is_checked(fp8[0]), "Lab 05's FP8 table cell is no longer a checked cell"
    assert fp8[0].outputs, "Lab 05's FP8 cell has no recorded output"
    nb = new_notebook([("code", cells[0].source, ["parameters"]), ("code", cells[1].source), ("code", patch)])
    nb.cells.append(fp8[0])
    return nb


def test_nbval_checks_a_lab_cell_names_a_changed_fact_and_lets_a_timing_vary(tmp_path):
    """One nbval session with labs/conftest.py (its default sanitizer and quick sizes) over three notebooks, and
    one without a sanitizer (one test, so that pytest-xdist runs these kernels once):

    - Lab 05's checked FP8 cell as it is passes;
    - the control: the same cell with its source of truth (the target names in rocmlab.settings) changed in the
      kernel fails at that cell, named, and nbval's diff shows the new text; nothing else fails;
    - a checked cell whose timings and backend label differ from the stored ones passes, and one whose home folder
      differs (/root against /home/NAME); without the sanitizer both fail."""
    course = tmp_path / "course"
    course.mkdir()
    shutil.copy(LABS / "conftest.py", course / "conftest.py")
    shutil.copy(LABS / "nbval_sanitize.cfg", course / "nbval_sanitize.cfg")
    name = f"a changed name {random.randrange(10**6)}"
    nbformat.write(_lab05_control("pass"), str(course / "same.ipynb"))
    nbformat.write(_lab05_control("from rocmlab import settings\n"
                                  f"settings.TARGET_NAMES = {{**settings.TARGET_NAMES, 'gfx942': {name!r}}}"),
                   str(course / "changed.ipynb"))
    stored, now = random.uniform(0.1, 90), random.uniform(100, 900)
    timing = new_notebook([("code", f"print('one encode: {now:.3f} ms, the copy: {now / 3:.1f} us  [cpu: X]')",
                            [CHECK_TAG])])
    timing.cells[0].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text=f"one encode: {stored:.2f} ms, the copy: {stored * 7:.0f} us  [rocm: Y]\n")]
    timing.cells[0].execution_count = 1
    user = f"learner{random.randrange(10**4)}"
    timing.cells.append(nbformat.v4.new_code_cell(f"print('the model cache: /home/{user}/.cache/huggingface')"))
    timing.cells[1].metadata["tags"] = [CHECK_TAG]
    timing.cells[1].outputs = [nbformat.v4.new_output(
        "stream", name="stdout", text="the model cache: /root/.cache/huggingface\n")]
    timing.cells[1].execution_count = 2
    nbformat.write(timing, str(course / "timing.ipynb"))
    bare = tmp_path / "bare"
    bare.mkdir()
    nbformat.write(timing, str(bare / "timing.ipynb"))

    run = _nbval(course, "same.ipynb", "changed.ipynb", "timing.ipynb")
    out = run.stdout
    assert "PASSED same.ipynb::Cell 3" in out, out[-3000:]
    assert run.returncode == 1, out[-3000:]
    failed = [ln.split(" - ")[0] for ln in out.splitlines() if ln.startswith("FAILED ")]
    assert failed == ["FAILED changed.ipynb::Cell 3"], out[-3000:]
    assert "Cell outputs differ" in out and name in out, out[-3000:]
    assert "PASSED timing.ipynb::Cell 0" in out and "PASSED timing.ipynb::Cell 1" in out, out[-3000:]
    print(out[out.find("= FAILURES ="):][:2500])   # the control's failing output, for the record
    without = _nbval(bare, "timing.ipynb")
    assert without.returncode == 1, without.stdout[-3000:]
    assert "FAILED timing.ipynb::Cell 0" in without.stdout, without.stdout[-3000:]
    assert "FAILED timing.ipynb::Cell 1" in without.stdout, without.stdout[-3000:]


def test_nbval_collects_every_lab_and_exercise_notebook():
    """``pytest --nbval-lax labs/`` (as a workshop's CI runs it) finds every notebook, with labs/conftest.py."""
    run = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "--collect-only", "-q", "-p",
                          "no:cacheprovider", "labs/"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    books = sorted(LABS.glob("*.ipynb")) + sorted((LABS / "exercises").glob("*.ipynb"))
    for p in books:
        n = len(code_cells(nbformat.read(str(p), as_version=4)))
        rel = p.relative_to(ROOT).as_posix()
        assert sum(ln.startswith(rel + "::Cell ") for ln in run.stdout.splitlines()) == n, (rel, run.stdout[-2000:])


def _ran_copy(nb, change) -> nbformat.NotebookNode:
    """``nb`` as papermill writes a run of it (an injected parameters cell; the same cell ids), each checked
    cell's stored text passed through ``change``."""
    ran = nbformat.reads(nbformat.writes(nb), as_version=4)
    for c in code_cells(ran):
        if is_checked(c):
            for o in c.outputs:
                if o.output_type == "stream":
                    o.text = change(o.text)
    injected = nbformat.v4.new_code_cell("quick = True\n")
    injected.metadata["tags"] = ["injected-parameters"]
    ran.cells.insert(2, injected)
    return ran


def test_the_suites_comparison_of_a_run_agrees_with_nbval(tmp_path):
    """The suite compares its one papermill run with nbval's code (tools/nbtools.py output_differences): a run
    whose checked cells print the stored text on another machine (another backend label) passes; a run where one
    figure differs fails at that cell, named as nbval names it (``Cell N``, code cells from 0)."""
    lab = nbformat.read(str(LAB05), as_version=4)
    checked = [n for n, c in enumerate(code_cells(lab)) if is_checked(c)]
    assert checked
    elsewhere = _ran_copy(lab, lambda t: re.sub(r"\[cpu: [^\]]*\]", "[rocm: AMD Instinct MI300X]", t))
    nbformat.write(elsewhere, str(tmp_path / "elsewhere.ipynb"))
    assert output_differences(LAB05, tmp_path / "elsewhere.ipynb") == []
    pick = random.choice(checked)
    text = "".join(o.get("text", "") for o in code_cells(lab)[pick].outputs)
    labels = [range(m.start(), m.end()) for m in re.finditer(r"\[[a-z]+: [^\]]*\]", text)]
    digits = [m.start() for m in re.finditer(r"\d", text) if not any(m.start() in r for r in labels)]
    assert digits, f"Lab 05's checked Cell {pick} prints no figure"
    at = random.choice(digits)
    bad = text[:at] + str((int(text[at]) + 1) % 10) + text[at + 1:]
    changed = nbformat.reads(nbformat.writes(lab), as_version=4)
    code_cells(changed)[pick].outputs = [nbformat.v4.new_output("stream", name="stdout", text=bad)]
    nbformat.write(_ran_copy(changed, lambda t: t), str(tmp_path / "changed.ipynb"))
    differ = output_differences(LAB05, tmp_path / "changed.ipynb")
    assert len(differ) == 1 and differ[0].startswith(f"{LAB05.name}::Cell {pick}: Cell outputs differ"), differ


def _hint_problem(nb, ex) -> str | None:
    """Why ``nb``'s checked cells are not exactly its hint cell storing ``ex``'s first hint (None: they are)."""
    checked = [c for c in code_cells(nb) if is_checked(c)]
    if len(checked) != 1 or "bench.hint()" not in checked[0].source:
        return f"{ex.id}: checked cells {[c.source.splitlines()[0] for c in checked]}, not the hint cell alone"
    first = sorted(ex.hints, key=lambda h: h.level)[0]
    want = f"hint {first.level} ({first.check}): {first.text}\n"
    got = "".join(o.get("text", "") for o in checked[0].outputs)
    return None if got == want else f"{ex.id}: the hint cell stores {got!r}, the exercise's first hint is {want!r}"


def test_every_exercise_notebook_checks_its_first_hint():
    """Each exercise notebook's first-hint cell is checked by nbval and stores the exercise's own first hint (its
    spec is the source of truth; the text was recorded from a run, never typed). Control: a notebook whose stored
    hint has one word changed is caught."""
    from rocmlab import grader
    from rocmlab.course.exercise import notebook_name

    exercises = grader.exercises()
    found = [_hint_problem(nbformat.read(str(LABS / "exercises" / notebook_name(ex)), as_version=4), ex)
             for ex in exercises]
    assert [p for p in found if p] == []
    ex = random.choice(exercises)
    tampered = nbformat.read(str(LABS / "exercises" / notebook_name(ex)), as_version=4)
    [cell] = [c for c in code_cells(tampered) if is_checked(c)]
    words = cell.outputs[0].text.split(" ")
    at = random.randrange(2, len(words))
    cell.outputs[0].text = " ".join(words[:at] + [words[at] + "x"] + words[at + 1:])
    assert "the hint cell stores" in (_hint_problem(tampered, ex) or ""), cell.outputs[0].text
