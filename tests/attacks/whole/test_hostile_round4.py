"""Issue 56, hostile learners round 4 (part A): the grader's record out of the learner's reach on every path, "not
scored" only for what the learner cannot cause, a wall-clock bound and a verdict for every grade, and caps on what a
grade can take of the host. Each attack has its control: the honest answer scores, or the same thing without the
defence shows what the attack would have got.

- the rlimits fallback (no user namespaces, not root: learner code runs as the grading user) grades nothing of
  record: ``rocmlab grade`` and ``rocmlab grade --exchange`` refuse and say why; its isolation text says PREVIEW ONLY;
- as root without bubblewrap (the uid drop) a Python item grades, its interpreter under a 0700 folder included;
- a wrong program with 120 busy processes of its own is its own time-out, never "the machine was too busy";
- a JSON hand-in nested 200,000 deep is the learner's refusal with feedback, not a grader error;
- Lab 04's ``{"request_rate": 1e-9}`` ends with a verdict in seconds (the grade has a wall-clock bound);
- a Python answer's 48 MB JSON output is refused by its size, before it is parsed;
- one grade's compiles run at most two at once, each with half the compile budget;
- ``ROCMLAB_PROGRESS=/proc/self/mem rocmlab progress`` is one clear message.
(/dev/shm and the hand-in folder per learner: tests/hub/test_hardening.py, on a real hub.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rocmlab import doctor, sandbox, settings
from rocmlab.grader import batch, checks, items
from rocmlab.grader.pyanswer import Answer, AnswerError, MAX_JSON_OUTPUT_BYTES
from rocmlab.hip import build
from rocmlab.hip import compile as driver
from rocmlab.machine.detect import current
from rocmlab.workshop import exchange as xc

PY = "/usr/bin/python3"          # the system python: visible inside the sandbox
BWRAP = sandbox.isolation().level == sandbox.BWRAP
needs_bwrap = pytest.mark.skipif(not BWRAP, reason=f"bubblewrap does not run here: {sandbox.isolation().reason}")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="as root: the fallback drops to a uid of its own")

QUESTION = "11-counters-and-faults/use_after_free-line"


def _right_question_answer() -> str:
    from rocmlab.course.labs.lab11_counters_and_faults import lab as lab11

    return json.dumps({"line": lab11.faulting_line("use_after_free")})


def _submissions(tmp_path: Path, text: str, learner: str = "ada") -> Path:
    subs = tmp_path / "subs"
    (subs / learner).mkdir(parents=True)
    (subs / learner / f"{items.flat(QUESTION)}.json").write_text(text)
    return subs


# --- 1. the fallback without a uid of its own grades nothing of record ------------------------------------------

def test_the_rlimits_fallback_grades_nothing_of_record_and_says_so(tmp_path):
    right = _right_question_answer()
    subs = _submissions(tmp_path, right)
    # the attack's ground: under the rlimits fallback a run is this user's own and reads the grader's 0600 seed file
    seed_file = tmp_path / "grading-seed"
    seed_file.write_text("424242\n")
    os.chmod(seed_file, 0o600)
    with sandbox.use(sandbox.RLIMITS):
        leak = sandbox.run(["/bin/cat", str(seed_file)], limits=sandbox.Limits(wall_s=20))
        assert "424242" in leak.stdout, leak            # what a Lab 07 answer printed in its own feedback
        iso = sandbox.isolation()
        assert sandbox.NOT_OF_RECORD in iso.description and sandbox.of_record()
        check = doctor.check_isolation(current(), None)
        assert check.status == "warn" and sandbox.NOT_OF_RECORD in check.message, check
        with pytest.raises(batch.BatchError, match="nothing graded: PREVIEW ONLY") as refused:
            batch.grade_folder(subs, [QUESTION], tmp_path / "out", progress=False)
        assert "grading seed" in str(refused.value) and "bubblewrap" in str(refused.value)
        assert not (tmp_path / "out" / "results").exists()
        ex = xc.prepare(tmp_path / "exchange")
        with pytest.raises(xc.ExchangeError, match="nothing graded"):
            xc.grade_exchange(ex, [QUESTION], progress=False)
        assert not (ex / "grades" / "submissions").exists()          # not even collected
    # control: where each run gets a uid of its own (bubblewrap, or root's uid drop) the same hand-in is graded
    assert sandbox.of_record() == "", sandbox.isolation()
    counts = batch.grade_folder(subs, [QUESTION], tmp_path / "out", progress=False)
    result = json.loads((tmp_path / "out" / "results" / f"ada__{items.flat(QUESTION)}.json").read_text())
    assert counts["graded"] == 1 and result["earned"] == result["possible"] > 0, result
    assert (tmp_path / "out").stat().st_mode & 0o077 == 0           # results (with seeds) closed to other uids


@needs_bwrap
def test_under_bubblewrap_the_run_cannot_read_the_seed_file(tmp_path):
    """The control of the leak above: the same read in the sandbox of record finds no such file."""
    seed_file = tmp_path / "grading-seed"
    seed_file.write_text("424242\n")
    os.chmod(seed_file, 0o600)
    done = sandbox.run(["/bin/cat", str(seed_file)], limits=sandbox.Limits(wall_s=20))
    assert "424242" not in done.stdout and done.returncode != 0, done


@needs_root
def test_as_root_without_bubblewrap_a_python_item_grades(monkeypatch):
    """Before: "more than 50000 entries" under the interpreter's folder (a pyenv Python under the 0700 /root, its
    site-packages shown file by file). Now its interpreter, stdlib and the environment's packages are shown."""
    from tests.helpers.codec_answers import CODEC, CODEC_PATCH, CODEC_RIGHT

    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    assert sandbox.isolation().level == sandbox.SETPRIV and sandbox.of_record() == ""
    right = items.grade(CODEC, CODEC_RIGHT)
    assert right.status == "graded" and right.full_marks and right.earned == right.possible, right.to_text()
    assert "setpriv" in right.isolation
    # control: the graded run is the learner's own answer, judged: the patched-verdict answer is not full marks
    wrong = items.grade(CODEC, CODEC_PATCH)
    assert wrong.status == "graded" and wrong.earned < right.earned, wrong.to_text()


