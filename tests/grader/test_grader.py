"""The grader: every check can fail, with a submission that fails it; the sandbox protects the caller."""

import csv
import json

import numpy as np
import pytest

from rocmlab import grader
from rocmlab.grader import batch, checks
from rocmlab.grader import rlx as gio
from rocmlab.grader.wrong import wrong_submissions
from rocmlab.machine.detect import current

WRONG = wrong_submissions()
CPU = not current().is_gpu


def limit(name: str) -> float:
    """The run time limit for a wrong submission: short for the one meant to time out, ample for the rest (a
    run the loaded machine starves past a short limit is a machine fault, status "error", not the check's failure)."""
    return 3 if name == "infinite loop" else 30


#: What the failed check's message must say, for the wrong submissions whose message is checked (each graded once,
#: by the test below).
MESSAGES = {"infinite loop": ("time limit",), "segfault": ("segmentation fault",), "huge malloc": ("out of memory",),
            "megabytes of output": ("output limit",), "printed hard-coded answer": ("first mismatch at index 0",),
            "hard-coded warp of 32": ("line ", "warpSize"), "no error checks": ("hipGetLastError",),
            "mechanical hipify (32-bit shuffle mask)": ("32-bit lane mask",)}


@pytest.mark.parametrize("name", [n for n, w in WRONG.items() if w.where == "any"])
def test_wrong_submission_fails_its_check_on_any_backend_and_says_why(name):
    w = WRONG[name]
    report = grader.check(w.exercise, w.source, time_limit_s=limit(name), seed=7)
    c = report.check(w.fails)
    assert c.status == "failed", report.to_text()
    assert c.points == 0 and c.message
    assert report.earned < report.available
    assert c.hint or w.fails in ("runs", "compiles")
    assert all(words in c.message for words in MESSAGES.get(name, ())), (MESSAGES[name], c.message)


def test_every_checked_message_belongs_to_a_wrong_submission_graded_here():
    assert set(MESSAGES) <= {n for n, w in WRONG.items() if w.where == "any"}, set(MESSAGES)


@pytest.mark.parametrize("name", ["wrong index", "only passes on zeros"])
def test_wrong_kernels(name):
    w = WRONG[name]
    report = grader.check(w.exercise, w.source, seed=11)
    c = report.check(w.fails)
    assert c.status == "failed" and "first mismatch" in c.message
    if CPU:   # no GPU: the CPU simulator ran it, and the feedback says so
        assert c.message.startswith("[cpu: wave64 simulator]")


def test_static_requires_and_cuda_left_fail():
    ex = grader.load("transpose-lds")
    unpadded = ex.solution.replace("tile[TILE][TILE + 1]", "tile[TILE][TILE]")
    r = grader.check("transpose-lds", unpadded, only=["static"])
    assert r.check("padded-tile").status == "failed" and "not padded" in r.check("padded-tile").message
    r = grader.check("vector-add", ex.starter, only=["static"])   # an unported CUDA file
    assert r.check("no-cuda-left").status == "failed" and "cuda_runtime.h" in r.check("no-cuda-left").message


def test_compare_reports_the_first_mismatch_and_tolerance():
    ex = grader.load("saxpy-events")
    ctx = checks.Context(ex, "", current(), seed=5)
    inputs = checks._fresh_inputs(ctx, "run", 1)
    want = ex.reference_module().reference(inputs)["z"]
    good = {"inputs": inputs, "arrays": [want.copy(), np.array([1.0], np.float32)], "format_error": ""}
    assert checks.compare_outputs(ctx, good)[0]
    near = want.copy()
    near[123] *= 1 + 1e-7       # within rtol 1e-5
    assert checks.compare_outputs(ctx, {**good, "arrays": [near, good["arrays"][1]]})[0]
    bad = want.copy()
    bad[4567] += 1.0
    bad[9000] = np.nan
    ok, msg, details = checks.compare_outputs(ctx, {**good, "arrays": [bad, good["arrays"][1]]})
    assert not ok and details["first_mismatch"] == 4567 and details["mismatches"] == 2
    short = {**good, "arrays": [want[:-1], good["arrays"][1]]}
    assert "values, expected" in checks.compare_outputs(ctx, short)[1]


def test_fresh_seed_each_time_and_inputs_differ():
    assert checks.new_seed() != checks.new_seed()
    ex = grader.load("vector-add")
    a = checks._fresh_inputs(checks.Context(ex, "", None, 1), "run", 1)["a"]
    b = checks._fresh_inputs(checks.Context(ex, "", None, 2), "run", 1)["a"]
    assert not np.array_equal(a, b) and np.unique(a).size > 1000


