"""Issue 38, points an instructor can trust: every graded item hands in and is re-graded in the sandbox, the
local record is a preview and says so, and the attacks that gave a learner full marks in their own process
fail where the grade of record is made. Each attack has its control (the honest answer that passes)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap

import pytest

from rocmlab import cli
from rocmlab.course import progress
from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11
from rocmlab.course import puzzles as P
from rocmlab.grader import items
from rocmlab.workshop import exchange as xc
from tests.helpers.codec_answers import CODEC, CODEC_PATCH, CODEC_RIGHT

P.setup()          # Triton's CPU interpreter, before anything imports triton (the previews below run kernels)

PUZZLE = "06-triton-on-amd/add-constant"
QUESTION = "11-counters-and-faults/use_after_free-line"

PUZZLE_RIGHT = textwrap.dedent("""
    import triton
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, z_ptr, N0, B0: tl.constexpr):
        offs = tl.arange(0, B0)
        tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=offs < N0) + 10, mask=offs < N0)
""")
#: Two attacks on a Triton puzzle: a shipped reference kernel imported and handed back; torch code behind [grid].
PUZZLE_IMPORTED = "from rocmlab.course.labs.lab06_triton_on_amd.kernels import add_const as add_kernel\n"
PUZZLE_TORCH = textwrap.dedent("""
    class _K:
        def __getitem__(self, grid):
            return lambda x, z, n, B0: z.copy_(x + 10)

    add_kernel = _K()