@pytest.fixture
def as_an_ordinary_user_with_proot(monkeypatch):
    """The fallback an ordinary user gets without user namespaces: rlimits, the ROCm root entered with PRoot."""
    import shutil

    from rocmlab.hip.toolchain import discover_offline

    found = discover_offline()
    if shutil.which("proot") is None or found is None:
        pytest.skip("needs PRoot (apt-get install proot) and the offline ROCm root")
    monkeypatch.setattr(sandbox.uid_drop, "as_root", lambda: False)
    monkeypatch.setenv("ROCMLAB_SANDBOX", "no-bwrap")
    for cached in (sandbox.detection._root_entry, sandbox.detection._detect):
        cached.cache_clear()
    yield found.root
    for cached in (sandbox.detection._root_entry, sandbox.detection._detect):
        cached.cache_clear()


def test_proots_messages_are_told_apart_by_channel_not_by_text(as_an_ordinary_user_with_proot, tmp_path):
    """Before: a wrong program printing "proot error: execve(...)" on its stderr was taken for PRoot failing to start
    it: a grader error, never scored. Now PRoot's own stderr is a channel of its own (the program's stderr is moved to
    a pipe before it starts): the program's text is the program's failure; PRoot's own report of a signal still
    gives the program's status. The same fallback says it grades previews only."""
    root = as_an_ordinary_user_with_proot
    assert sandbox.isolation().root_entry == sandbox.PROOT and sandbox.NOT_OF_RECORD in sandbox.of_record()
    fake = sandbox.run(["/bin/sh", "-c", "echo 'proot error: execve(\"/x\"): No such file or directory' >&2; exit 1"],
                       root=root, scratch=str(tmp_path), limits=sandbox.Limits(wall_s=30))
    assert fake.returncode == 1 and "proot error: execve" in fake.stderr and fake.tool_stderr == "", fake
    assert "exited with status 1" in fake.explain()
    # controls: PRoot's own channel still says how the program ended, and a program not in the root is not found
    segv = sandbox.run(["/bin/sh", "-c", "kill -SEGV $$"], root=root, scratch=str(tmp_path),
                       limits=sandbox.Limits(wall_s=30))
    assert segv.returncode == -11 and "terminated with signal 11" in segv.tool_stderr and segv.stderr == "", segv
    with pytest.raises(FileNotFoundError, match="not found"):
        sandbox.run(["/bin/no-such-program"], root=root, scratch=str(tmp_path), limits=sandbox.Limits(wall_s=30))


# --- 2. "not scored" only for what the learner cannot cause --------------------------------------------------------

SPINNERS = "import os\nfor _ in range({n}):\n    if os.fork() == 0:\n        while True: pass\nwhile True: pass\n"