def test_io_roundtrip_and_bad_files(tmp_path):
    arrays = [np.arange(5, dtype=np.float32), np.array([3, -1], np.int32), np.array([7], np.uint32)]
    gio.write_arrays(tmp_path / "a.bin", arrays)
    back = gio.read_arrays(tmp_path / "a.bin")
    assert all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(arrays, back, strict=True))
    (tmp_path / "bad.bin").write_bytes(b"nope")
    with pytest.raises(gio.FormatError, match="RLX1"):
        gio.read_arrays(tmp_path / "bad.bin")
    with pytest.raises(gio.FormatError, match="no output file"):
        gio.read_arrays(tmp_path / "missing.bin")


@pytest.mark.skipif(not CPU, reason="checks the CPU backend's skip messages")
def test_perf_is_skipped_without_a_gpu_and_says_why():
    ex = grader.load("saxpy-events")
    r = grader.check("saxpy-events", ex.solution, only=["compile", "run", "perf"])
    assert r.check("bandwidth").status == "skipped" and "GPU" in r.check("bandwidth").message


@pytest.mark.gpu
@pytest.mark.skipif(CPU, reason="perf checks need a GPU backend (rocm or cuda)")
def test_perf_check_fails_a_slow_kernel():
    ex = grader.load("saxpy-events")
    slow = ex.solution.replace("grid = cus * 8", "grid = 1").replace("int block = 256", "int block = 32")
    r = grader.check("saxpy-events", slow)
    assert r.check("correct").status == "passed"
    assert r.check("bandwidth").status == "failed" and "of" in r.check("bandwidth").message


def test_bad_arguments():
    with pytest.raises(grader.ExerciseError, match="choose one of"):
        grader.check("no-such-exercise", "int main() {}")
    empty = grader.check("vector-add", "   ")      # a learner's message, not an API one; no points
    assert empty.earned == 0 and all(c.status == "not run" and "submission is empty" in c.message for c in empty.checks)


def _write_subs(root, n_good=3):
    root.mkdir()
    sol = grader.load("vector-add").solution
    for i in range(n_good):
        (root / f"good{i}.hip").write_text(f"// learner {i}\n" + sol)
    (root / "nochecks.hip").write_text(WRONG["no error checks"].source)
    (root / "crash.hip").write_text(WRONG["segfault"].source)


