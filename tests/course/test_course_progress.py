"""The learner's loop and record: the progress file and `rocmlab progress`, the edit-a-file Grade-again widget
(it grades the file as it is NOW), Lab 01's graded checks (visible verdicts, points, wrong answers caught), the
views that must fit a notebook, and the facts the course corrected (each with its source in datasets/)."""

from __future__ import annotations

import csv
import json
import random
import re
import subprocess
import sys

import pytest

from rocmlab import grader
from rocmlab.course import progress
from rocmlab.course.labs.lab01_hip_programming_model import lab as lab01
from rocmlab.hip.toolchain import discover_offline
from rocmlab.paths import datasets_dir

need_offline = pytest.mark.skipif(discover_offline() is None,
                                  reason="no offline ROCm root: bash scripts/setup/20-rocm-root.sh")


# --- the record ----------------------------------------------------------------------------------------

def test_record_keeps_the_best_attempt_and_summary_lists_every_lab_and_exercise(tmp_path, rng):
    path = tmp_path / "p.json"
    lo, hi = sorted(rng.sample(range(0, 11), 2))
    progress.record("02-porting-cuda-to-hip", "port-block-reduction", earned=hi, earnable=10, possible=11,
                    backend="cpu", path=path)
    progress.record("02-porting-cuda-to-hip", "port-block-reduction", earned=lo, earnable=10, possible=11,
                    backend="cpu", path=path)
    data = progress.load(path)
    assert data["02-porting-cuda-to-hip"]["port-block-reduction"]["earned"] == hi     # the best is kept
    summ = progress.summary(data)
    stems = [lab["lab"] for lab in summ["labs"]]
    assert stems[:3] == ["00-setup", "01-hip-programming-model", "02-porting-cuda-to-hip"]
    assert "03-pytorch-on-rocm" in stems and "08-mi300x-package" in stems
    lab02 = next(lab for lab in summ["labs"] if lab["lab"] == "02-porting-cuda-to-hip")
    assert (lab02["earned"], lab02["earnable"], lab02["possible"]) == (hi, 10, 11)
    assert [e["exercise"] for e in summ["exercises"]] == [e.id for e in grader.exercises()]
    assert all(e["tried"] is False and e["earnable"] is None for e in summ["exercises"])
    assert summ["total"]["earned"] == hi and summ["total"]["tried"] == 1
    with pytest.raises(ValueError, match="out of order"):
        progress.record("x", "y", earned=5, earnable=3, possible=4, backend="cpu", path=path)


def test_lab_tasks_match_what_the_graders_award():
    assert progress.LAB_TASKS["02-porting-cuda-to-hip"]["port-block-reduction"] == grader.load("block-reduction").possible
    stems = {lab.file.removesuffix(".ipynb") for lab in __import__("rocmlab.catalog", fromlist=["LABS"]).LABS}
    assert set(progress.LAB_TASKS) <= stems | {progress.EXERCISES}, "LAB_TASKS names a lab by its notebook's stem"


def test_a_report_the_machine_could_not_grade_is_not_recorded(tmp_path):
    path = tmp_path / "p.json"
    from rocmlab.grader import _report
    from rocmlab.machine.detect import current

    fault = _report(grader.load("vector-add"), current(), None, [], 0.0, "error", "no compiler here")
    assert progress.record_report(progress.EXERCISES, "vector-add", fault, path=path) is False
    assert progress.load(path) == {}
    graded = grader.check("vector-add", "int main() { return 0; }", only=["no-cuda-left"])
    assert graded.status == "graded"
    assert progress.record_report(progress.EXERCISES, "vector-add", graded, path=path) is True


def test_rocmlab_progress_cli_json_has_an_entry_per_lab_stem_and_exercise(tmp_path, rng):
    earned = rng.randint(0, 3)
    home = tmp_path / "home"
    home.mkdir()
    progress.record("01-hip-programming-model", "launch-shape", earned=earned, earnable=3, possible=3,
                    backend="cpu", path=home / "progress.json")
    env = dict(__import__("os").environ, ROCMLAB_HOME=str(home))
    env.pop("ROCMLAB_PROGRESS", None)                 # the record in ROCMLAB_HOME
    out = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress", "--json"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    d = json.loads(out.stdout)
    lab01_ = next(lab for lab in d["labs"] if lab["lab"] == "01-hip-programming-model")
    shape = next(t for t in lab01_["tasks"] if t["task"] == "launch-shape")
    assert shape["earned"] == earned and shape["tried"] and shape["possible"] == 3
    assert {"vector-add", "mfma-gemm"} <= {e["exercise"] for e in d["exercises"]}
    text = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert text.returncode == 0 and "launch-shape" in text.stdout and "exercises/01-vector-add" in text.stdout
    bad = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress", "--bogus"], env=env, capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