def test_busy_processes_of_the_runs_own_are_its_time_out_not_a_busy_machine():
    """A wrong program (it never ends) that forks 120 busy loops: its threads wait for a CPU far longer than they
    run, which the per-thread rule alone reads as a starved run (the control). Counted over processes outside the
    run, the CPUs were its own: a time-out, scored. Where other work saturates this machine during the run (the
    outside really took the CPUs: then it IS starved), the run is tried again, up to three times."""
    tried = []
    for _ in range(3):
        done = sandbox.run([PY, "-c", SPINNERS.format(n=120)], limits=sandbox.Limits(wall_s=3, processes=200))
        assert done.timed_out and done.cpu_run_s is not None and done.cpu_outside_s is not None, done
        left = done.cpu_capacity_s - done.cpu_outside_s
        tried.append(f"outside {done.cpu_outside_s:.1f} of {done.cpu_capacity_s:.1f} CPU-s")
        if left > done.duration_s / (1 + settings.SANDBOX_STARVED_WAIT_RATIO):
            break
    else:
        pytest.skip(f"other work saturated this machine in all three tries ({'; '.join(tried)}): no run here "
                    "had CPUs of its own to show the difference")
    # the control: the per-thread rule without the outside's account calls it starved
    assert sandbox.starved(True, done.cpu_run_s, done.cpu_wait_s, done.duration_s), done
    assert not done.starved, (done, tried)
    status, msg = checks._verdict({"done": done})
    assert status == "failed" and "time limit was reached" in msg and sandbox.TOO_BUSY not in msg


@pytest.mark.parametrize("outside, want", [(5.6, True), (2.0, False), (0.0, False)])
def test_the_outside_rule(outside, want):
    """2 CPUs for 3 s (6 CPU-s), a run that waited 10x what it ran: starved only when the outside left it at most a
    third of one CPU for the 3 s (1 CPU-s)."""
    assert sandbox.starved(True, 0.3, 3.0, 3.0, outside, 6.0) is want
    assert sandbox.starved(True, 0.3, 3.0, 3.0) is True          # without the account: the per-thread rule


def test_a_json_hand_in_nested_200000_deep_is_the_learners_refusal_with_feedback(tmp_path):
    deep = "[" * 200_000 + "]" * 200_000
    subs = _submissions(tmp_path, deep)
    counts = batch.grade_folder(subs, [QUESTION], tmp_path / "out", progress=False)
    flat = items.flat(QUESTION)
    result = json.loads((tmp_path / "out" / "results" / f"ada__{flat}.json").read_text())
    feedback = (tmp_path / "out" / "feedback" / "ada" / f"{flat}.txt").read_text()
    assert result["status"] == "graded" and result["earned"] == 0 and not result.get("error"), result
    assert "nested more than" in feedback and counts.get("not_graded", 0) == 0, feedback
    # graded once: a rerun does not grade it again (a status error would be)
    assert batch.grade_folder(subs, [QUESTION], tmp_path / "out", progress=False)["graded"] == 0
    # control: Python's parser on the same text is the RecursionError the grade used to end with
    with pytest.raises(RecursionError):
        json.loads(deep)


def test_lab04_a_rate_that_never_sends_its_requests_ends_with_a_verdict():
    from rocmlab.course.labs.lab04_vllm_on_rocm import task
    from rocmlab.serve.fakeserver import FakeServer

    server = FakeServer(gap=0.001, ttft=0.01)
    try:
        target = task.Target(8, 16, 12, 1.5, 4.0, seed=7)
        t0 = time.monotonic()
        slow = task.grade(target, {"request_rate": 1e-9}, server.url, record=False)
        took = time.monotonic() - t0
        assert took < 60 and slow.status == "graded", (took, slow.to_text())
        assert slow.check("throughput").status == "failed" and "8e+09 s" in slow.check("throughput").message
        assert slow.earned == 2, slow.to_text()          # valid settings; the throughput provably missed
        # control: settings that meet the target score every point on the same server
        right = task.grade(target, {"max_concurrency": 4}, server.url, record=False)
        assert right.full_marks and right.earned == 10, right.to_text()
    finally:
        server.close()


# --- 3. caps -------------------------------------------------------------------------------------------------------

BIG_OUTPUT = textwrap.dedent("""
    import atexit, sys

    def f(x):
        return x

    def _rewrite():          # at exit, over the grader's output file: 48 MB of JSON
        with open(sys.argv[2], "w") as fh:
            fh.write("[" + ",".join(["1"] * (24 << 20)) + "]")

    atexit.register(_rewrite)
""")