def test_batch_grading_csvs_resume_and_no_duplicates(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    _write_subs(subs)
    counts = batch.grade_folder(subs, ["vector-add"], out, workers=2, seed=1, time_limit_s=3, progress=False)
    assert counts == {"submissions": 5, "graded": 5, "skipped": 0}
    rows = list(csv.DictReader(open(out / "grades.csv")))
    assert list(rows[0]) == list(batch.NBGRADER_COLUMNS)
    scores = {r["student_id"]: float(r["score"]) for r in rows}
    assert len(rows) == 5 and scores["good0"] > scores["nochecks"] and scores["good0"] >= scores["crash"]
    by_check = {r["file"]: r for r in csv.DictReader(open(out / "grades_by_check.csv"))}
    assert by_check["good0"]["possible"] == "10" and by_check["nochecks"]["vector-add:errors-checked"] == "0"
    assert by_check["crash"]["vector-add:runs"] == "0"   # on a CPU the good ones' run check is skipped ("")
    assert (out / "feedback" / "crash" / "vector-add.txt").read_text().count("segmentation fault") == 1
    # a killed run leaves whole results only; a rerun grades what is missing and nothing twice
    (out / "results" / "good1__vector-add.json").unlink()
    (out / "results" / ".good2__vector-add.json.x.tmp").write_text("{half")
    counts = batch.grade_folder(subs, ["vector-add"], out, workers=1, seed=1, time_limit_s=3, progress=False)
    assert counts == {"submissions": 5, "graded": 1, "skipped": 4}
    rows2 = list(csv.DictReader(open(out / "grades.csv")))
    assert sorted(r["student_id"] for r in rows2) == sorted(scores) and \
        {r["student_id"]: float(r["score"]) for r in rows2} == scores
    # a changed submission is graded again
    (subs / "good0.hip").write_text(WRONG["no error checks"].source)
    assert batch.grade_folder(subs, ["vector-add"], out, seed=1, progress=False)["graded"] == 1
    assert json.loads((out / "results" / "good0__vector-add.json").read_text())["earned"] < scores["good0"]


def test_cli_grade(tmp_path, capsys):
    from rocmlab.cli import main

    subs = tmp_path / "subs"
    _write_subs(subs, n_good=1)
    assign = tmp_path / "a.yaml"
    assign.write_text("name: lab02\nexercises: [vector-add]\n")
    assert main(["grade", str(subs), "--assignment", str(assign), "--out", str(tmp_path / "o"), "--workers", "1",
                 "--time-limit", "3", "--no-progress"]) == 0
    assert "3 submissions" in capsys.readouterr().out
    assert list(csv.DictReader(open(tmp_path / "o" / "grades.csv")))[0]["assignment"] == "lab02"
    assert main(["grade", str(tmp_path / "nope"), "--exercise", "vector-add"]) == 2
    assert "no submissions folder" in capsys.readouterr().err
    assert main(["grade", str(subs), "--exercise", "nope"]) == 2
    assert main(["grade", "x", "--list"]) == 0
    assert "block-reduction" in capsys.readouterr().out


def test_a_stderr_warning_is_not_a_failure_but_a_crash_is():
    from rocmlab.sandbox import run_limited

    warn = run_limited(["sh", "-c", "echo 'warning: ROCm: something is deprecated' >&2; echo done; exit 0"])
    status, msg = checks._run_verdict({"done": warn, "host_only": False, "format_error": ""})
    assert status == "passed" and "not a failure" in msg
    crash = run_limited(["sh", "-c", "kill -SEGV $$"])
    assert checks._run_verdict({"done": crash, "host_only": False, "format_error": ""})[0] == "failed"
    loud = run_limited(["sh", "-c", "yes hello | head -c 3000000"], output_bytes=1 << 20)
    assert "output limit" in checks._run_verdict({"done": loud, "host_only": False, "format_error": ""})[1]


def test_one_line_is_one_finding_of_its_rule_and_two_lines_are_two():
    """`x % 32, w = x / 32` on one line is one lane-arithmetic finding with its explanation (it was listed twice,
    once without why); the control: the same arithmetic on two lines is two findings."""
    from rocmlab.grader import static

    one = "__global__ void k(int* o) {\n  const int lane = threadIdx.x % 32, wave = threadIdx.x / 32;\n  o[lane] = wave;\n}\n"
    two = "__global__ void k(int* o) {\n  const int lane = threadIdx.x % 32;\n  const int wave = threadIdx.x / 32;\n" \
          "  o[lane] = wave;\n}\n"
    found = static.no_warp_size(static.analyze(one), {})
    assert [ln for ln, _ in found] == [2] and "Fix:" in found[0][1], found
    found = static.no_warp_size(static.analyze(two), {})
    assert [ln for ln, _ in found] == [2, 3], found


def test_a_missing_required_pattern_reads_as_code_never_as_a_regular_expression():
    """ex12's untouched starter: its lds-tile row named two raw regular expressions ('__shared__\\s+float'); now the
    pieces read as code, in one problem with the spec's message. A pattern that reads only as a regular expression
    (histogram-atomics' shared counter types) is replaced by the message. Controls: the solutions pass."""
    ex = grader.load("lds-tiles-prefetch")
    c = grader.check("lds-tiles-prefetch", ex.starter, only=["static"]).check("lds-tile")
    assert c.status == "failed" and "`__shared__ float` and `float4` not found" in c.message, c.message
    assert "\\" not in c.message and "no LDS tile filled with float4" in c.message
    assert grader.check("lds-tiles-prefetch", ex.solution, only=["static"]).check("lds-tile").status == "passed"
    hist = grader.load("histogram-atomics")
    check_id = "lds-bins"
    plain = hist.solution.replace("__shared__", "/* no LDS */ static")
    c = grader.check("histogram-atomics", plain, only=["static"]).check(check_id)
    assert c.status == "failed" and c.message == "the bins are not privatised in shared memory (LDS)", c.message
    assert grader.check("histogram-atomics", hist.solution, only=["static"]).check(check_id).status == "passed"


def test_a_failed_run_says_what_the_program_said():
    """A program that exits 1 after printing its reason: the run row carries its last stderr lines (it read only
    'exited with status 1'), printable and capped. Control: a program that says nothing gets no 'it said'."""
    from rocmlab.grader.wrong import _host

    said = _host('    fprintf(stderr, "self-check: c[3] = 7, expected 5\\x07\\n");\n    return 1;\n')
    c = grader.check("vector-add", said, only=["runs"], time_limit_s=30).check("runs")
    assert c.status == "failed" and "status 1" in c.message, c.message
    assert "it said: self-check: c[3] = 7, expected 5?" in c.message, c.message
    quiet = _host("    return 1;\n")
    c = grader.check("vector-add", quiet, only=["runs"], time_limit_s=30).check("runs")
    assert c.status == "failed" and "status 1" in c.message and "it said" not in c.message, c.message