# --- Lab 01's graded checks: a visible verdict, points, wrong answers caught ----------------------------

def test_lab01_checks_show_a_verdict_give_points_and_record_them(rng, _own_progress_record):
    ex = lab01.LaunchExercise.new(rng.random())
    unanswered = ex.check()
    assert unanswered.ok is None and "rocmlab-verdict" in unanswered._repr_html_()
    right = ex.check(**ex.answer())
    assert right.ok is True and right.earned == 3 and "3/3 points" in right._repr_html_()
    wrong = dict(ex.answer(), blocks=ex.n // ex.block)          # rounded down: the tail gets no thread
    if wrong["blocks"] == ex.answer()["blocks"]:
        wrong["blocks"] -= 1
    fb = ex.check(**wrong)
    assert fb.ok is False and fb.earned == 2 and "round up" in fb.message and "not yet" in fb._repr_html_()
    oc = lab01.OccupancyExercise.new(rng.random())
    sol = oc.solution()
    half = oc.check(sol.waves_per_simd + 1, sol.limiting)
    assert half.ok is False and half.earned == 1
    assert oc.check(sol.waves_per_simd, sol.limiting).earned == 2
    data = progress.load(_own_progress_record)["01-hip-programming-model"]
    assert data["launch-shape"]["earned"] == 3 and data["occupancy"]["earned"] == 2


@need_offline
def test_wave_sum_widget_grades_the_file_as_it_is_now(tmp_path, _own_progress_record):
    path = lab01.wave_sum_file(tmp_path / "wave_sum.hip")
    w = lab01.wave_sum_widget(path)
    assert w.result().ok is None                                    # the starter: not answered yet
    path.write_text(lab01.WAVE_SUM_STARTER.replace("int off = 16", "int off = 32"))   # a literal: caught
    w.grade_again()
    assert w.result().ok is False and "literal" in w.result().message and w.result().earned == 2
    path.write_text(lab01.WAVE_SUM_STARTER.replace("int off = 16", "int off = warpSize / 2"))
    w.grade_again()
    assert w.result().ok is True and w.result().earned == 4
    assert "rocmlab-verdict" in w.children[1].value and "4/4 points" in w.children[1].value
    assert progress.load(_own_progress_record)["01-hip-programming-model"]["wave-sum"]["earned"] == 4
    assert lab01.wave_sum_file(path) == path and "warpSize / 2" in path.read_text()   # an edit is kept


# --- the grader widget re-reads the path ---------------------------------------------------------------

def test_feedback_widget_refuses_source_text_it_would_grade_stale():
    from rocmlab.course.widgets.grader import feedback_widget

    with pytest.raises(ValueError, match="PATH of your .hip file"):
        feedback_widget("block-reduction", grader.load("block-reduction").solution)


@need_offline
def test_feedback_widget_grade_again_reads_the_edited_file_and_records_the_grade(tmp_path, _own_progress_record):
    from rocmlab.course.exercise import Workbench
    from rocmlab.course.widgets.grader import feedback_widget

    bench = Workbench("block-reduction", folder=tmp_path / "br")
    path = bench.start()
    w = feedback_widget("block-reduction", path)
    first = w.report()
    assert first.status == "graded" and not first.full_marks
    assert "rocmlab-verdict" in w.children[1].value and "not yet" in w.children[1].value
    assert "open block_sum.hip in the editor" in str(w.children[0].outputs)
    path.write_text(bench.exercise.solution)
    w.grade_again()
    second = w.report()
    assert second.full_marks and second.earned > first.earned and "[correct]" in w.children[1].value
    rec = progress.load(_own_progress_record)[progress.EXERCISES]["block-reduction"]
    assert rec["earned"] == second.earned and rec["earnable"] == second.available
    path.unlink()
    w.grade_again()                                                 # a missing file: said plainly
    assert w.report() is None and "cannot read" in w.children[1].value


# --- views that fit a notebook -------------------------------------------------------------------------

def test_the_hipify_diff_wraps_left_aligned_and_names_whose_change_is_whose():
    from rocmlab.cuda2hip import hipify

    long_line = "  float v = " + " + ".join(f"x{i}" for i in range(60)) + ";"
    port = hipify.hipify_source(f"__global__ void k(float* x) {{\n{long_line}\n}}\n", "k.cu")
    html = port.side_by_side_html()
    assert "table-layout:fixed" in html and "width:100%" in html
    assert "white-space:pre-wrap" in html and "white-space:pre;" not in html
    assert "text-align:left" in html and "rocmlab's fixes" in html


def test_html_tables_print_whole_floats_as_integers_and_left_align_prose():
    from rocmlab.html_table import html_table

    n = random.randint(2, 999)
    out = html_table(["fact", "value"], [["CUs", float(n)], ["bandwidth", 5.3]])
    assert f">{n}<" in out and f"{n}.0" not in out and ">5.3<" in out
    assert out.count("text-align:left") >= 4


@need_offline
def test_isa_listing_says_how_many_lines_are_hidden_and_shows_them_on_demand():
    from rocmlab import paths
    from rocmlab.course.widgets import inspector
    from rocmlab.hip.inspector import inspect

    ins = inspect((paths.kernels_dir() / "reduce.hip").read_text(), "gfx942")
    total = len(ins.isa_of("block_sum").lines)
    html = inspector.isa_html(ins, "block_sum", max_lines=20)
    assert f"lines 1-20 of {total}; {total - 20} hidden below" in html
    assert "<summary" in html and f"{total - 20} more lines hidden" in html
    assert html.count("ds_bpermute_b32") == ins.isa_of("block_sum").mnemonics("shuffle")["ds_bpermute_b32"]
    table = inspector.resources_table(ins)
    assert table.count("<tr>") == len(ins.kernels[0].rows()) + 2     # one row per resource (+ header, occupancy)


# --- corrected facts, each with its source -------------------------------------------------------------

def _sources():
    with open(datasets_dir() / "sources.csv", newline="") as fh:
        return {r["key"]: r for r in csv.DictReader(fh)}


def test_rocm_release_dates_follow_the_release_tags():
    with open(datasets_dir() / "rocm_versions.csv", newline="") as fh:
        rows = {r["version"]: r for r in csv.DictReader(fh)}
    assert rows["6.0"]["released"].startswith("2023-12") and "2024-01" in rows["6.0"]["released"]
    assert "2024-04" in rows["6.1-6.2"]["released"] and "16 Apr" in rows["6.1-6.2"]["released"]
    assert "H2" not in rows["6.1-6.2"]["released"]
    src = _sources()
    assert "rocm-core-release-tags" in rows["6.0"]["source"] and "rocm-core-release-tags" in src
    assert "16 Apr 2024" in src["rocm-core-release-tags"]["note"]


def test_plain_torch_hipify_keeps_the_32_bit_mask_and_the_widening_is_rocmlabs():
    from rocmlab.cuda2hip import hipify

    off = random.choice([1, 2, 4, 8, 16])
    cuda = ("__global__ void k(float* x) {\n  float v = x[threadIdx.x];\n"
            f"  v += __shfl_down_sync(0xffffffff, v, {off});\n  x[threadIdx.x] = v;\n}}\n")
    plain = hipify.plain_torch_hipify(cuda, "k.cu")
    assert f"__shfl_down_sync(0xffffffff, v, {off})" in plain            # torch's hipify: unchanged
    port = hipify.hipify_source(cuda, "k.cu")
    assert f"__shfl_down_sync(0xffffffffffffffffull, v, {off})" in port.hip  # rocmlab's fix pass
    assert "torch-hipify-keeps-32-bit-mask" in _sources()


def test_visible_devices_are_not_treated_as_interchangeable():
    from rocmlab import doctor
    from rocmlab.machine.detect import Probe, detect

    probe = Probe()
    probe.env = {**probe.env, "ROCR_VISIBLE_DEVICES": "2,3", "HIP_VISIBLE_DEVICES": "1"}
    c = doctor.check_visible_devices(detect(probe), probe)
    assert c.status == "ok" and "applied first" in c.message and "not interchangeable" in c.message
    probe.env = {k: v for k, v in probe.env.items() if k != "ROCR_VISIBLE_DEVICES"}
    assert "recommend ROCR_VISIBLE_DEVICES" in doctor.check_visible_devices(detect(probe), probe).message
    src = _sources()["hip-env-visible-devices"]
    assert "env_variables" in src["url"] and re.search(r"ROCR_VISIBLE_DEVICES on Linux", src["note"])


def test_graded_cells_are_tagged_and_no_lab_edits_hip_in_a_python_string():
    """The browser test checks that every cell tagged `graded` shows a verdict; here: which cells are tagged."""
    import nbformat

    from rocmlab.paths import repo_root

    def graded(path):
        nb = nbformat.read(str(path), as_version=4)
        return [c.source for c in nb.cells if "graded" in c.get("metadata", {}).get("tags", [])]

    labs = repo_root() / "labs"
    lab01_ = graded(labs / "01-hip-programming-model.ipynb")
    assert len(lab01_) == 3 and any("wave_sum_widget" in s for s in lab01_)
    assert not any("WAVE_SUM_STARTER    # edit this string" in s for s in lab01_)
    lab02 = graded(labs / "02-porting-cuda-to-hip.ipynb")
    assert len(lab02) == 1 and "feedback_widget(" in lab02[0] and "Workbench(" in lab02[0]
    for nb in sorted((labs / "exercises").glob("*.ipynb")):
        cells = graded(nb)
        assert cells == ["display(bench.widget())"], nb.name