def test_a_python_answers_48_mb_json_output_is_refused_before_it_is_parsed(monkeypatch):
    parsed = []
    real = json.loads
    monkeypatch.setattr(json, "loads", lambda text, *a, **k: parsed.append(len(text)) or real(text, *a, **k))
    with pytest.raises(AnswerError, match=r"50\.\d MB of JSON, over the 8 MiB"):
        Answer(BIG_OUTPUT, "f").map([(3,)])
    assert parsed == [], "the grader parsed the output before checking its size"
    assert (24 << 20) * 2 > MAX_JSON_OUTPUT_BYTES
    # control: the same answer without the rewrite gives its value back
    assert Answer(BIG_OUTPUT.replace("atexit.register(_rewrite)", ""), "f").map([(3,)]) == [(3, "")]


def test_one_grades_compiles_run_two_at_once_each_with_half_the_budget(monkeypatch):
    """Four compiles asked for at once (a check build's halves, a simulator build, a PCH): two run, each with half of
    settings.COMPILE_MEMORY_BYTES, so together never more than the budget; a caller asking for more gets the share."""
    seen, running, most = [], [0], [0]
    lock = threading.Lock()

    def fake_run(cmd, *, limits, **kw):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            seen.append(limits.memory_bytes)
        time.sleep(0.3)
        with lock:
            running[0] -= 1
        return "done"

    monkeypatch.setattr(sandbox, "run", fake_run)
    tc = driver.find_toolchain("offline") or driver.find_toolchain("rocm")
    if tc is None:
        pytest.skip("no AMD toolchain here")
    asks = [None, None, settings.COMPILE_MEMORY_BYTES, 64 << 20]
    threads = [threading.Thread(target=driver.run, args=(tc, ["true"]), kwargs={"cwd": "/tmp", "memory_bytes": m})
               for m in asks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    half = settings.COMPILE_MEMORY_BYTES // 2
    assert most[0] == driver.COMPILE_SLOTS == 2
    assert sorted(seen) == sorted([half, half, half, 64 << 20])
    assert most[0] * max(seen) <= settings.COMPILE_MEMORY_BYTES


def test_a_huge_initializer_is_refused_within_one_budget(monkeypatch):
    """A 2^21-element initializer (built by macros: the hand-in is 300 bytes) under a 512 MiB compile budget: the
    check build's two halves hold at most 512 MiB together and the build fails. Control: with a 2 GiB budget the
    same file builds, its two halves taking more than 512 MiB together."""
    tc = driver.find_toolchain("offline")
    if tc is None:
        pytest.skip("no offline ROCm root (bash scripts/setup/20-rocm-root.sh)")
    src = ("#include <hip/hip_runtime.h>\n#define L0 1,2,3,4,5,6,7,8\n"
           + "".join(f"#define L{i} " + ",".join([f"L{i - 1}"] * 8) + "\n" for i in range(1, 7))
           + "__device__ int big[] = { L6 };\n__global__ void k(int* p) { p[0] = big[threadIdx.x]; }\n"
           + "int main() { return 0; }\n")
    peaks = []
    real = driver.run

    def recording(*a, **k):
        done = real(*a, **k)
        peaks.append(done.memory_peak_bytes)
        return done

    monkeypatch.setattr(driver, "run", recording)
    monkeypatch.setattr(settings, "COMPILE_MEMORY_BYTES", 512 << 20)
    small = build.compile(src, use_cache=False)
    assert not small.ok and max(peaks) <= 256 << 20, (small.summary()[-300:], peaks)
    peaks.clear()
    monkeypatch.setattr(settings, "COMPILE_MEMORY_BYTES", 2 << 30)
    big = build.compile(src, use_cache=False)
    assert big.ok, big.summary()[-300:]
    assert sum(sorted(peaks)[-2:]) > 512 << 20, peaks       # the two halves at once: more than the small budget


# --- 4. smaller ------------------------------------------------------------------------------------------------------

def test_progress_on_proc_self_mem_is_one_clear_message(tmp_path):
    env = {**os.environ, "ROCMLAB_PROGRESS": "/proc/self/mem"}
    done = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert "/proc/self/mem cannot be read" in done.stderr and "ROCMLAB_PROGRESS" in done.stderr, done.stderr
    # control: a record that does not exist yet is an empty table
    env["ROCMLAB_PROGRESS"] = str(tmp_path / "progress.json")
    ok = subprocess.run([sys.executable, "-m", "rocmlab.cli", "progress"], env=env, capture_output=True, text=True,
                        timeout=120)
    assert ok.returncode == 0 and "rocmlab progress" in ok.stdout, ok.stderr[-2000:]