""")


@pytest.fixture
def exch(tmp_path, monkeypatch):
    root = tmp_path / "exchange"
    xc.prepare_learner(root, "alice")
    monkeypatch.setenv("ROCMLAB_EXCHANGE", str(root))
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    return root


def _cli(capsys, *argv) -> tuple[int, str]:
    rc = cli.main(list(argv))
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


# --- the registry ------------------------------------------------------------------------------------------

def test_every_graded_row_is_an_item_with_a_usable_id():
    kinds = {i.kind for i in items.all_items().values()}
    assert kinds == {"exercise", "task", "puzzle", "question"}
    for item in items.all_items().values():
        assert xc.check_item(item.id) == item.id and item.possible > 0
    missing = [(lab, t) for lab, ts in progress.LAB_TASKS.items() for t in ts if items.item_for(lab, t) is None]
    assert missing == []                  # Lab 04's task too (its settings, .json: tests/serve/whole/test_serve_task_handin.py)
    with pytest.raises(items.UnknownItem, match="did you mean 08-mi300x-package/xcd-remap"):
        items.get("08-mi300x-package/xcd-remapp")


# --- the local record is a preview ---------------------------------------------------------------------------

def test_a_forged_record_shows_as_an_unverified_preview_never_as_a_grade(tmp_path, monkeypatch, capsys):
    forged = {lab: {t: {"earned": p, "earnable": p, "possible": p, "backend": "rocm", "when": "2026-12-01T00:00:00"}
                    for t, p in tasks.items()} for lab, tasks in progress.LAB_TASKS.items()}
    forged["exercises"] = {"vector-add": {"earned": 300, "earnable": 311, "possible": 311, "backend": "rocm"}}
    path = tmp_path / "progress.json"
    path.write_text(json.dumps(forged))
    monkeypatch.setattr(progress, "progress_file", lambda: path)
    summ = progress.summary()
    t = summ["total"]
    assert t["instructor"] == 0 and t["instructor_graded"] == 0          # nothing instructor-graded
    assert t["earned"] == sum(sum(ts.values()) for ts in progress.LAB_TASKS.values())   # only as a preview
    vec = next(r for r in summ["exercises"] if r["task"] == "vector-add")
    assert vec["earned"] == 0 and "not counted" in vec["note"]          # 300 of 311: not this course's points
    rows = progress.table_rows(summ)
    assert all("unverified" in r[3] for r in rows if r[3]) and any("rocm" in r[3] for r in rows)
    assert "graded on" not in " ".join(progress.HEADER) and "instructor-graded" in progress.HEADER
    rc, out = _cli(capsys, "progress")
    assert rc == 0 and "(preview)" in out and "record's claim, unverified" in out and "self-study" in out


@pytest.mark.parametrize("kind", ["folder", "fifo", "symlink", "list", "bad-entry", "out-of-order", "not-json"])
def test_a_record_that_is_not_one_gets_one_message_and_is_left_as_it_is(tmp_path, monkeypatch, capsys, kind):
    path = tmp_path / "progress.json"
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        path.symlink_to(target)
    else:
        path.write_text({"list": "[1, 2]", "bad-entry": '{"03-pytorch-on-rocm": {"x": 5}}', "not-json": "{oops",
                         "out-of-order": '{"a": {"b": {"earned": 9, "earnable": 1, "possible": 2, "backend": ""}}}'}
                        [kind])
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.setattr(progress, "progress_file", lambda: path)
    with pytest.raises(progress.RecordProblem, match="not a rocmlab progress record") as exc:
        progress.read_record(path)
    assert f"mv {path}" in str(exc.value)
    with pytest.warns(UserWarning, match="not recorded"):
        assert progress.record("03-pytorch-on-rocm", "fix-the-slow-step", earned=1, earnable=1, possible=10,
                               backend="cpu", path=path) is False
    rc, out = _cli(capsys, "progress")
    assert rc == 2 and "not a rocmlab progress record" in out and "Traceback" not in out
    assert sorted(p.name for p in tmp_path.iterdir()) == before                # nothing renamed or added
    assert target.read_text() == "{}"                                          # a link is never followed
    # control: a real record is read and kept
    good = tmp_path / "good.json"
    assert progress.record("03-pytorch-on-rocm", "fix-the-slow-step", earned=4, earnable=6, possible=10,
                           backend="cpu", path=good)
    assert progress.read_record(good)["03-pytorch-on-rocm"]["fix-the-slow-step"]["earned"] == 4


def test_the_test_session_never_uses_the_users_record():
    real = os.path.join(os.path.expanduser("~"), ".cache", "rocmlab", "progress.json")
    assert os.environ["ROCMLAB_PROGRESS"] != real and os.environ["ROCMLAB_HOME"] != os.path.dirname(real)
    assert os.environ["ROCMLAB_PROGRESS"].startswith(os.environ["ROCMLAB_HOME"])


# --- hand in and re-grade, one item of each kind, through the exchange -------------------------------------

def test_hand_in_and_regrade_one_item_of_each_kind_and_progress_before_and_after(exch, tmp_path, capsys):
    from rocmlab import grader

    files = {"vector-add": ("vector_add.hip", grader.load("vector-add").solution),
             CODEC: ("codec.py", CODEC_RIGHT),
             PUZZLE: ("add.py", PUZZLE_RIGHT),
             QUESTION: ("uaf.json", json.dumps({"line": lab11.faulting_line("use_after_free")}))}
    for item, (name, text) in files.items():
        (tmp_path / name).write_text(text)
        rc, out = _cli(capsys, "handin", item, str(tmp_path / name))
        assert rc == 0 and "handed in" in out, out
    rc, out = _cli(capsys, "handin", CODEC, str(tmp_path / "uaf.json"))             # the wrong kind of file
    assert rc == 2 and "takes a .py file" in out
    progress.record("03-pytorch-on-rocm", "fix-the-slow-step", earned=10, earnable=10, possible=10, backend="rocm")
    before = progress.summary()
    assert before["total"]["instructor_graded"] == 0
    ids = list(files)
    counts = xc.grade_exchange(exch, ids, workers=1, progress=False)
    assert counts["graded"] == 4 and counts["returned"] == 4, counts
    after = progress.summary()
    got = {r["item"]: r["instructor"] for lab in after["labs"] for r in lab["tasks"]}
    got.update({r["item"]: r["instructor"] for r in after["exercises"]})
    for item in ids:
        assert got[item] == items.get(item).possible, (item, got[item], xc.feedback(item).text)
    assert got["03-pytorch-on-rocm/fix-the-slow-step"] is None        # self-checked only: never instructor-graded
    rc, out = _cli(capsys, "progress")
    assert rc == 0 and "(4 graded)" in out
    fb = xc.feedback(PUZZLE)
    assert "sandboxed re-grade" in fb.text and "Triton CPU interpreter" in fb.text


# --- the attacks, each with its control ------------------------------------------------------------------

def test_patched_verdict_fools_only_the_preview_never_the_regrade():
    from rocmlab.course import tasks as T
    from rocmlab.course.labs.lab05_quickreduce_tuning import task as codec_choice

    saved = (T.verdict, T.failed)
    try:                      # the preview runs in the learner's process: the patch applies there (a preview)
        ns: dict = {}
        exec(CODEC_PATCH, ns)
        preview = codec_choice.grade(ns["choose"], record=False)
    finally:
        T.verdict, T.failed = saved
    assert preview.full_marks                      # the preview is fooled: that is why it is only a preview
    regrade = items.grade(CODEC, CODEC_PATCH)
    assert regrade.earned == 0 and "No module named 'rocmlab.course'" in regrade.to_text()
    control = items.grade(CODEC, CODEC_RIGHT)
    assert control.full_marks and control.earned == 10, control.to_text()


def test_frame_peek_finds_no_expected_answer_in_the_preview_nor_the_regrade():
    from rocmlab.course.labs.lab03_pytorch_on_rocm import task as slow_step

    peek = textwrap.dedent("""
        import sys
        import torch

        def fast_scores(x, w, b):
            f = sys._getframe(1)
            while f is not None:
                for name in ("want_s", "expected", "ref"):
                    if name in f.f_locals:
                        s = f.f_locals[name]
                        return s.to(x.dtype), s.sum()
                f = f.f_back
            return torch.zeros(x.shape[0], w.shape[1]), torch.zeros(())
    """)
    ns: dict = {}
    exec(peek, ns)
    preview = slow_step.grade(ns["fast_scores"], record=False)
    same = next(c for c in preview.checks if c.id == "same-result")
    assert same.status == "failed"                       # the expected answer is not in any frame yet
    regrade = items.grade("03-pytorch-on-rocm/fix-the-slow-step", peek)
    assert next(c for c in regrade.checks if c.id == "same-result").status == "failed"
    right = textwrap.dedent("""
        import torch

        def fast_scores(x, w, b):
            h = torch.relu(x @ w + b)
            return h / (h.sum(dim=1, keepdim=True) + 1.0), h.sum()
    """)
    ns = {}
    exec(right, ns)
    control = slow_step.grade(ns["fast_scores"], record=False)     # control: an honest fix passes
    assert next(c for c in control.checks if c.id == "same-result").status == "passed"


def test_imported_reference_and_torch_for_triton_fail_and_an_own_kernel_passes():
    torch_kernel = {}
    exec(PUZZLE_TORCH, torch_kernel)
    preview = P.check("add-constant", torch_kernel["add_kernel"])
    assert not preview.passed and "not a Triton kernel" in preview.message
    assert P.check("add-constant", P.reference_kernel("add-constant")).passed       # control in the preview
    seed = random.randrange(1 << 30)
    # an imported reference is no @triton.jit function of the file: the grader's module for the sandbox holds none
    for attack, why in ((PUZZLE_IMPORTED, "add_kernel is not a Triton kernel in your answer file"),
                        (PUZZLE_TORCH, "not a Triton kernel")):
        rep = items.grade(PUZZLE, attack, seed=seed)
        assert rep.earned == 0 and why in rep.to_text(), rep.to_text()
    own = items.grade(PUZZLE, PUZZLE_RIGHT, seed=seed)
    assert own.earned == 1 and own.full_marks, own.to_text()


def test_the_sandbox_holds_the_toolkit_but_no_checker_or_reference():
    probe = textwrap.dedent("""
        import importlib

        def f(name):
            try:
                importlib.import_module(name)
                return "yes"
            except ImportError:
                return "no"
    """)
    from rocmlab.grader.pyanswer import Answer

    names = ["rocmlab.comm.torch_codec", "rocmlab.hip.occupancy", "rocmlab.course.labs.lab06_triton_on_amd.kernels",
             "rocmlab.course.labs.lab08_mi300x_package.kernels", "rocmlab.course.tasks", "rocmlab.grader", "rocmlab.exercises"]
    got = dict(zip(names, (v for v, _ in Answer(probe, "f").map([(n,) for n in names])), strict=True))
    assert got == {n: "yes" if n.startswith(("rocmlab.comm", "rocmlab.hip")) else "no" for n in names}


# --- lab fixes -------------------------------------------------------------------------------------------

def test_lab11_name_the_line_names_the_right_line_with_the_hint_for_that_fault():
    uaf = lab11.faulting_line("use_after_free")
    assert "hipLaunchKernelGGL(scale" in lab11.fault_source("use_after_free").splitlines()[uaf - 1]
    assert f"{uaf:3d}  " in lab11.numbered_source("use_after_free")
    right = lab11.check_faulting_line("use_after_free", uaf, record=False)
    assert right.ok and "launch of scale" in right.message and "1/1 point" in right._repr_html_()
    assert "is the bad access" not in right.message
    wrong = lab11.check_faulting_line("use_after_free", uaf - 3, record=False)
    assert not wrong.ok and "hipFree" in wrong.message and "guard" not in wrong.message
    oob_wrong = lab11.check_faulting_line("oob_write", lab11.faulting_line("oob_write") + 1, record=False)
    assert not oob_wrong.ok and "guard" in oob_wrong.message                   # each fault its own hint
    assert lab11.check_faulting_line("oob_write", None, record=False).ok is None
    assert lab11.check_faulting_line("oob_write", True, record=False).ok is False


def test_my_work_fifo_and_huge_files_are_refused_before_reading(tmp_path):
    from rocmlab.course.my_work import MAX_WORK_BYTES, read_my_work

    fifo = tmp_path / "k.hip"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_my_work(fifo)                                  # would block a plain read forever
    big = tmp_path / "big.hip"
    with open(big, "wb") as f:
        f.truncate(256 << 20)                               # sparse: costs nothing on disk
    with pytest.raises(OSError, match="byte limit"):
        read_my_work(big)
    ok = tmp_path / "ok.hip"                                # control
    ok.write_text("__global__ void k() {}\n" * (MAX_WORK_BYTES // 100))
    assert read_my_work(ok).startswith("__global__")


def test_progress_cli_with_a_bad_record_exits_2_in_a_fresh_process(tmp_path):
    path = tmp_path / "progress.json"
    path.mkdir()
    env = dict(os.environ, ROCMLAB_PROGRESS=str(path))
    out = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress"], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 2 and "is a folder" in out.stderr and "Traceback" not in out.stderr
    assert path.is_dir() and not list(tmp_path.glob("*.corrupt.json"))


def test_exercise01_mechanical_port_is_not_full_marks_before_the_learner_adds_error_checks(tmp_path):
    from rocmlab import grader
    from rocmlab.course.exercise import Workbench

    bench = Workbench("vector-add", folder=tmp_path / "va")
    port = bench.start().read_text()                         # what the notebook writes before the learner acts
    before = grader.check("vector-add", port, only=["static"])
    assert before.check("errors-checked").status == "failed" and not before.full_marks
    assert before.check("no-cuda-left").status == "passed"              # the port itself is right
    control = grader.check("vector-add", bench.exercise.solution, only=["static"])
    assert control.full_marks                                            # control: the learner's checks pass
